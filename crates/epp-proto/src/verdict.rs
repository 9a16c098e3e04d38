//! What the client's request does once its call is over, one rule for both `http_matches_epp`
//! framings ([`verdict`]): set the endpoint list, answer the client with the EPP's
//! `ImmediateResponse`, or log one `[error]` and go on with no endpoint. Only the reading of
//! the answer differs by framing ([`Answer`]). Pure: the module acts on the [`Verdict`].

use crate::Outcome;
use crate::destination::{BODY_SHOWN, BodyHead};

/// The variables the call reads (`$epp_host`, `$epp_port`: the shim's only) and the
/// redirect's target.
pub const VAR_HOST: &str = "epp_host";
pub const VAR_PORT: &str = "epp_port";
pub const VAR_PATH: &str = "epp_internal_path";

/// Bytes of an EPP's reason shown in an `[error]` line.
pub const REASON_SHOWN: usize = 512;

/// A call's answer as its framing read it (the call's first finalization with a status).
#[derive(Debug)]
pub enum Answer {
    /// The shim's status (not 0) and its `X-Gateway-Destination-Endpoint` lines
    /// ([`crate::destination::joined`]); its body's head is fed apart, as it arrives.
    Shim { status: usize, endpoint: Vec<u8> },
    /// The EPP protocol's stream, decoded.
    Grpc(Outcome),
}

/// What the client's request does after the call.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// Set `$inference_workload_endpoint` from this list (checked when set).
    Endpoint(&'a [u8]),
    /// Answer the client with the EPP's `ImmediateResponse`.
    Immediate { status: u16, headers: &'a [(String, Vec<u8>)], body: &'a [u8], dropped: usize },
    /// Log this `[error]` (after `http_matches_epp: `); no endpoint.
    Error(String),
}

/// The verdict on a call: its `answer` (`None`: there was none), whether it spoke the EPP
/// protocol (`grpc`), the first failing code it was finalized with (`rc`, 0: none), and the
/// shim answer's body head (`body`); `show` writes at most `max` bytes for the log.
pub fn verdict<'a>(
    answer: Option<&'a Answer>,
    grpc: bool,
    rc: isize,
    body: &BodyHead,
    show: impl Fn(&[u8], usize) -> String,
) -> Verdict<'a> {
    let reason = |s: &String| show(s.as_bytes(), REASON_SHOWN);
    Verdict::Error(match answer {
        None if grpc => format!(
            "no answer from the EndpointPicker (status: {rc}, see the upstream error above); \
             no endpoint"
        ),
        None => format!(
            "no answer from the EndpointPicker shim (status: {rc}, see the upstream error \
             above); body: \"\""
        ),
        Some(Answer::Shim { status: 200, endpoint }) if !endpoint.is_empty() => {
            return Verdict::Endpoint(endpoint);
        }
        Some(Answer::Shim { status, .. }) => {
            let (head, more) = body.shown();
            let more = if more { "...(more)" } else { "" };
            let failed = if rc != 0 { " (the answer failed: see the error above)" } else { "" };
            format!(
                "could not get specific inference endpoint from EndpointPicker; status: \
                 {status}; body: \"{}{more}\"{failed}",
                show(head, BODY_SHOWN)
            )
        }
        Some(Answer::Grpc(Outcome::Endpoint(e))) => return Verdict::Endpoint(e.as_bytes()),
        Some(Answer::Grpc(Outcome::Immediate { status, headers, body, dropped })) => {
            return Verdict::Immediate { status: *status, headers, body, dropped: *dropped };
        }
        Some(Answer::Grpc(Outcome::NoEndpoint(s))) => {
            format!("no endpoint from the EndpointPicker: {}", reason(s))
        }
        Some(Answer::Grpc(Outcome::Malformed(s))) => {
            format!("the EndpointPicker's answer is malformed: {}; no endpoint", reason(s))
        }
    })
}

/// Why the client's request cannot be served, if so: the variables its framing needs that
/// are `unset` (or empty; the gRPC framing needs only [`VAR_PATH`], and reads no other).
pub fn missing(unset: &[&str]) -> Option<String> {
    let names: Vec<String> = unset.iter().map(|n| format!("${n}")).collect();
    let s = if names.len() > 1 { "s" } else { "" };
    let what = "(unset or empty in this location)";
    let names = names.join(" and ");
    (!unset.is_empty()).then(|| format!("missing required variable{s} {names} {what}"))
}

/// Why `$epp_internal_path` (`path`, as evaluated) cannot be the redirect's target, if so.
pub fn bad_path(path: &[u8], show: impl Fn(&[u8], usize) -> String) -> Option<String> {
    if path.is_empty() {
        return Some("missing required variable $epp_internal_path".to_owned());
    }
    path.contains(&b'?').then(|| {
        format!(
            "$epp_internal_path \"{}\" has a query string; the client's is kept",
            show(path, 128)
        )
    })
}
