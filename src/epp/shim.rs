//! The shim mode's own steps (`http_matches_epp http://URL`, NGF's `epp.js`): the call's
//! header lines, the answer's `X-Gateway-Destination-Endpoint`, the `[error]` of an answer
//! with none. The flow they plug into is [`super::flow`].

use ngx::ffi::{
    NGX_LOG_ERR, ngx_http_request_t, ngx_int_t, ngx_palloc, ngx_str_t, ngx_table_elt_t, ngx_uint_t,
};
use ngx::ngx_log_error;

use epp_proto::DESTINATION;
use epp_proto::destination::{BODY_SHOWN, BodyHead, joined};

use crate::epp::check::{line, set_endpoint};
use crate::util::{escape, lines, pool_str};

const HOST_HEADER: &[u8] = b"X-EPP-Host";
const PORT_HEADER: &[u8] = b"X-EPP-Port";

/// What the shim answered (in the client's request context, zeroed: no answer).
pub(crate) struct Answer {
    /// The shim's status (0: no answer).
    status: ngx_uint_t,
    /// `X-Gateway-Destination-Endpoint` lines of the answer, joined with `, ` (a pool copy;
    /// len 0: none).
    endpoint: ngx_str_t,
    /// The start of the answer's body, fed by the call's body filter as the body arrives.
    pub(crate) body: BodyHead,
}

/// The header lines of the call, in the client request's pool: the client's lines (but its
/// `X-EPP-Host` and `X-EPP-Port`), then `X-EPP-Host: host` and `X-EPP-Port: port`. `None`: out
/// of memory. The elements point at the client's names and values (alive with its request)
/// and, for the two added lines, at the read-only statics `HOST_HEADER` / `PORT_HEADER` and
/// their lowercase literals: NGINX's proxy only reads `key`, `lowcase_key` and `value` of
/// request header lines, never writes them.
///
/// # Safety
/// `r` must be the client's request.
pub(crate) unsafe fn headers(
    r: *mut ngx_http_request_t,
    host: ngx_str_t,
    port: ngx_str_t,
) -> Option<(*mut ngx_table_elt_t, usize)> {
    // SAFETY: the client's header list is initialized (`lines`: a request's is); the new array
    // is allocated for all of them plus two and lives in the request's pool; all-zero bytes
    // are a valid ngx_table_elt_t (integers, null pointers, empty strings); the statics the
    // two added lines point at are never written (see above).
    unsafe {
        let mut lines: Vec<ngx_table_elt_t> = lines(&(*r).headers_in.headers)
            .filter(|h| {
                let name = h.key.as_bytes();
                !name.eq_ignore_ascii_case(HOST_HEADER) && !name.eq_ignore_ascii_case(PORT_HEADER)
            })
            .map(|h| core::ptr::read(h))
            .collect();
        lines.push(line(HOST_HEADER, b"x-epp-host", host));
        lines.push(line(PORT_HEADER, b"x-epp-port", port));
        let size = core::mem::size_of::<ngx_table_elt_t>();
        let elts = ngx_palloc((*r).pool, size * lines.len()) as *mut ngx_table_elt_t;
        if elts.is_null() {
            return None;
        }
        core::ptr::copy_nonoverlapping(lines.as_ptr(), elts, lines.len());
        Some((elts, lines.len()))
    }
}

/// Records the shim's status and endpoint lines (the first finalization of the call, with an
/// upstream status).
///
/// # Safety
/// `sr` must be the call being finalized, its upstream non-null.
pub(crate) unsafe fn record(sr: *mut ngx_http_request_t, a: &mut Answer) {
    // SAFETY: the upstream's header list (zeroed with the upstream, initialized before its
    // status line is read: `lines` may walk it) is NGINX's, alive with the request's pool;
    // the copy goes to the same pool.
    unsafe {
        let pool = (*sr).pool;
        let headers = &(*(*sr).upstream).headers_in.headers;
        a.status = (*(*sr).upstream).headers_in.status_n;
        let endpoint = lines(headers)
            .filter(|h| h.key.as_bytes().eq_ignore_ascii_case(DESTINATION.as_bytes()));
        if let Some(e) = pool_str(pool, &joined(endpoint.map(|h| h.value.as_bytes()))) {
            a.endpoint = e;
        }
    }
}

/// The client's request resumes: sets `$inference_workload_endpoint` (variable `index`) from
/// the answer, or logs why not (`rc`: the call's first failing code).
///
/// # Safety
/// `r` must be the client's request, `a` its call's answer.
pub(crate) unsafe fn conclude(
    r: *mut ngx_http_request_t,
    a: &Answer,
    rc: ngx_int_t,
    index: ngx_uint_t,
) {
    // SAFETY: the answer's strings live in the request's pool.
    unsafe {
        let log = (*(*r).connection).log;
        if a.status == 200 && a.endpoint.len > 0 {
            set_endpoint(r, index, a.endpoint);
        } else if a.status != 0 {
            let (body, more) = a.body.shown();
            let more = if more { "...(more)" } else { "" };
            let failed = if rc != 0 { " (the answer failed: see the error above)" } else { "" };
            ngx_log_error!(
                NGX_LOG_ERR,
                log,
                "http_matches_epp: could not get specific inference endpoint from EndpointPicker; \
                 status: {}; body: \"{}{more}\"{failed}",
                a.status,
                escape(body, BODY_SHOWN)
            );
        } else {
            ngx_log_error!(
                NGX_LOG_ERR,
                log,
                "http_matches_epp: no answer from the EndpointPicker shim (status: {rc}, see the \
                 upstream error above); body: \"\""
            );
        }
    }
}
