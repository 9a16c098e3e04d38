//! `request_stream`: a call's whole request stream as the module sends it (its own bytes and
//! the body's ranges, in order) is the headers message (without the `Host` line) then the
//! body's messages, byte for byte as `encode_headers` and `encode_body` write them.

use epp_proto::{
    MAX_BODY_CHUNK, MAX_MESSAGE, RequestStream, Span, encode_body, encode_headers, request_stream,
};

/// The bytes the stream sends: its spans resolved against `own` and the body's `segments`.
fn sent(s: &RequestStream, segments: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for span in &s.spans {
        match *span {
            Span::Own { offset, len } => out.extend_from_slice(&s.own[offset..offset + len]),
            Span::Slice { segment, offset, len } => {
                out.extend_from_slice(&segments[segment][offset..offset + len]);
            }
        }
    }
    out
}

const LINES: [(&[u8], &[u8]); 4] =
    [(b":authority", b"a.example"), (b"Host", b"a.example"), (b"X-One", b"1"), (b"host", b"b")];
const WITHOUT_HOST: [(&[u8], &[u8]); 2] = [(b":authority", b"a.example"), (b"X-One", b"1")];

#[test]
fn no_body_is_one_headers_message_that_ends_the_stream_without_host() {
    let s = request_stream(LINES, &[0, 0]).unwrap();
    let mut want = Vec::new();
    encode_headers(WITHOUT_HOST, true, &mut want).unwrap();
    assert_eq!(s.spans, [Span::Own { offset: 0, len: want.len() }]);
    assert_eq!(sent(&s, &[b"", b""]), want);
    assert_eq!(request_stream(LINES, &[]).unwrap(), s);
}

#[test]
fn a_body_in_segments_is_sent_where_it_lies_behind_prefixes_of_its_own() {
    // Three messages (two full chunks and 9 bytes), over segments that cross their bounds.
    let body: Vec<u8> = (0..2 * MAX_BODY_CHUNK + 9).map(|i| (i % 251) as u8).collect();
    let cuts = [0, 5, 5, MAX_BODY_CHUNK + 1, body.len()];
    let segments: Vec<&[u8]> = cuts.windows(2).map(|w| &body[w[0]..w[1]]).collect();
    let lens: Vec<usize> = segments.iter().map(|s| s.len()).collect();
    let s = request_stream(LINES, &lens).unwrap();
    let mut want = Vec::new();
    encode_headers(WITHOUT_HOST, false, &mut want).unwrap();
    encode_body(&body, true, &mut want);
    assert_eq!(sent(&s, &segments), want);
    // The body's bytes are never copied: `own` holds the headers message and 3 prefixes.
    let copied = s.spans.iter().filter(|s| matches!(s, Span::Own { .. })).count();
    assert_eq!(copied, 4);
    assert!(s.own.len() < 100, "{}", s.own.len());
}

#[test]
fn header_lines_over_the_message_limit_are_refused_with_their_size() {
    let big = vec![b'v'; MAX_MESSAGE];
    let lines = [(&b"x-big"[..], &big[..])];
    let e = request_stream(lines, &[3]).unwrap_err();
    assert!(e.0 > MAX_MESSAGE);
    let text = e.to_string();
    assert!(text.starts_with("the request's header lines make a message of "), "{text}");
    assert!(text.ends_with(&format!(" bytes, over {MAX_MESSAGE}")), "{text}");
}
