//! The Endpoint Picker protocol (gateway-api-inference-extension proposal 004: Envoy's ext_proc
//! v3 `ExternalProcessor/Process` stream over gRPC) as bytes, with no I/O:
//!
//! - the request side: gRPC length-prefixed frames of `ProcessingRequest` (the header lines, then
//!   the body in messages of at most [`MAX_MESSAGE`] bytes, the last one with `end_of_stream`);
//! - the response side: a [`Decoder`] fed the response body in pieces of any size, then the
//!   stream's `grpc-status`/`grpc-message`, giving one [`Outcome`].
//!
//! Bounded by construction: the decoder holds at most one frame (at most its limit plus the
//! 5-byte prefix, [`MAX_MESSAGE`]: the largest message it must keep whole, a header mutation
//! or an `ImmediateResponse`) and allocates only for bytes it was given, never for a length a
//! peer claims; each byte is copied at most once and decoded at most once
//! ([`Decoder::work`]); a stream longer than its budget ([`answer_budget`]) is not read on.

pub mod destination;
pub mod endpoints;
pub mod msg;
pub mod verdict;

use msg::{HeaderMutation, HeaderValue, Kind, ProcessingResponse, Response};
use prost::Message;

/// gRPC's method path of the stream.
pub const GRPC_PATH: &str = "/envoy.service.ext_proc.v3.ExternalProcessor/Process";
/// The largest message sent, and the default limit of a received one: Go gRPC's default
/// receive limit (4 MiB), which the EPPs keep.
pub const MAX_MESSAGE: usize = 4 << 20;
/// The largest body chunk in one `request_body` message: its message then stays within
/// [`MAX_MESSAGE`] (tags, two length varints and `end_of_stream` take at most 14 bytes).
pub const MAX_BODY_CHUNK: usize = MAX_MESSAGE - 16;
/// The gRPC frame prefix: a compressed flag and a big-endian u32 length.
pub const FRAME_PREFIX: usize = 5;
/// The header mutation, and the dynamic metadata key, that name the destination.
pub const DESTINATION: &str = "x-gateway-destination-endpoint";
/// The dynamic metadata namespace of [`DESTINATION`].
pub const METADATA_NAMESPACE: &str = "envoy.lb";

/// The longest answer read for a request body of `body` bytes: one message kept whole
/// ([`MAX_MESSAGE`] and its prefix) plus twice the body (an EPP echoes the body back, GIE's in
/// chunks of 62,000 bytes; a mutation may lengthen it). An EPP streaming beyond it is broken:
/// the call ends there with no endpoint.
pub fn answer_budget(body: usize) -> usize {
    (MAX_MESSAGE + FRAME_PREFIX).saturating_add(body.saturating_mul(2))
}

/// A request message that would be over [`MAX_MESSAGE`] (header lines only: bodies are split).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge(pub usize);

impl core::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let n = self.0;
        write!(f, "the request's header lines make a message of {n} bytes, over {MAX_MESSAGE}")
    }
}

