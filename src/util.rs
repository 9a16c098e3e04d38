//! Small helpers over NGINX types.

use ngx::ffi::{
    ngx_conf_t, ngx_http_request_t, ngx_list_part_t, ngx_list_t, ngx_module_t, ngx_pnalloc,
    ngx_pool_t, ngx_str_t, ngx_table_elt_t,
};

/// The elements of an NGINX array of `T`.
///
/// # Safety
/// `a` must hold `nelts` initialized `T` at `elts` (or be empty), alive for `'a`.
pub(crate) unsafe fn array<'a, T>(a: &ngx::ffi::ngx_array_t) -> &'a [T] {
    if a.nelts == 0 || a.elts.is_null() {
        return &[];
    }
    // SAFETY: see the function's contract.
    unsafe { core::slice::from_raw_parts(a.elts as *const T, a.nelts) }
}

/// The request's log.
pub(crate) fn log(r: &ngx_http_request_t) -> *mut ngx::ffi::ngx_log_t {
    // SAFETY: every request has a connection with a log, alive as long as the request.
    unsafe { (*r.connection).log }
}

/// Logs `what` at `[emerg]` (with the configuration's file:line while parsing one) and
/// gives `failed`, the caller's way to fail the load.
pub(crate) fn emerg<T>(cf: *mut ngx_conf_t, failed: T, what: core::fmt::Arguments<'_>) -> T {
    ngx::ngx_conf_log_error!(ngx::ffi::NGX_LOG_EMERG, cf, "{what}");
    failed
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

/// `ngx_http_named_location` for `@name`, else `ngx_http_internal_redirect` keeping the
/// request's query string byte for byte (ngx's `Request::internal_redirect` would drop it).
///
/// # Safety
/// `r` must be a valid request in its content phase; `uri` alive as long as it.
pub(crate) unsafe fn redirect_keeping_args(
    r: *mut ngx_http_request_t,
    mut uri: ngx_str_t,
) -> ngx::ffi::ngx_int_t {
    // SAFETY: see the contract; NGINX copies what it keeps.
    unsafe {
        if uri.as_bytes().starts_with(b"@") {
            ngx::ffi::ngx_http_named_location(r, &mut uri)
        } else {
            let args: *mut ngx_str_t = &mut (*r).args;
            ngx::ffi::ngx_http_internal_redirect(r, &mut uri, args)
        }
    }
}

/// Leaves `value` allocated for the rest of the process, reachable from the static `slot`
/// (the module stays mapped: `-z nodelete`, build.rs). `black_box` uses what the swap read:
/// LTO deletes a static only ever written, and valgrind then calls the value lost.
pub(crate) fn leave_reachable<T>(slot: &core::sync::atomic::AtomicPtr<T>, value: T) {
    core::hint::black_box(
        slot.swap(Box::into_raw(Box::new(value)), core::sync::atomic::Ordering::Relaxed),
    );
}

/// Lossy text for log messages.
pub(crate) fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

pub(crate) use route_match::escape;

/// Every line of an NGINX header list in order, but those NGINX ignores (`hash == 0`).
///
/// # Safety
/// `list` must be an initialized NGINX list of `ngx_table_elt_t` (each part's `elts` holding
/// `nelts` of them, `next` null or another part), alive for `'r`; a zeroed list (no element,
/// no next part) is one.
pub(crate) unsafe fn lines<'r>(list: &'r ngx_list_t) -> Lines<'r> {
    Lines { elts: [].iter(), next: Some(&list.part) }
}

/// The iterator of [`lines`]: the elements of the current part, and the part after it.
pub(crate) struct Lines<'r> {
    elts: core::slice::Iter<'r, ngx_table_elt_t>,
    next: Option<&'r ngx_list_part_t>,
}

impl<'r> Iterator for Lines<'r> {
    type Item = &'r ngx_table_elt_t;

    #[inline]
    fn next(&mut self) -> Option<&'r ngx_table_elt_t> {
        loop {
            if let Some(h) = self.elts.next() {
                if h.hash != 0 {
                    return Some(h);
                }
                continue;
            }
            let p = self.next?;
            let elts = p.elts.cast::<ngx_table_elt_t>();
            self.elts = if p.nelts == 0 || elts.is_null() {
                [].iter()
            } else {
                // SAFETY: `elts` holds `nelts` initialized ngx_table_elt_t, alive for `'r`
                // (`lines`' contract).
                unsafe { core::slice::from_raw_parts(elts, p.nelts) }.iter()
            };
            // SAFETY: `next` is null or the next part of the same list, alive as long as it.
            self.next = unsafe { p.next.as_ref() };
        }
    }
}

