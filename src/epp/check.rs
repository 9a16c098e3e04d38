//! What both `http_matches_epp` modes do to the call (its own header list) and with its answer
//! (`$inference_workload_endpoint`: every element `ip:port`, the first one used).

use ngx::ffi::{
    NGX_LOG_ERR, NGX_LOG_INFO, ngx_hash_key, ngx_http_request_t, ngx_list_part_t, ngx_str_t,
    ngx_table_elt_t, ngx_uint_t,
};
use ngx::ngx_log_error;

use crate::util::escape;

/// Makes `lines` (from `shim::headers`) the subrequest's header list. Cannot fail.
///
/// # Safety
/// `sr` must be a subrequest just created (its `headers_in` a copy of its parent's), `lines`
/// an array of that many initialized elements in the parent's pool.
pub(crate) unsafe fn install_headers(
    sr: *mut ngx_http_request_t,
    lines: (*mut ngx_table_elt_t, usize),
) {
    // SAFETY: `sr` is pool memory and never moves, so its list may point at its own first
    // part; the array outlives the subrequest (the parent's pool).
    unsafe {
        let (elts, n) = lines;
        let list = &mut (*sr).headers_in.headers;
        list.part = ngx_list_part_t { elts: elts.cast(), nelts: n, next: core::ptr::null_mut() };
        list.last = &mut list.part;
        list.size = core::mem::size_of::<ngx_table_elt_t>();
        list.nalloc = n;
        list.pool = (*(*sr).parent).pool;
    }
}

/// Sets `$inference_workload_endpoint` (variable `index`) to the first endpoint of the shim's
/// `list`, or logs why the list is refused (the variable stays empty).
///
/// # Safety
/// `r` must be the client's request; `endpoint` lives in its pool.
pub(crate) unsafe fn set_endpoint(
    r: *mut ngx_http_request_t,
    index: ngx_uint_t,
    endpoint: ngx_str_t,
) {
    // SAFETY: `index` is an indexed variable of the request's configuration; the value points
    // into `endpoint`, pool memory of the request.
    unsafe {
        let log = (*(*r).connection).log;
        let list = endpoint.as_bytes();
        match epp_proto::destination::first(list) {
            Ok(at) => {
                let v = &mut *(*r).variables.add(index);
                crate::util::var::set(v, endpoint.data.add(at.start), at.len());
                crate::epp::endpoints::set_list(r, endpoint);
                ngx_log_error!(
                    NGX_LOG_INFO,
                    log,
                    "http_matches_epp: found inference endpoint from EndpointPicker: {}",
                    escape(list, 256)
                );
            }
            Err(why) => {
                ngx_log_error!(
                    NGX_LOG_ERR,
                    log,
                    "http_matches_epp: the EndpointPicker's X-Gateway-Destination-Endpoint \"{}\" \
                     is not an ip:port list ({}); no endpoint",
                    escape(list, 256),
                    epp_proto::endpoints::Refusal::NotIpPort(why)
                );
            }
        }
    }
}

/// A request header line over static `name`, `lower` (its lowercase) and `value`: NGINX's
/// proxies only read request header lines, never write them.
pub(crate) fn line(name: &'static [u8], lower: &'static [u8], value: ngx_str_t) -> ngx_table_elt_t {
    // SAFETY: all-zero bytes are a valid ngx_table_elt_t (integers, null pointers, empty
    // strings); zeroed, not a literal: Debian's 1.22 lacks `next` (null, as ngx_list_push'ed).
    let mut h: ngx_table_elt_t = unsafe { core::mem::zeroed() };
    // SAFETY: ngx_hash_key reads `lower.len()` bytes of `lower`.
    h.hash = unsafe { ngx_hash_key(lower.as_ptr().cast_mut(), lower.len()) };
    h.key = ngx_str_t { len: name.len(), data: name.as_ptr().cast_mut() };
    h.value = value;
    h.lowcase_key = lower.as_ptr().cast_mut();
    h
}