/// Appends the `request_headers` frame: each (name, value) as a `HeaderValue` with the name
/// lowercased (ASCII; bytes that are not UTF-8 replaced, as a protobuf string must be UTF-8) and
/// the value as `raw_value`, as Envoy sends them. The caller puts the pseudo-headers Envoy sends
/// (`:authority`, `:method`, `:path`, `:scheme`) in the list. `end_of_stream`: no body follows.
/// Written straight into `out` (the bytes prost writes for the message, no allocation per
/// line unless a name is not ASCII).
pub fn encode_headers<'a>(
    headers: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    end_of_stream: bool,
    out: &mut Vec<u8>,
) -> Result<(), TooLarge> {
    // A name is written lowercased: as it is when ASCII, else its lossy UTF-8 made here.
    let lines: Vec<(std::borrow::Cow<'a, [u8]>, &'a [u8])> = headers
        .into_iter()
        .map(|(name, value)| {
            let name = if name.is_ascii() {
                std::borrow::Cow::Borrowed(name)
            } else {
                let lower = name.to_ascii_lowercase();
                std::borrow::Cow::Owned(String::from_utf8_lossy(&lower).into_owned().into_bytes())
            };
            (name, value)
        })
        .collect();
    // proto3: an empty string or bytes field is not written; a message field always is.
    let opt = |len: usize| if len == 0 { 0 } else { field_len(len) };
    let entry = |(k, v): &(std::borrow::Cow<'a, [u8]>, &[u8])| opt(k.len()) + opt(v.len());
    let map_len: usize = lines.iter().map(|l| field_len(entry(l))).sum();
    let headers_len = field_len(map_len) + if end_of_stream { 2 } else { 0 };
    let len = field_len(headers_len);
    if len > MAX_MESSAGE {
        return Err(TooLarge(len));
    }
    out.reserve(FRAME_PREFIX + len);
    out.push(0);
    // len <= MAX_MESSAGE < u32::MAX
    out.extend_from_slice(&(len as u32).to_be_bytes());
    // ProcessingRequest.request_headers (2) { HttpHeaders.headers (1) { HeaderMap.headers (1)...
    put_len(out, 0x12, headers_len);
    put_len(out, 0x0a, map_len);
    for line in &lines {
        put_len(out, 0x0a, entry(line));
        let (name, value) = line;
        if !name.is_empty() {
            // HeaderValue.key (1), lowercased
            put_len(out, 0x0a, name.len());
            out.extend(name.iter().map(u8::to_ascii_lowercase));
        }
        if !value.is_empty() {
            // HeaderValue.raw_value (3)
            put_len(out, 0x1a, value.len());
            out.extend_from_slice(value);
        }
    }
    if end_of_stream {
        // HttpHeaders.end_of_stream (3) = true
        out.extend_from_slice(&[0x18, 0x01]);
    }
    Ok(())
}

/// The bytes of a length-delimited field of `len` bytes: tag, length, payload.
fn field_len(len: usize) -> usize {
    1 + varint_len(len) + len
}

/// Writes a length-delimited field's tag and length.
fn put_len(out: &mut Vec<u8>, tag: u8, mut len: usize) {
    out.push(tag);
    while len >= 0x80 {
        out.push((len as u8) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
}

/// Appends `request_body` frames for `body`, split into chunks of at most [`MAX_BODY_CHUNK`];
/// the last carries `end_of_stream` when asked. An empty `body` gives one empty message (the
/// end of a body whose last piece was already sent).
pub fn encode_body(body: &[u8], end_of_stream: bool, out: &mut Vec<u8>) {
    let mut chunks = body.chunks(MAX_BODY_CHUNK).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(BodyPrefix::new(0, end_of_stream).as_bytes());
    }
    while let Some(chunk) = chunks.next() {
        let last = end_of_stream && chunks.peek().is_none();
        out.extend_from_slice(BodyPrefix::new(chunk.len(), last).as_bytes());
        out.extend_from_slice(chunk);
    }
}

/// The bytes before a body chunk that make `prefix ++ chunk` one whole frame of
/// `ProcessingRequest{request_body: HttpBody{end_of_stream, body: chunk}}` (the flag's field
/// first, so nothing follows the chunk): NGINX can send a chunk where it lies (a buffer, a
/// range of the body's temp file) behind 5 to 20 bytes of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyPrefix {
    bytes: [u8; 20],
    len: usize,
}

impl BodyPrefix {
    /// `chunk_len` is clamped to [`MAX_BODY_CHUNK`]: a caller splits longer bodies.
    pub fn new(chunk_len: usize, end_of_stream: bool) -> Self {
        let chunk_len = chunk_len.min(MAX_BODY_CHUNK);
        let flag: &[u8] = if end_of_stream { &[0x10, 0x01] } else { &[] };
        // HttpBody: [end_of_stream] then field 1 (body) as tag 0x0a, length, bytes.
        let body_len = flag.len() + 1 + varint_len(chunk_len) + chunk_len;
        // ProcessingRequest: field 4 (request_body) as tag 0x22, length, HttpBody.
        let message_len = 1 + varint_len(body_len) + body_len;
        let mut p = BodyPrefix { bytes: [0; 20], len: 0 };
        p.push(&[0]);
        // message_len <= MAX_MESSAGE < u32::MAX
        p.push(&(message_len as u32).to_be_bytes());
        p.push(&[0x22]);
        p.varint(body_len);
        p.push(flag);
        p.push(&[0x0a]);
        p.varint(chunk_len);
        p
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn push(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn varint(&mut self, mut v: usize) {
        while v >= 0x80 {
            self.push(&[(v as u8) | 0x80]);
            v >>= 7;
        }
        self.push(&[v as u8]);
    }
}

/// One piece of a body's `request_body` messages, in the order sent: a frame's prefix (bytes
/// of its own), or a range of one of the body's segments, sent where it lies (a buffer, a
/// range of a temp file), never copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece {
    Prefix(BodyPrefix),
    Slice { segment: usize, offset: usize, len: usize },
}

/// The pieces that send a body made of `segments` (their lengths, in order) as `request_body`
/// messages of at most [`MAX_BODY_CHUNK`] bytes of body each, the last with `end_of_stream`:
/// each message is its prefix, then the slices that make up its chunk. A body of 0 bytes gives
/// none (the headers message carries `end_of_stream`). Bounded: at most `segments.len()` plus
/// twice the number of messages pieces.
pub fn body_pieces(segments: &[usize]) -> Vec<Piece> {
    body_pieces_in(segments, MAX_BODY_CHUNK)
}

/// [`body_pieces`] with chunks of at most `chunk` bytes (clamped to 1..=[`MAX_BODY_CHUNK`]),
/// for tests.
pub fn body_pieces_in(segments: &[usize], chunk: usize) -> Vec<Piece> {
    let chunk = chunk.clamp(1, MAX_BODY_CHUNK);
    // Bytes not yet in a message, and room left in the current one.
    let mut left: usize = segments.iter().sum();
    let mut room = 0;
    let mut out = Vec::new();
    for (segment, &len) in segments.iter().enumerate() {
        let mut offset = 0;
        while offset < len {
            if room == 0 {
                room = left.min(chunk);
                left -= room;
                out.push(Piece::Prefix(BodyPrefix::new(room, left == 0)));
            }
            let take = room.min(len - offset);
            out.push(Piece::Slice { segment, offset, len: take });
            offset += take;
            room -= take;
        }
    }
    out
}

/// A range of a [`RequestStream`], in the order sent: bytes of its own (`own`), or a range of
/// one of the body's segments, sent where it lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    Own { offset: usize, len: usize },
    Slice { segment: usize, offset: usize, len: usize },
}

/// A call's whole request stream: the `request_headers` message, then the body's
/// `request_body` messages ([`body_pieces`]). Every byte of its own is in `own` (the headers
/// message, then each message's prefix); the body's bytes stay where they lie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestStream {
    pub own: Vec<u8>,
    pub spans: Vec<Span>,
}

