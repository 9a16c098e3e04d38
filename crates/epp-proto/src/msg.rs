//! The subset of Envoy's ext_proc v3 messages the Endpoint Picker protocol uses, with the field
//! numbers of `envoy/service/ext_proc/v3/external_processor.proto`,
//! `envoy/config/core/v3/base.proto`, `envoy/type/v3/http_status.proto` and
//! `google/protobuf/struct.proto`. Fields left out are skipped as unknown fields when decoding.
//! `tests/fake_agrees.rs` checks these numbers against the types generated from the .proto files
//! (envoy-types) over a real gRPC stream.

use std::collections::HashMap;

/// `envoy.config.core.v3.HeaderValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HeaderValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub value: String,
    /// What Envoy sends (and what the reference EPP reads): the value as bytes.
    #[prost(bytes = "vec", tag = "3")]
    pub raw_value: Vec<u8>,
}

/// `envoy.config.core.v3.HeaderMap`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HeaderMap {
    #[prost(message, repeated, tag = "1")]
    pub headers: Vec<HeaderValue>,
}

/// `envoy.service.ext_proc.v3.HttpHeaders`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HttpHeaders {
    #[prost(message, optional, tag = "1")]
    pub headers: Option<HeaderMap>,
    #[prost(bool, tag = "3")]
    pub end_of_stream: bool,
}

/// `envoy.service.ext_proc.v3.HttpBody`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HttpBody {
    #[prost(bytes = "vec", tag = "1")]
    pub body: Vec<u8>,
    #[prost(bool, tag = "2")]
    pub end_of_stream: bool,
}

/// `envoy.service.ext_proc.v3.ProcessingRequest` (request side only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessingRequest {
    #[prost(oneof = "Request", tags = "2, 4")]
    pub request: Option<Request>,
}

/// `ProcessingRequest.request`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Request {
    #[prost(message, tag = "2")]
    RequestHeaders(HttpHeaders),
    #[prost(message, tag = "4")]
    RequestBody(HttpBody),
}

/// `envoy.config.core.v3.HeaderValueOption` (the header only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct HeaderValueOption {
    #[prost(message, optional, tag = "1")]
    pub header: Option<HeaderValue>,
}

/// `envoy.service.ext_proc.v3.HeaderMutation`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HeaderMutation {
    #[prost(message, repeated, tag = "1")]
    pub set_headers: Vec<HeaderValueOption>,
    #[prost(string, repeated, tag = "2")]
    pub remove_headers: Vec<String>,
}

/// `envoy.service.ext_proc.v3.CommonResponse` (the header mutation only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct CommonResponse {
    #[prost(message, optional, tag = "2")]
    pub header_mutation: Option<HeaderMutation>,
}

/// `HeadersResponse` and `BodyResponse`: both carry a `CommonResponse` as field 1.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WithCommon {
    #[prost(message, optional, tag = "1")]
    pub response: Option<CommonResponse>,
}

/// `envoy.type.v3.HttpStatus`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HttpStatus {
    #[prost(int32, tag = "1")]
    pub code: i32,
}

/// `envoy.service.ext_proc.v3.ImmediateResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ImmediateResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<HttpStatus>,
    #[prost(message, optional, tag = "2")]
    pub headers: Option<CappedHeaders>,
    #[prost(bytes = "vec", tag = "3")]
    pub body: Vec<u8>,
    #[prost(string, tag = "5")]
    pub details: String,
}

/// Header lines of an `ImmediateResponse` kept at most (the rest counted in
/// [`CappedHeaders::dropped`]).
pub const IMMEDIATE_LINES: usize = 100;
/// Bytes of `ImmediateResponse` header lines kept at most (their encoded size).
pub const IMMEDIATE_HEADER_BYTES: usize = 64 << 10;

/// `ImmediateResponse.headers` (a `HeaderMutation`) decoded bounded by construction: the first
/// `set_headers` lines while they stay within [`IMMEDIATE_LINES`] and
/// [`IMMEDIATE_HEADER_BYTES`]; any further line is skipped undecoded (no allocation) and
/// counted; `remove_headers` is skipped (nothing to remove from an answer made here).
#[derive(Clone, PartialEq, Default, Debug)]
pub struct CappedHeaders {
    pub set_headers: Vec<HeaderValueOption>,
    /// Lines past the cap, not decoded.
    pub dropped: usize,
    /// Encoded bytes of `set_headers`.
    pub bytes: usize,
}

impl prost::Message for CappedHeaders {
    fn encode_raw(&self, buf: &mut impl prost::bytes::BufMut) {
        for line in &self.set_headers {
            prost::encoding::message::encode(1, line, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: prost::encoding::WireType,
        buf: &mut impl prost::bytes::Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        if tag != 1 {
            return prost::encoding::skip_field(wire_type, tag, buf, ctx);
        }
        // The line's length, read ahead (a malformed one is the skip's error).
        let len = prost::decode_length_delimiter(buf.chunk()).unwrap_or(usize::MAX);
        let fits = self.bytes.saturating_add(len) <= IMMEDIATE_HEADER_BYTES;
        if self.set_headers.len() >= IMMEDIATE_LINES || !fits {
            self.dropped += 1;
            return prost::encoding::skip_field(wire_type, tag, buf, ctx);
        }
        let mut line = HeaderValueOption::default();
        prost::encoding::message::merge(wire_type, &mut line, buf, ctx)?;
        self.bytes += len;
        self.set_headers.push(line);
        Ok(())
    }

    fn encoded_len(&self) -> usize {
        prost::encoding::message::encoded_len_repeated(1, &self.set_headers)
    }

    fn clear(&mut self) {
        *self = Self::default();
    }
}

/// `google.protobuf.Struct`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Struct {
    #[prost(map = "string, message", tag = "1")]
    pub fields: HashMap<String, Value>,
}

/// `google.protobuf.Value` (string and struct kinds; the others are skipped).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Value {
    #[prost(oneof = "Kind", tags = "3, 5")]
    pub kind: Option<Kind>,
}

/// `Value.kind`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Kind {
    #[prost(string, tag = "3")]
    StringValue(String),
    #[prost(message, tag = "5")]
    StructValue(Struct),
}

/// `envoy.service.ext_proc.v3.ProcessingResponse` (what the protocol reads of it).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessingResponse {
    #[prost(oneof = "Response", tags = "1, 2, 3, 4, 7")]
    pub response: Option<Response>,
    #[prost(message, optional, tag = "8")]
    pub dynamic_metadata: Option<Struct>,
}

/// `ProcessingResponse.response`: the common responses and the immediate one.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Response {
    #[prost(message, tag = "1")]
    RequestHeaders(WithCommon),
    #[prost(message, tag = "2")]
    ResponseHeaders(WithCommon),
    #[prost(message, tag = "3")]
    RequestBody(WithCommon),
    #[prost(message, tag = "4")]
    ResponseBody(WithCommon),
    #[prost(message, tag = "7")]
    ImmediateResponse(ImmediateResponse),
}
