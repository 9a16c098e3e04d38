//! Small helpers over NGINX types.

use ngx::ffi::{ngx_conf_t, ngx_pnalloc, ngx_pool_t, ngx_str_t};

/// The arguments of the directive being parsed (`[0]` is the directive name).
///
/// # Safety
/// `cf` must be the configuration context NGINX passed to a directive handler.
pub(crate) unsafe fn conf_args<'a>(cf: *mut ngx_conf_t) -> &'a [ngx_str_t] {
    // SAFETY: during a directive handler `cf->args` is an array of `ngx_str_t` with `nelts`
    // initialized elements, alive until the handler returns (the caller's lifetime).
    unsafe {
        let args = &*(*cf).args;
        if args.nelts == 0 || args.elts.is_null() {
            return &[];
        }
        core::slice::from_raw_parts(args.elts as *const ngx_str_t, args.nelts)
    }
}

/// "file:line" of the directive being parsed, for messages logged later (merge, postconfig).
///
/// # Safety
/// `cf` must be a configuration context that is currently parsing a file.
pub(crate) unsafe fn conf_where(cf: *mut ngx_conf_t) -> String {
    // SAFETY: while parsing, `cf->conf_file` points at the file being read.
    unsafe {
        let file = (*cf).conf_file;
        if file.is_null() {
            return "(command line)".to_owned();
        }
        let name = String::from_utf8_lossy((*file).file.name.as_bytes()).into_owned();
        format!("{name}:{}", (*file).line)
    }
}

/// Copies `bytes` into `pool`; `None` when the pool is out of memory.
///
/// # Safety
/// `pool` must be a live NGINX pool; the copy lives as long as it.
pub(crate) unsafe fn pool_str(pool: *mut ngx_pool_t, bytes: &[u8]) -> Option<ngx_str_t> {
    if bytes.is_empty() {
        return Some(ngx_str_t { len: 0, data: core::ptr::null_mut() });
    }
    // SAFETY: `ngx_pnalloc` returns `bytes.len()` writable bytes (or null) from a live pool.
    unsafe {
        let data = ngx_pnalloc(pool, bytes.len()) as *mut u8;
        if data.is_null() {
            return None;
        }
        core::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len());
        Some(ngx_str_t { len: bytes.len(), data })
    }
}

/// Lossy text for log messages.
pub(crate) fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}