/// The request stream of a request with the header lines `lines` (the pseudo-headers first;
/// a `Host` line is left out: `:authority` carries it, as Envoy sends it) and a body made of
/// `segments` (their lengths, in order; none or all empty: the headers message ends the stream).
pub fn request_stream<'a>(
    lines: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    segments: &[usize],
) -> Result<RequestStream, TooLarge> {
    let mut own = Vec::new();
    let lines = lines.into_iter().filter(|(n, _)| !n.eq_ignore_ascii_case(b"host"));
    encode_headers(lines, segments.iter().all(|&l| l == 0), &mut own)?;
    let mut spans = vec![Span::Own { offset: 0, len: own.len() }];
    for piece in body_pieces(segments) {
        spans.push(match piece {
            Piece::Prefix(p) => {
                let (offset, len) = (own.len(), p.as_bytes().len());
                own.extend_from_slice(p.as_bytes());
                Span::Own { offset, len }
            }
            Piece::Slice { segment, offset, len } => Span::Slice { segment, offset, len },
        });
    }
    Ok(RequestStream { own, spans })
}

fn varint_len(v: usize) -> usize {
    (usize::BITS - (v | 1).leading_zeros()).div_ceil(7) as usize
}

/// A `grpc-message` as sent: percent-encoded UTF-8 (the gRPC HTTP/2 protocol), decoded; a bad
/// escape is kept as it is, bytes that are not UTF-8 are replaced.
pub fn grpc_message(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (raw[i], raw.get(i + 1).and_then(|&b| hex(b)), raw.get(i + 2).and_then(|&b| hex(b))) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the EPP's answer means for the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The destination: one `ip:port` or a comma list, as the EPP wrote it.
    Endpoint(String),
    /// Answer the client with this (the protocol's 429 for a shed request, 503 for no endpoint);
    /// `dropped`: header lines past [`msg::IMMEDIATE_LINES`] / [`msg::IMMEDIATE_HEADER_BYTES`],
    /// not decoded.
    Immediate { status: u16, headers: Vec<(String, Vec<u8>)>, body: Vec<u8>, dropped: usize },
    /// A well-formed stream with no destination: a gRPC error status, or no destination given.
    NoEndpoint(String),
    /// Bytes that are not the protocol: a bad frame, a message that does not decode, a stream
    /// cut inside a frame.
    Malformed(String),
}

