//! The shim mode's own steps (`http_matches_epp http://URL`, NGF's `epp.js`): the call's
//! header lines, the answer's `X-Gateway-Destination-Endpoint`, the `[error]` of an answer
//! with none. The flow they plug into is [`super::flow`].

use ngx::ffi::{
    NGX_LOG_ERR, ngx_http_request_t, ngx_int_t, ngx_palloc, ngx_str_t, ngx_table_elt_t, ngx_uint_t,
};
use ngx::ngx_log_error;

use crate::epp::check::{line, set_endpoint};
use crate::util::{escape, lines, pool_str};

const ENDPOINT_HEADER: &[u8] = b"x-gateway-destination-endpoint";
const HOST_HEADER: &[u8] = b"X-EPP-Host";
const PORT_HEADER: &[u8] = b"X-EPP-Port";
/// Bytes of the shim's answer body shown in an `[error]` line.
const BODY_SHOWN: usize = 256;

/// What the shim answered (pool copies, zeroed: no answer).
pub(crate) struct Answer {
    /// The shim's status (0: no answer).
    status: ngx_uint_t,
    /// `X-Gateway-Destination-Endpoint` lines of the answer, joined with `, ` (len 0: none).
    endpoint: ngx_str_t,
    /// The start of the answer's body (at most `BODY_SHOWN + 1` bytes) and its length.
    body: ngx_str_t,
    body_len: usize,
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

/// Records the shim's answer (the first finalization of the call, with an upstream status).
///
/// # Safety
/// `sr` must be the call being finalized, its upstream non-null.
pub(crate) unsafe fn record(sr: *mut ngx_http_request_t, a: &mut Answer) {
    // SAFETY: the upstream's header list (zeroed with the upstream, initialized before its
    // status line is read: `lines` may walk it) and the call's output are NGINX's, alive
    // with the request's pool; the copies go to the same pool.
    unsafe {
        let pool = (*sr).pool;
        let headers = &(*(*sr).upstream).headers_in.headers;
        a.status = (*(*sr).upstream).headers_in.status_n;
        let mut joined: Vec<u8> = Vec::new();
        for h in lines(headers).filter(|h| h.key.as_bytes().eq_ignore_ascii_case(ENDPOINT_HEADER)) {
            if !joined.is_empty() {
                joined.extend_from_slice(b", ");
            }
            joined.extend_from_slice(h.value.as_bytes());
        }
        let body = output(sr);
        let shown = &body[..body.len().min(BODY_SHOWN + 1)];
        if let (Some(e), Some(b)) = (pool_str(pool, &joined), pool_str(pool, shown)) {
            (a.endpoint, a.body, a.body_len) = (e, b, body.len());
        }
    }
}

/// The client's request resumes: sets `$inference_workload_endpoint` (variable `index`) from
/// the answer, or logs why not (`rc`: the call's first failing code; `cut`: its answer was
/// longer than subrequest_output_buffer_size).
///
/// # Safety
/// `r` must be the client's request, `a` its call's answer.
pub(crate) unsafe fn conclude(
    r: *mut ngx_http_request_t,
    a: &Answer,
    (rc, cut): (ngx_int_t, bool),
    index: ngx_uint_t,
) {
    // SAFETY: the answer's strings live in the request's pool.
    unsafe {
        let log = (*(*r).connection).log;
        if a.status == 200 && a.endpoint.len > 0 {
            set_endpoint(r, index, a.endpoint);
        } else if a.status != 0 {
            let body = a.body.as_bytes();
            let more = if a.body_len > BODY_SHOWN {
                format!("...({} bytes)", a.body_len)
            } else {
                String::new()
            };
            let cut = if cut {
                " (the answer's body is longer than subrequest_output_buffer_size: not read)"
            } else if rc != 0 {
                " (the answer failed: see the error above)"
            } else {
                ""
            };
            ngx_log_error!(
                NGX_LOG_ERR,
                log,
                "http_matches_epp: could not get specific inference endpoint from EndpointPicker; \
                 status: {}; body: \"{}{more}\"{cut}",
                a.status,
                escape(&body[..body.len().min(BODY_SHOWN)], BODY_SHOWN)
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

/// The shim's answer as the in-memory subrequest holds it (`sr->out`; empty: none).
///
/// # Safety
/// `sr` must be the call being finalized; the bytes live in its pool.
unsafe fn output<'a>(sr: *mut ngx_http_request_t) -> &'a [u8] {
    // SAFETY: `sr->out->buf` is the memory filter's one temporary buffer, holding `last - pos`
    // initialized bytes from `pos` on (`max(0)` guards the subtraction anyway).
    unsafe {
        let out = (*sr).out;
        if out.is_null() || (*out).buf.is_null() || (*(*out).buf).pos.is_null() {
            return &[];
        }
        let b = &*(*out).buf;
        core::slice::from_raw_parts(b.pos, b.last.offset_from(b.pos).max(0) as usize)
    }
}
