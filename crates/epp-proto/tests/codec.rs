//! The codec alone: request frames as the protocol wants them, the response decoder's outcomes,
//! and its bounds (arbitrary bytes in arbitrary pieces: no panic, the same outcome as in one
//! piece, work at most twice the bytes, at most one frame held).

use epp_proto::msg::{self, Kind, ProcessingRequest, Request, Response};
use epp_proto::{
    BodyPrefix, DESTINATION, Decoder, FRAME_PREFIX, MAX_BODY_CHUNK, MAX_MESSAGE, Outcome, Piece,
    answer_budget, answer_outcome, body_pieces, body_pieces_in, decode, encode_body,
    encode_headers, grpc_message, response_header_ok,
};
use proptest::prelude::*;
use prost::Message;

/// Splits a stream of frames into its messages, checking each prefix.
fn frames(mut bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        assert_eq!(bytes[0], 0, "uncompressed");
        let len = u32::from_be_bytes(bytes[1..5].try_into().unwrap()) as usize;
        out.push(&bytes[FRAME_PREFIX..FRAME_PREFIX + len]);
        bytes = &bytes[FRAME_PREFIX + len..];
    }
    out
}

fn request(frame: &[u8]) -> Request {
    ProcessingRequest::decode(frame).unwrap().request.unwrap()
}

#[test]
fn headers_are_lowercased_raw_values_with_end_of_stream() {
    let mut out = Vec::new();
    let lines: [(&[u8], &[u8]); 3] =
        [(b":method", b"POST"), (b"Content-Type", b"application/json"), (b"X-Bytes", b"\xff\x00v")];
    encode_headers(lines, true, &mut out).unwrap();
    let frames = frames(&out);
    assert_eq!(frames.len(), 1);
    let Request::RequestHeaders(h) = request(frames[0]) else { panic!("headers") };
    assert!(h.end_of_stream);
    let got: Vec<(String, Vec<u8>)> =
        h.headers.unwrap().headers.into_iter().map(|v| (v.key, v.raw_value)).collect();
    let want: Vec<(String, Vec<u8>)> = [
        (":method", &b"POST"[..]),
        ("content-type", b"application/json"),
        ("x-bytes", b"\xff\x00v"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_vec()))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn a_body_is_split_under_the_message_limit_the_last_with_end_of_stream() {
    let body: Vec<u8> = (0..2 * MAX_BODY_CHUNK + 3).map(|i| i as u8).collect();
    let mut out = Vec::new();
    encode_body(&body, true, &mut out);
    let frames = frames(&out);
    assert_eq!(frames.len(), 3);
    let mut joined = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        assert!(frame.len() <= MAX_MESSAGE, "message {i}: {} bytes", frame.len());
        let Request::RequestBody(b) = request(frame) else { panic!("body") };
        assert_eq!(b.end_of_stream, i == 2);
        joined.extend_from_slice(&b.body);
    }
    assert_eq!(joined, body);
    // The worst case of one message: a full chunk with end_of_stream.
    let mut one = Vec::new();
    encode_body(&body[..MAX_BODY_CHUNK], true, &mut one);
    assert!(one.len() - FRAME_PREFIX <= MAX_MESSAGE);
}

#[test]
fn an_empty_body_end_is_one_empty_message() {
    let mut out = Vec::new();
    encode_body(b"", true, &mut out);
    let frames = frames(&out);
    assert_eq!(frames.len(), 1);
    assert_eq!(
        request(frames[0]),
        Request::RequestBody(msg::HttpBody { body: vec![], end_of_stream: true })
    );
}