/// The response stream's decoder: [`feed`](Decoder::feed) the body as it arrives, then
/// [`finish`](Decoder::finish) with the trailers' status. Every `ProcessingResponse` is read:
/// the first destination found (a common response's header mutation, else the message's
/// dynamic metadata) is kept; an `ImmediateResponse` or a malformed frame ends the reading (what
/// follows is ignored, as Envoy closes the stream there).
#[derive(Debug)]
pub struct Decoder {
    limit: usize,
    frame: Vec<u8>,
    endpoint: Option<String>,
    end: Option<Outcome>,
    messages: usize,
    work: usize,
    fed: usize,
    budget: usize,
}

impl Decoder {
    /// A decoder that refuses frames over `limit` bytes (use [`MAX_MESSAGE`]).
    pub fn new(limit: usize) -> Self {
        Self::with_budget(limit, usize::MAX)
    }

    /// A decoder that also stops reading after `budget` bytes (see [`answer_budget`]): what
    /// follows is not read, and the outcome is no endpoint unless an `ImmediateResponse` (or
    /// a malformed frame) came before.
    pub fn with_budget(limit: usize, budget: usize) -> Self {
        let (frame, endpoint, end) = (Vec::new(), None, None);
        Self { limit, frame, endpoint, end, messages: 0, work: 0, fed: 0, budget }
    }

    /// More bytes were fed than the budget: the caller stops the stream.
    pub fn over_budget(&self) -> bool {
        self.fed > self.budget
    }

    /// Nothing more is read: its outcome is known (an `ImmediateResponse`, a malformed frame)
    /// or it is over its budget. The caller stops the stream.
    pub fn done(&self) -> bool {
        self.end.is_some() || self.over_budget()
    }

    /// Bytes copied plus bytes handed to protobuf decoding so far: at most twice the bytes fed.
    pub fn work(&self) -> usize {
        self.work
    }

    /// The bytes held for an incomplete frame: at most the limit plus [`FRAME_PREFIX`].
    pub fn held(&self) -> usize {
        self.frame.len()
    }

