//! The shim mode's own steps (`http_matches_epp http://URL`, NGF's `epp.js`): the call's
//! header lines and the answer's `X-Gateway-Destination-Endpoint`. The flow they plug into
//! is [`super::flow`]; what it does with the answer: `epp_proto::verdict`.

use ngx::ffi::{ngx_http_request_t, ngx_palloc, ngx_str_t, ngx_table_elt_t};

use epp_proto::DESTINATION;
use epp_proto::destination::joined;
use epp_proto::verdict::Answer;

use crate::epp::check::line;
use crate::util::lines;

const HOST_HEADER: &[u8] = b"X-EPP-Host";
const PORT_HEADER: &[u8] = b"X-EPP-Port";

/// The call's header lines, in the client request's pool: the client's (but `X-EPP-Host` and
/// `X-EPP-Port`), then `X-EPP-Host: host` and `X-EPP-Port: port`, pointing at the client's
/// strings and read-only statics (the proxy never writes request lines). `None`: out of memory.
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

/// The shim's status and endpoint lines.
///
/// # Safety
/// `sr` must be the call being finalized, its upstream non-null with a status (`status_n`).
pub(crate) unsafe fn read_answer(sr: *mut ngx_http_request_t) -> Answer {
    // SAFETY: the upstream's header list (zeroed with the upstream, initialized before its
    // status line was read) lives in the request's pool.
    unsafe {
        let h = &(*(*sr).upstream).headers_in;
        let endpoint = lines(&h.headers)
            .filter(|h| h.key.as_bytes().eq_ignore_ascii_case(DESTINATION.as_bytes()));
        Answer::Shim { status: h.status_n, endpoint: joined(endpoint.map(|h| h.value.as_bytes())) }
    }
}
