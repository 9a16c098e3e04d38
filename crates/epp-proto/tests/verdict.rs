//! `verdict`: what the client's request does after its call, the same rule for the shim's
//! answer and the EPP protocol's, with the `[error]` lines the module logs.

use epp_proto::Outcome;
use epp_proto::destination::{BODY_SHOWN, BodyHead};
use epp_proto::verdict::{Answer, REASON_SHOWN, Verdict, bad_path, missing, verdict};

/// The module's escaping stand-in: printable bytes as they are, others as `?`, cut at `max`.
fn show(bytes: &[u8], max: usize) -> String {
    bytes
        .iter()
        .take(max)
        .map(|&b| if b.is_ascii_graphic() || b == b' ' { b as char } else { '?' })
        .collect()
}

fn error(v: Verdict<'_>) -> String {
    match v {
        Verdict::Error(e) => e,
        other => panic!("not an error: {other:?}"),
    }
}

#[test]
fn an_endpoint_is_set_from_either_framing() {
    let shim = Answer::Shim { status: 200, endpoint: b"10.0.0.1:80, 10.0.0.2:80".to_vec() };
    let grpc = Answer::Grpc(Outcome::Endpoint("10.0.0.3:80".into()));
    let head = BodyHead::default();
    assert_eq!(
        verdict(Some(&shim), false, 0, &head, show),
        Verdict::Endpoint(b"10.0.0.1:80, 10.0.0.2:80")
    );
    assert_eq!(verdict(Some(&grpc), true, 0, &head, show), Verdict::Endpoint(b"10.0.0.3:80"));
}

#[test]
fn a_shim_answer_without_an_endpoint_logs_its_status_and_body_head() {
    let mut head = BodyHead::default();
    head.feed(b"no\npods");
    let empty = Answer::Shim { status: 200, endpoint: Vec::new() };
    assert_eq!(
        error(verdict(Some(&empty), false, 0, &head, show)),
        "could not get specific inference endpoint from EndpointPicker; status: 200; body: \"no?pods\""
    );
    head.feed(&[b'x'; BODY_SHOWN]);
    let refused = Answer::Shim { status: 503, endpoint: b"10.0.0.1:80".to_vec() };
    let e = error(verdict(Some(&refused), false, 502, &head, show));
    assert!(e.starts_with("could not get specific inference endpoint from EndpointPicker; status: 503; body: \"no?podsxx"), "{e}");
    assert!(e.ends_with("xx...(more)\" (the answer failed: see the error above)"), "{e}");
    assert_eq!(e.matches('x').count(), BODY_SHOWN - 7, "{e}");
}

#[test]
fn no_answer_names_the_framing_and_the_call_s_code() {
    let head = BodyHead::default();
    assert_eq!(
        error(verdict(None, false, 504, &head, show)),
        "no answer from the EndpointPicker shim (status: 504, see the upstream error above); body: \"\""
    );
    assert_eq!(
        error(verdict(None, true, 502, &head, show)),
        "no answer from the EndpointPicker (status: 502, see the upstream error above); no endpoint"
    );
}

#[test]
fn an_epp_refusal_or_bad_stream_shows_its_reason_bounded() {
    let head = BodyHead::default();
    let no = Answer::Grpc(Outcome::NoEndpoint("grpc-status 14: busy".into()));
    assert_eq!(
        error(verdict(Some(&no), true, 0, &head, show)),
        "no endpoint from the EndpointPicker: grpc-status 14: busy"
    );
    let long = Answer::Grpc(Outcome::Malformed("m".repeat(REASON_SHOWN + 9)));
    let e = error(verdict(Some(&long), true, 0, &head, show));
    assert_eq!(
        e,
        format!(
            "the EndpointPicker's answer is malformed: {}; no endpoint",
            "m".repeat(REASON_SHOWN)
        )
    );
}

#[test]
fn an_immediate_response_is_answered_whole() {
    let headers = vec![("x-why".to_owned(), b"shed".to_vec())];
    let im = Answer::Grpc(Outcome::Immediate {
        status: 429,
        headers: headers.clone(),
        body: b"busy".to_vec(),
        dropped: 2,
    });
    let v = verdict(Some(&im), true, 0, &BodyHead::default(), show);
    assert_eq!(v, Verdict::Immediate { status: 429, headers: &headers, body: b"busy", dropped: 2 });
}

#[test]
fn missing_variables_are_named() {
    assert_eq!(missing(&[]), None);
    assert_eq!(
        missing(&["epp_host", "epp_internal_path"]).as_deref(),
        Some(
            "missing required variables $epp_host and $epp_internal_path (unset or empty in this location)"
        )
    );
    assert_eq!(
        missing(&["epp_internal_path"]).as_deref(),
        Some("missing required variable $epp_internal_path (unset or empty in this location)")
    );
}

#[test]
fn the_redirect_s_path_is_present_and_has_no_query() {
    assert_eq!(bad_path(b"/pool", show), None);
    assert_eq!(
        bad_path(b"", show).as_deref(),
        Some("missing required variable $epp_internal_path")
    );
    assert_eq!(
        bad_path(b"/pool?a=1", show).as_deref(),
        Some("$epp_internal_path \"/pool?a=1\" has a query string; the client's is kept")
    );
}