    /// Takes the next piece of the response body.
    pub fn feed(&mut self, mut data: &[u8]) {
        self.fed = self.fed.saturating_add(data.len());
        if self.over_budget() {
            return;
        }
        while !data.is_empty() && self.end.is_none() {
            if self.frame.len() < FRAME_PREFIX {
                let take = (FRAME_PREFIX - self.frame.len()).min(data.len());
                self.copy(&data[..take]);
                data = &data[take..];
                if self.frame.len() < FRAME_PREFIX {
                    return;
                }
                if let Err(reason) = self.check_prefix() {
                    self.end = Some(Outcome::Malformed(reason));
                    return;
                }
            }
            let total = FRAME_PREFIX + self.frame_len();
            let take = (total - self.frame.len()).min(data.len());
            if self.frame.len() == FRAME_PREFIX && take == total - FRAME_PREFIX {
                // The whole message is in `data`: decode it where it is.
                self.frame.clear();
                self.message(&data[..take]);
            } else {
                self.copy(&data[..take]);
                if self.frame.len() == total {
                    let frame = std::mem::take(&mut self.frame);
                    self.message(&frame[FRAME_PREFIX..]);
                }
            }
            data = &data[take..];
        }
    }

    /// The outcome, given the stream's `grpc-status` and `grpc-message` (None: the stream
    /// ended with no status, e.g. cut).
    pub fn finish(self, status: Option<(u32, &str)>) -> Outcome {
        if let Some(end) = self.end {
            return end;
        }
        if self.over_budget() {
            return Outcome::NoEndpoint(format!(
                "the answer is longer than {} bytes (4 MiB and twice the request's body): \
                 not read on",
                self.budget
            ));
        }
        if !self.frame.is_empty() {
            return Outcome::Malformed(format!(
                "the stream ends inside a frame ({} bytes of it)",
                self.frame.len()
            ));
        }
        match (status, self.endpoint) {
            (None, _) => Outcome::NoEndpoint("the stream ended with no grpc-status".into()),
            (Some((0, _)), Some(endpoint)) => Outcome::Endpoint(endpoint),
            (Some((0, _)), None) => {
                Outcome::NoEndpoint(format!("{} messages and no {DESTINATION}", self.messages))
            }
            (Some((code, message)), _) => {
                Outcome::NoEndpoint(format!("grpc-status {code}: {message}"))
            }
        }
    }

    fn copy(&mut self, bytes: &[u8]) {
        self.work += bytes.len();
        self.frame.extend_from_slice(bytes);
    }

    fn frame_len(&self) -> usize {
        let p = &self.frame;
        u32::from_be_bytes([p[1], p[2], p[3], p[4]]) as usize
    }

    fn check_prefix(&self) -> Result<(), String> {
        if self.frame[0] != 0 {
            return Err(format!("a frame with flag {} (compressed?)", self.frame[0]));
        }
        let len = self.frame_len();
        if len > self.limit {
            return Err(format!("a frame of {len} bytes, over the limit of {}", self.limit));
        }
        Ok(())
    }

    fn message(&mut self, bytes: &[u8]) {
        self.work += bytes.len();
        self.messages += 1;
        let response = match ProcessingResponse::decode(bytes) {
            Ok(response) => response,
            Err(e) => {
                self.end = Some(Outcome::Malformed(format!("message {}: {e}", self.messages)));
                return;
            }
        };
        if let Some(Response::ImmediateResponse(immediate)) = response.response {
            self.end = Some(immediate_outcome(immediate));
            return;
        }
        if self.endpoint.is_none() {
            match destination(&response) {
                Ok(endpoint) => self.endpoint = endpoint,
                Err(reason) => self.end = Some(Outcome::Malformed(reason)),
            }
        }
    }
}

/// Decodes a whole response body at once (see [`Decoder`]).
pub fn decode(body: &[u8], limit: usize, status: Option<(u32, &str)>) -> Outcome {
    let mut decoder = Decoder::new(limit);
    decoder.feed(body);
    decoder.finish(status)
}