fn frame(m: &msg::ProcessingResponse) -> Vec<u8> {
    let body = m.encode_to_vec();
    let mut out = vec![0];
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

fn mutation(key: &str, value: &str, raw: bool) -> msg::WithCommon {
    let header = msg::HeaderValue {
        key: key.into(),
        value: if raw { String::new() } else { value.into() },
        raw_value: if raw { value.as_bytes().to_vec() } else { vec![] },
    };
    msg::WithCommon {
        response: Some(msg::CommonResponse {
            header_mutation: Some(msg::HeaderMutation {
                set_headers: vec![msg::HeaderValueOption { header: Some(header) }],
                remove_headers: vec![],
            }),
        }),
    }
}

fn response(r: Response) -> msg::ProcessingResponse {
    msg::ProcessingResponse { response: Some(r), dynamic_metadata: None }
}

fn metadata(endpoint: &str) -> msg::ProcessingResponse {
    let inner = msg::Struct {
        fields: [(
            DESTINATION.to_string(),
            msg::Value { kind: Some(Kind::StringValue(endpoint.into())) },
        )]
        .into(),
    };
    let outer = msg::Struct {
        fields: [("envoy.lb".to_string(), msg::Value { kind: Some(Kind::StructValue(inner)) })]
            .into(),
    };
    msg::ProcessingResponse {
        response: Some(Response::RequestHeaders(msg::WithCommon::default())),
        dynamic_metadata: Some(outer),
    }
}

const OK: Option<(u32, &str)> = Some((0, ""));

#[test]
fn the_destination_from_headers_body_or_metadata() {
    let headers = frame(&response(Response::RequestHeaders(mutation(
        "X-Gateway-Destination-Endpoint",
        "10.0.0.1:8000",
        true,
    ))));
    let empty_headers = frame(&response(Response::RequestHeaders(msg::WithCommon::default())));
    let body = frame(&response(Response::RequestBody(mutation(
        DESTINATION,
        "10.0.0.2:8000,10.0.0.3:8000",
        false,
    ))));
    let meta = frame(&metadata("10.0.0.4:8000"));
    assert_eq!(decode(&headers, MAX_MESSAGE, OK), Outcome::Endpoint("10.0.0.1:8000".into()));
    let stream = [empty_headers.clone(), body].concat();
    assert_eq!(
        decode(&stream, MAX_MESSAGE, OK),
        Outcome::Endpoint("10.0.0.2:8000,10.0.0.3:8000".into())
    );
    assert_eq!(decode(&meta, MAX_MESSAGE, OK), Outcome::Endpoint("10.0.0.4:8000".into()));
    // The first destination is kept.
    let both = [headers.clone(), meta].concat();
    assert_eq!(decode(&both, MAX_MESSAGE, OK), Outcome::Endpoint("10.0.0.1:8000".into()));
    assert!(
        matches!(decode(&empty_headers, MAX_MESSAGE, OK), Outcome::NoEndpoint(r) if r.contains("1 messages"))
    );
    // A gRPC error wins over a destination already read; no status is no endpoint.
    assert_eq!(
        decode(&headers, MAX_MESSAGE, Some((14, "no capacity"))),
        Outcome::NoEndpoint("grpc-status 14: no capacity".into())
    );
    assert!(matches!(decode(&headers, MAX_MESSAGE, None), Outcome::NoEndpoint(_)));
}

#[test]
fn a_finished_call_s_outcome_from_its_status_its_body_and_its_grpc_status() {
    let fed = |bytes: &[u8]| {
        let mut d = Decoder::new(MAX_MESSAGE);
        d.feed(bytes);
        Some(d)
    };
    let answer = frame(&metadata("10.0.0.4:8000"));
    let endpoint = Outcome::Endpoint("10.0.0.4:8000".into());
    assert_eq!(answer_outcome(200, fed(&answer), (Some(b"0"), None)), endpoint);
    // Not the EPP's answer: whatever its body.
    let no = |o: Outcome, what: &str| matches!(o, Outcome::NoEndpoint(r) if r.contains(what));
    assert!(no(answer_outcome(502, fed(&answer), (Some(b"0"), None)), "HTTP status 502"));
    assert!(no(answer_outcome(200, None, (Some(b"0"), None)), "not read"));
    // The grpc-status as sent, its message percent-decoded.
    let failed = answer_outcome(200, fed(&answer), (Some(b"14"), Some(b"no%20pods")));
    assert!(no(failed, "grpc-status 14: no pods"));
    assert!(no(answer_outcome(200, fed(&answer), (Some(b"x"), None)), "no grpc-status"));
    assert!(no(answer_outcome(200, fed(&answer), (None, None)), "no grpc-status"));
}

#[test]
fn an_immediate_response_ends_the_reading() {
    let immediate = msg::ImmediateResponse {
        status: Some(msg::HttpStatus { code: 429 }),
        headers: Some(msg::CappedHeaders {
            set_headers: vec![msg::HeaderValueOption {
                header: Some(msg::HeaderValue {
                    key: "retry-after".into(),
                    value: "1".into(),
                    raw_value: vec![],
                }),
            }],
            ..Default::default()
        }),
        body: b"shed\n".to_vec(),
        details: String::new(),
    };
    let after =
        frame(&response(Response::RequestHeaders(mutation(DESTINATION, "10.0.0.1:1", true))));
    let stream =
        [frame(&response(Response::ImmediateResponse(immediate))), after, vec![1, 2, 3]].concat();
    let want = Outcome::Immediate {
        status: 429,
        headers: vec![("retry-after".into(), b"1".to_vec())],
        body: b"shed\n".to_vec(),
        dropped: 0,
    };
    assert_eq!(decode(&stream, MAX_MESSAGE, Some((13, "late"))), want);
    let bad =
        msg::ImmediateResponse { status: Some(msg::HttpStatus { code: 42 }), ..Default::default() };
    assert!(matches!(
        decode(&frame(&response(Response::ImmediateResponse(bad))), MAX_MESSAGE, OK),
        Outcome::Malformed(_)
    ));
}

#[test]
fn malformed_streams() {
    let ok = frame(&response(Response::RequestHeaders(mutation(DESTINATION, "10.0.0.1:1", true))));
    let garbage = [0, 0, 0, 0, 3, 0xff, 0xff, 0xff];
    let mut compressed = ok.clone();
    compressed[0] = 1;
    let cut = &ok[..ok.len() - 1];
    for (name, bytes) in [("garbage", &garbage[..]), ("compressed", &compressed), ("cut", cut)] {
        assert!(matches!(decode(bytes, MAX_MESSAGE, OK), Outcome::Malformed(_)), "{name}");
    }
    // Not UTF-8 in a raw value.
    let mut m = mutation(DESTINATION, "", true);
    m.response.as_mut().unwrap().header_mutation.as_mut().unwrap().set_headers[0]
        .header
        .as_mut()
        .unwrap()
        .raw_value = vec![0xff];
    assert!(matches!(
        decode(&frame(&response(Response::RequestHeaders(m))), MAX_MESSAGE, OK),
        Outcome::Malformed(_)
    ));
}

#[test]
fn a_claimed_length_past_the_limit_is_refused_before_any_payload() {
    // A peer claims 4 GiB: nothing past the prefix is held, the rest is not even looked at.
    let mut d = Decoder::new(MAX_MESSAGE);
    d.feed(&[0, 0xff, 0xff, 0xff, 0xff]);
    d.feed(&vec![7; 1 << 16]);
    assert_eq!(d.held(), FRAME_PREFIX);
    assert_eq!(d.work(), FRAME_PREFIX);
    assert!(matches!(d.finish(OK), Outcome::Malformed(r) if r.contains("over the limit")));
    // One byte over a small limit.
    let ok = frame(&response(Response::RequestHeaders(mutation(DESTINATION, "10.0.0.1:1", true))));
    let len = ok.len() - FRAME_PREFIX;
    assert!(matches!(decode(&ok, len, OK), Outcome::Endpoint(_)));
    assert!(matches!(decode(&ok, len - 1, OK), Outcome::Malformed(_)));
}

fn pieces(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut at = 0;
    for c in cuts.into_iter().chain([bytes.len()]) {
        out.push(bytes[at..c].to_vec());
        at = c;
    }
    out
}

fn check_bounds(bytes: &[u8], cuts: &[usize], limit: usize) {
    let whole = decode(bytes, limit, OK);
    let mut d = Decoder::new(limit);
    for piece in pieces(bytes, cuts) {
        d.feed(&piece);
        assert!(d.held() <= limit + FRAME_PREFIX);
    }
    assert!(d.work() <= 2 * bytes.len(), "work {} for {} bytes", d.work(), bytes.len());
    assert_eq!(d.finish(OK), whole);
}

/// Frames of valid messages around arbitrary ones: the decoder meets real prefixes.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    let message = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        "[0-9.:,]{0,24}".prop_map(|e| response(Response::RequestHeaders(mutation(
            DESTINATION,
            &e,
            true
        )))
        .encode_to_vec()),
        "[0-9.:,]{0,24}".prop_map(|e| metadata(&e).encode_to_vec()),
    ];
    proptest::collection::vec((message, any::<u8>()), 0..8).prop_map(|ms| {
        ms.into_iter()
            .flat_map(|(m, flag)| {
                let mut f = vec![u8::from(flag < 8)];
                f.extend_from_slice(&(m.len() as u32).to_be_bytes());
                f.extend_from_slice(&m);
                f
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn arbitrary_bytes_any_pieces(bytes in proptest::collection::vec(any::<u8>(), 0..512), cuts in proptest::collection::vec(any::<usize>(), 0..16), limit in 0usize..600) {
        check_bounds(&bytes, &cuts, limit);
    }

    #[test]
    fn framed_messages_any_pieces(bytes in stream(), cuts in proptest::collection::vec(any::<usize>(), 0..16)) {
        check_bounds(&bytes, &cuts, MAX_MESSAGE);
        check_bounds(&bytes, &cuts, 40);
    }
}

#[test]
fn one_byte_at_a_time_is_linear() {
    // n and 2n messages fed a byte at a time: the work is the bytes, twice at most, not more.
    let one = frame(&response(Response::RequestBody(mutation("x-other", "v", true))));
    for n in [100usize, 200] {
        let bytes = one.repeat(n);
        let mut d = Decoder::new(MAX_MESSAGE);
        for b in &bytes {
            d.feed(std::slice::from_ref(b));
        }
        // Each byte copied once, each payload byte decoded once.
        assert_eq!(d.work(), bytes.len() + n * (one.len() - FRAME_PREFIX), "n = {n}");
        assert!(
            matches!(d.finish(OK), Outcome::NoEndpoint(r) if r.starts_with(&format!("{n} messages")))
        );
    }
}

fn check_body_prefix(chunk: &[u8], end_of_stream: bool) {
    let prefix = BodyPrefix::new(chunk.len(), end_of_stream);
    let frame = [prefix.as_bytes(), chunk].concat();
    let messages = frames(&frame);
    assert_eq!(messages.len(), 1, "prefix ++ chunk is one whole frame");
    let want = Request::RequestBody(msg::HttpBody { body: chunk.to_vec(), end_of_stream });
    assert_eq!(request(messages[0]), want);
}

proptest! {
    #[test]
    fn a_body_prefix_and_its_chunk_are_one_message(len in 0usize..40_000, eos in any::<bool>()) {
        check_body_prefix(&vec![0xa5; len], eos);
    }
}

#[test]
fn body_prefixes_at_varint_edges_and_the_largest_chunk() {
    for len in [0, 1, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152] {
        check_body_prefix(&vec![1; len], true);
        check_body_prefix(&vec![1; len], false);
    }
    let chunk = vec![7; MAX_BODY_CHUNK];
    check_body_prefix(&chunk, true);
    let prefix = BodyPrefix::new(MAX_BODY_CHUNK, true);
    assert!(prefix.as_bytes().len() + MAX_BODY_CHUNK - FRAME_PREFIX <= MAX_MESSAGE);
}

#[test]
fn grpc_messages_are_percent_decoded() {
    assert_eq!(grpc_message(b"fake%20EPP:%20no%20capacity"), "fake EPP: no capacity");
    assert_eq!(grpc_message(b"caf%C3%A9 100%"), "caf\u{e9} 100%");
    assert_eq!(grpc_message(b"%zz%4"), "%zz%4");
    assert_eq!(grpc_message(b"%FF"), "\u{fffd}");
}

/// The bytes `body_pieces_in` sends for `segments` (filled with a counting pattern), and the body.
fn assemble(lens: &[usize], chunk: usize) -> (Vec<u8>, Vec<u8>, usize) {
    let mut n = 0u8;
    let segments: Vec<Vec<u8>> = lens
        .iter()
        .map(|&len| {
            (0..len)
                .map(|_| {
                    n = n.wrapping_add(1);
                    n
                })
                .collect()
        })
        .collect();
    let pieces = body_pieces_in(lens, chunk);
    let mut sent = Vec::new();
    for piece in &pieces {
        match *piece {
            Piece::Prefix(p) => sent.extend_from_slice(p.as_bytes()),
            Piece::Slice { segment, offset, len } => {
                sent.extend_from_slice(&segments[segment][offset..offset + len]);
            }
        }
    }
    (sent, segments.concat(), pieces.len())
}

proptest! {
    /// Any split of a body into segments: the pieces are whole messages, in order, carrying the
    /// body exactly, none over the chunk, only the last with end_of_stream; the piece count is
    /// bounded by the segments plus twice the messages.
    #[test]
    fn body_pieces_are_whole_messages_of_the_body(lens in proptest::collection::vec(0usize..60, 0..6), chunk in 1usize..25) {
        let (sent, body, count) = assemble(&lens, chunk);
        let messages = frames(&sent);
        prop_assert_eq!(messages.len(), body.len().div_ceil(chunk));
        prop_assert!(count <= lens.len() + 2 * messages.len());
        let mut got = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            let Request::RequestBody(b) = request(m) else { panic!("a body message") };
            prop_assert!(b.body.len() <= chunk && !b.body.is_empty());
            prop_assert_eq!(b.end_of_stream, i + 1 == messages.len());
            got.extend_from_slice(&b.body);
        }
        prop_assert_eq!(got, body);
    }
}

#[test]
fn body_pieces_of_nothing_and_at_the_message_limit() {
    assert!(body_pieces(&[]).is_empty());
    assert!(body_pieces(&[0, 0]).is_empty());
    // One segment over the limit: two messages, the first full.
    let pieces = body_pieces(&[MAX_BODY_CHUNK + 1]);
    assert_eq!(
        pieces,
        [
            Piece::Prefix(BodyPrefix::new(MAX_BODY_CHUNK, false)),
            Piece::Slice { segment: 0, offset: 0, len: MAX_BODY_CHUNK },
            Piece::Prefix(BodyPrefix::new(1, true)),
            Piece::Slice { segment: 0, offset: MAX_BODY_CHUNK, len: 1 },
        ]
    );
}

#[test]
fn immediate_headers_that_could_split_or_reframe_the_answer_are_refused() {
    assert!(response_header_ok("x-fake-epp", b"shed"));
    assert!(response_header_ok("Retry-After", b"1"));
    assert!(response_header_ok("content-type", b"text/plain; charset=\"utf-8\"\tx"));
    for (name, value) in [
        ("x-a", &b"1\r\nSet-Cookie: s=1"[..]),
        ("x-a", b"1\n"),
        ("x-a", b"\0"),
        ("x a", b"1"),
        ("x-a:", b"1"),
        (":status", b"200"),
        ("", b"1"),
        ("Content-Length", b"0"),
        ("transfer-encoding", b"chunked"),
        ("Connection", b"close"),
        ("TE", b"trailers"),
        ("http2-settings", b"AAMAAABkAAQAoAAAAAIAAAAA"),
        ("Server", b"epp"),
        ("date", b"Thu, 01 Jan 1970 00:00:00 GMT"),
        ("x-\u{e9}", b"1"),
    ] {
        assert!(!response_header_ok(name, value), "{name:?}: {value:?}");
    }
}

/// What prost writes for the headers message (the reference `encode_headers` must equal).
fn prost_headers(lines: &[(Vec<u8>, Vec<u8>)], end_of_stream: bool) -> Vec<u8> {
    let headers = lines
        .iter()
        .map(|(k, v)| msg::HeaderValue {
            key: String::from_utf8_lossy(&k.to_ascii_lowercase()).into_owned(),
            value: String::new(),
            raw_value: v.clone(),
        })
        .collect();
    let m = ProcessingRequest {
        request: Some(Request::RequestHeaders(msg::HttpHeaders {
            headers: Some(msg::HeaderMap { headers }),
            end_of_stream,
        })),
    };
    let mut out = vec![0];
    out.extend_from_slice(&(m.encoded_len() as u32).to_be_bytes());
    m.encode_raw(&mut out);
    out
}

proptest! {
    /// The headers message written by hand is byte for byte prost's, for any lines (empty
    /// names and values, bytes that are not UTF-8, lengths past one varint byte).
    #[test]
    fn headers_are_written_as_prost_writes_them(
        lines in proptest::collection::vec((proptest::collection::vec(any::<u8>(), 0..150), proptest::collection::vec(any::<u8>(), 0..200)), 0..8),
        eos in any::<bool>(),
    ) {
        let mut out = Vec::new();
        encode_headers(lines.iter().map(|(k, v)| (&k[..], &v[..])), eos, &mut out).unwrap();
        prop_assert_eq!(out, prost_headers(&lines, eos));
    }
}

#[test]
fn a_stream_past_its_budget_is_not_read_on_and_gives_no_endpoint() {
    let dest =
        frame(&response(Response::RequestHeaders(mutation(DESTINATION, "10.0.0.1:80", true))));
    let one = frame(&response(Response::RequestBody(mutation("x-other", "v", true))));
    let budget = dest.len() + 10 * one.len();
    // Within the budget: the destination; one byte past it: no endpoint, whatever came before,
    // and the work stops growing (n and 2n messages past the budget: the same work).
    let within = [dest.clone(), one.repeat(10)].concat();
    let mut d = Decoder::with_budget(MAX_MESSAGE, budget);
    d.feed(&within);
    assert!(!d.over_budget());
    assert_eq!(d.finish(OK), Outcome::Endpoint("10.0.0.1:80".into()));
    let mut works = Vec::new();
    for n in [100usize, 200] {
        let mut d = Decoder::with_budget(MAX_MESSAGE, budget);
        d.feed(&within);
        for _ in 0..n {
            d.feed(&one);
        }
        assert!(d.over_budget());
        works.push(d.work());
        assert!(matches!(d.finish(OK), Outcome::NoEndpoint(r) if r.contains("longer than")));
    }
    assert_eq!(works[0], works[1]);
    // An ImmediateResponse read before the budget is passed stays the outcome.
    let shed = msg::ImmediateResponse {
        status: Some(msg::HttpStatus { code: 429 }),
        ..Default::default()
    };
    let mut d = Decoder::with_budget(MAX_MESSAGE, budget);
    d.feed(&frame(&response(Response::ImmediateResponse(shed))));
    d.feed(&one.repeat(100));
    assert!(d.over_budget());
    assert!(matches!(d.finish(None), Outcome::Immediate { status: 429, .. }));
    assert_eq!(answer_budget(1 << 20), MAX_MESSAGE + FRAME_PREFIX + (2 << 20));
}