/// The request's header lines (`r->headers_in.headers`) as (name, value), in arrival order.
pub(crate) fn header_lines(r: &ngx_http_request_t) -> impl Iterator<Item = (&[u8], &[u8])> {
    // SAFETY: a request is allocated zeroed and NGINX initializes its header list before
    // reading the first header line; its elements live in the request's pool.
    unsafe { lines(&r.headers_in.headers) }.map(|h| (h.key.as_bytes(), h.value.as_bytes()))
}

/// Every module of the cycle being configured, with its name, in the order their hooks run.
///
/// # Safety
/// During configuration: `cf->cycle->modules` is the null-terminated array of every module,
/// each with a NUL-terminated `name` (or null), alive with the cycle.
pub(crate) unsafe fn modules<'a>(
    cf: *mut ngx_conf_t,
) -> impl Iterator<Item = (&'a core::ffi::CStr, *mut ngx_module_t)> {
    // SAFETY: see the contract.
    let mut m = unsafe { (*(*cf).cycle).modules };
    core::iter::from_fn(move || {
        // SAFETY: see the contract; `m` stays within the array (stops at its null end).
        unsafe {
            while !m.is_null() && !(*m).is_null() {
                let module = *m;
                m = m.add(1);
                if !(*module).name.is_null() {
                    return Some((core::ffi::CStr::from_ptr((*module).name), module));
                }
            }
        }
        None
    })
}

/// `ngx_variable_value_t`'s first word (`len:28, valid:1, no_cacheable:1, not_found:1,
/// escape:1`) read and written at once: bindgen's accessors move a bit per loop iteration,
/// ~1,000 instructions per redirected request (callgrind). [`layout_ok`], checked at load,
/// compares them with bindgen's.
pub(crate) mod var {
    use ngx::ffi::ngx_variable_value_t;

    const LEN: u32 = 0x0fff_ffff;
    const VALID: u32 = 1 << 28;
    const NOT_FOUND: u32 = 1 << 30;

    fn word(v: &ngx_variable_value_t) -> u32 {
        // SAFETY: ngx_variable_value_t is repr(C) and begins with its 4-byte bitfield unit
        // (the align marker before it is zero-sized); the struct is 8-aligned.
        unsafe { core::ptr::from_ref(v).cast::<u32>().read() }
    }

    /// The value when it is valid, found and non-empty.
    pub(crate) fn get(v: &ngx_variable_value_t) -> Option<&[u8]> {
        let w = word(v);
        let len = (w & LEN) as usize;
        if w & (VALID | NOT_FOUND) != VALID || len == 0 || v.data.is_null() {
            return None;
        }
        // SAFETY: a valid, found variable value holds `len` bytes at `data`, alive as long as
        // the request (or configuration) it belongs to, which `v` borrows from.
        Some(unsafe { core::slice::from_raw_parts(v.data, len) })
    }

    /// The value of the indexed variable `index` as NGINX evaluates it (its getter runs when
    /// nothing did before), when valid, found and non-empty.
    ///
    /// # Safety
    /// `r` must be a valid request and `index` an indexed variable of its configuration; the
    /// value lives in the request (or the configuration) as long as `r`.
    pub(crate) unsafe fn evaluated<'r>(
        r: *mut ngx::ffi::ngx_http_request_t,
        index: ngx::ffi::ngx_uint_t,
    ) -> Option<&'r [u8]> {
        // SAFETY: see the contract; the result is null or a value owned by the request.
        get(unsafe { ngx::ffi::ngx_http_get_indexed_variable(r, index).as_ref()? })
    }

    /// Sets a valid, cacheable, found value of `len` bytes at `data` (`len` < 2^28, which
    /// NGINX's own `len:28` also assumes).
    pub(crate) fn set(v: &mut ngx_variable_value_t, data: *mut u8, len: usize) {
        // SAFETY: as in `word`; the whole word is this struct's bitfields.
        unsafe { core::ptr::from_mut(v).cast::<u32>().write((len as u32 & LEN) | VALID) };
        v.data = data;
    }

    /// Whether the word layout assumed above is the one bindgen describes for this build.
    pub(crate) fn layout_ok() -> bool {
        // SAFETY: all-zero bytes are a valid ngx_variable_value_t (null data, no flags).
        let mut v: ngx_variable_value_t = unsafe { core::mem::zeroed() };
        v.set_len(0x0abc_def1 & LEN);
        v.set_valid(1);
        v.set_not_found(1);
        let read_back = word(&v) == (0x0abc_def1 & LEN) | VALID | NOT_FOUND;
        // SAFETY: as above.
        let mut w: ngx_variable_value_t = unsafe { core::mem::zeroed() };
        set(&mut w, core::ptr::null_mut(), 5);
        read_back
            && w.len() == 5
            && w.valid() == 1
            && w.not_found() == 0
            && w.no_cacheable() == 0
            && w.escape() == 0
    }
}