/// What a finished call answered: its HTTP `status` (an answer of the EPP only with 200), the
/// decoder its body was fed to (`None`: the body was not read), and its `grpc-status` and
/// `grpc-message` lines as sent (from the trailers, or from the headers of a trailers-only
/// answer).
pub fn answer_outcome(
    status: usize,
    decoder: Option<Decoder>,
    (code, message): (Option<&[u8]>, Option<&[u8]>),
) -> Outcome {
    let Some(decoder) = decoder.filter(|_| status == 200) else {
        return Outcome::NoEndpoint(match status {
            200 => "the answer was not read".to_owned(),
            _ => format!("HTTP status {status} from the EndpointPicker"),
        });
    };
    let message = grpc_message(message.unwrap_or_default());
    let code = code.and_then(|c| core::str::from_utf8(c).ok()?.parse::<u32>().ok());
    decoder.finish(code.map(|c| (c, message.as_str())))
}

/// A header's value: `raw_value` when set, else `value` (as Envoy applies a mutation).
fn header_bytes(header: &HeaderValue) -> &[u8] {
    if header.raw_value.is_empty() { header.value.as_bytes() } else { &header.raw_value }
}

fn mutation_destination(mutation: Option<&HeaderMutation>) -> Option<&[u8]> {
    mutation?
        .set_headers
        .iter()
        .filter_map(|option| option.header.as_ref())
        .find(|header| header.key.eq_ignore_ascii_case(DESTINATION))
        .map(header_bytes)
        .filter(|value| !value.is_empty())
}

/// The destination one message gives, if any; a value that is not UTF-8 is an error.
fn destination(response: &ProcessingResponse) -> Result<Option<String>, String> {
    let common = match &response.response {
        Some(
            Response::RequestHeaders(r)
            | Response::ResponseHeaders(r)
            | Response::RequestBody(r)
            | Response::ResponseBody(r),
        ) => r.response.as_ref(),
        _ => None,
    };
    let from_header = mutation_destination(common.and_then(|c| c.header_mutation.as_ref()));
    let from_metadata = || {
        let namespace = response.dynamic_metadata.as_ref()?.fields.get(METADATA_NAMESPACE)?;
        let Some(Kind::StructValue(lb)) = &namespace.kind else {
            return None;
        };
        match &lb.fields.get(DESTINATION)?.kind {
            Some(Kind::StringValue(s)) if !s.is_empty() => Some(s.as_bytes()),
            _ => None,
        }
    };
    match from_header.or_else(from_metadata) {
        None => Ok(None),
        Some(bytes) => String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| format!("a {DESTINATION} that is not UTF-8")),
    }
}

/// Whether an [`Outcome::Immediate`] header line may be written to the client as it is: a
/// field name (an RFC 9110 token), a value with no CR, LF or NUL (no header or response
/// splitting), and not a line the server writes itself (framing, connection management,
/// HTTP/2 settings, `Server`, `Date`: NGINX adds its own, a second one would be a duplicate).
pub fn response_header_ok(name: &str, value: &[u8]) -> bool {
    const OWN: [&str; 11] = [
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "proxy-connection",
        "trailer",
        "te",
        "http2-settings",
        "server",
        "date",
    ];
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    !name.is_empty()
        && name.bytes().all(token)
        && !value.iter().any(|b| matches!(b, b'\r' | b'\n' | 0))
        && !OWN.iter().any(|o| name.eq_ignore_ascii_case(o))
}

fn immediate_outcome(immediate: msg::ImmediateResponse) -> Outcome {
    // No status: Envoy answers 200.
    let code = immediate.status.map_or(200, |s| s.code);
    let Some(status) = u16::try_from(code).ok().filter(|c| (200..=599).contains(c)) else {
        return Outcome::Malformed(format!("an immediate response with status {code}"));
    };
    let (lines, dropped) =
        immediate.headers.map(|m| (m.set_headers, m.dropped)).unwrap_or_default();
    let headers = lines
        .into_iter()
        .filter_map(|option| option.header)
        .map(|header| {
            let value = header_bytes(&header).to_vec();
            (header.key, value)
        })
        .collect();
    Outcome::Immediate { status, headers, body: immediate.body, dropped }
}

#[cfg(feature = "fake")]
pub mod fake;
