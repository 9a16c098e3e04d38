//! `http_matches_epp grpc://ADDRESS;`: the Endpoint Picker protocol (`epp_proto`) through
//! NGINX's gRPC proxy, in [`super::flow`]'s path. The call ([`prepare`], [`reached`]) is a POST
//! of the `request_headers` message and the client's body framed in place (buffers or temp-file
//! ranges, never copied); its answer feeds a bounded `epp_proto::Decoder` as it arrives
//! ([`swallow`], [`read_answer`]); an `ImmediateResponse` is answered here ([`answer`]).

use ngx::ffi::{
    NGX_ERROR, NGX_HTTP_INTERNAL_SERVER_ERROR, NGX_HTTP_LAST, NGX_HTTP_POST, NGX_LOG_INFO,
    NGX_LOG_WARN, NGX_OK, ngx_alloc_chain_link, ngx_buf_t, ngx_chain_t, ngx_http_clean_header,
    ngx_http_output_filter, ngx_http_request_body_t, ngx_http_request_t, ngx_http_send_header,
    ngx_http_send_special, ngx_int_t, ngx_list_push, ngx_palloc, ngx_pcalloc, ngx_pool_cleanup_add,
    ngx_pool_t, ngx_str_t, ngx_table_elt_t, ngx_uint_t,
};
use ngx::ngx_log_error;

use epp_proto::{Decoder, MAX_MESSAGE, Outcome, Span};

use crate::epp::check::line;
use crate::util::{header_lines, lines, pool_str};

/// What the subrequest needs, all in the client request's pool, made before it exists (so
/// that nothing can fail once it is posted); all null (zeroed): not a gRPC call.
pub(crate) struct Prepared {
    body: *mut ngx_http_request_body_t,
    /// Two lines: the call's list (`content-type`), then `te` (see [`reached`]).
    lines: *mut ngx_table_elt_t,
    /// The answer's decoder (taken by [`read_answer`]), fed by [`swallow`].
    pub(crate) decoder: *mut Option<Decoder>,
}

/// One piece of the client's body as NGINX holds it.
#[derive(Clone, Copy)]
enum Segment {
    Memory(*mut u8),
    File(*mut ngx_buf_t),
}

/// The client's body as segments (in order) and their lengths.
///
/// # Safety
/// `r` must be the client's request, its body read.
unsafe fn segments(r: *mut ngx_http_request_t) -> (Vec<Segment>, Vec<usize>) {
    let (mut segs, mut lens) = (Vec::new(), Vec::new());
    // SAFETY: `r->request_body` is null or NGINX's body, whose `bufs` chain holds buffers in
    // memory (`pos..last`) or ranges of its temp file (`file_pos..file_last`), alive with
    // the request.
    unsafe {
        let rb = (*r).request_body;
        let mut cl = if rb.is_null() { core::ptr::null_mut() } else { (*rb).bufs };
        while !cl.is_null() {
            let b = (*cl).buf;
            if (*b).in_file() != 0 {
                segs.push(Segment::File(b));
                lens.push(((*b).file_last - (*b).file_pos).max(0) as usize);
            } else if !(*b).pos.is_null() {
                segs.push(Segment::Memory((*b).pos));
                lens.push((*b).last.offset_from((*b).pos).max(0) as usize);
            }
            cl = (*cl).next;
        }
    }
    (segs, lens)
}

/// The pseudo-headers Envoy sends first: `:method`, `:path` (the request target as the
/// client sent it), `:authority` (the `Host` line), `:scheme`.
///
/// # Safety
/// `r` must be the client's request.
unsafe fn pseudo_headers<'r>(r: *mut ngx_http_request_t) -> Vec<(&'r [u8], &'r [u8])> {
    // SAFETY: the request's strings, its `Host` line and its connection live as long as it.
    unsafe {
        let path = if (*r).unparsed_uri.len > 0 { &(*r).unparsed_uri } else { &(*r).uri };
        let mut out =
            vec![(&b":method"[..], (*r).method_name.as_bytes()), (b":path", path.as_bytes())];
        let host = (*r).headers_in.host;
        if !host.is_null() {
            out.push((b":authority", (*host).value.as_bytes()));
        }
        // `https` on a TLS connection (an HTTP/2 stream's copy carries `ssl`), else `http`
        // (always, without the SSL module).
        #[cfg(ngx_feature = "http_ssl")]
        let tls = !(*(*r).connection).ssl.is_null();
        #[cfg(not(ngx_feature = "http_ssl"))]
        let tls = false;
        out.push((b":scheme", if tls { b"https" } else { b"http" }));
        out
    }
}

/// A buffer in the pool over `pos..pos+len` (read-only memory), or over the range
/// `offset..offset+len` of the file buffer `file`.
///
/// # Safety
/// `r` must be valid; the memory or file must outlive the request.
unsafe fn slice_buf(
    r: *mut ngx_http_request_t,
    segment: Segment,
    offset: usize,
    len: usize,
) -> *mut ngx_buf_t {
    // SAFETY: a zeroed ngx_buf_t is an empty buffer; the fields set describe memory inside
    // the segment (`offset + len` within its length: by `request_stream`, or a whole pool copy) or a
    // range of its file.
    unsafe {
        let b = ngx_pcalloc((*r).pool, core::mem::size_of::<ngx_buf_t>()) as *mut ngx_buf_t;
        if b.is_null() {
            return b;
        }
        match segment {
            Segment::Memory(pos) => {
                (*b).start = pos.add(offset);
                (*b).pos = (*b).start;
                (*b).last = (*b).pos.add(len);
                (*b).end = (*b).last;
                (*b).set_memory(1);
            }
            Segment::File(f) => {
                (*b).file = (*f).file;
                (*b).file_pos = (*f).file_pos + offset as i64;
                (*b).file_last = (*b).file_pos + len as i64;
                (*b).set_in_file(1);
            }
        }
        b
    }
}

/// The request stream's chain (`epp_proto::request_stream`: the headers message, then the
/// body's messages, the body's bytes where they lie) and the body's length. `Err`: why not.
///
/// # Safety
/// `r` must be the client's request, its body read.
unsafe fn request_chain(r: *mut ngx_http_request_t) -> Result<(*mut ngx_chain_t, usize), String> {
    // SAFETY: the client's header lines and body live as long as its request; every buffer
    // and link is allocated in its pool.
    unsafe {
        let (segs, lens) = segments(r);
        let lines = pseudo_headers(r).into_iter().chain(header_lines(&*r));
        let stream = epp_proto::request_stream(lines, &lens).map_err(|e| e.to_string())?;
        let oom = || "out of memory".to_owned();
        let own = pool_str((*r).pool, &stream.own).ok_or_else(oom)?;
        let mut chain: *mut ngx_chain_t = core::ptr::null_mut();
        for span in stream.spans.iter().rev() {
            let b = match *span {
                Span::Own { offset, len } => slice_buf(r, Segment::Memory(own.data), offset, len),
                Span::Slice { segment, offset, len } => slice_buf(r, segs[segment], offset, len),
            };
            let cl = ngx_alloc_chain_link((*r).pool);
            if b.is_null() || cl.is_null() {
                return Err(oom());
            }
            cl.write(ngx_chain_t { buf: b, next: chain });
            chain = cl;
        }
        Ok((chain, lens.iter().sum()))
    }
}

/// Everything the call needs, before the subrequest exists. `Err`: why there is no call.
///
/// # Safety
/// `r` must be the client's request, its body read.
pub(crate) unsafe fn prepare(r: *mut ngx_http_request_t) -> Result<Prepared, String> {
    // SAFETY: pool allocations of the client's request, filled before use.
    unsafe {
        let (bufs, total) = request_chain(r)?;
        let body = ngx_pcalloc((*r).pool, core::mem::size_of::<ngx_http_request_body_t>())
            as *mut ngx_http_request_body_t;
        let lines = ngx_palloc((*r).pool, 2 * size_of::<ngx_table_elt_t>()) as *mut ngx_table_elt_t;
        let budget = epp_proto::answer_budget(total);
        let decoder = keep((*r).pool, Some(Decoder::with_budget(MAX_MESSAGE, budget)));
        if body.is_null() || lines.is_null() || decoder.is_null() {
            return Err("out of memory".to_owned());
        }
        let text = |v: &'static [u8]| ngx_str_t { len: v.len(), data: v.as_ptr().cast_mut() };
        lines.write(line(b"Content-Type", b"content-type", text(b"application/grpc")));
        lines.add(1).write(line(b"TE", b"te", text(b"trailers")));
        (*body).bufs = bufs;
        Ok(Prepared { body, lines, decoder })
    }
}

/// The call reached the location: its own body and lines (`te: trailers`, forwarded from
/// `headers_in.te`), no length, POST to `epp_proto::GRPC_PATH`. Cannot fail. Not at creation:
/// the phases before see the client's method and lines, as the parent did.
///
/// # Safety
/// `sr` must be the subrequest in its content handler, `p` from [`prepare`] for its parent.
pub(crate) unsafe fn reached(sr: *mut ngx_http_request_t, p: &Prepared) {
    let path = epp_proto::GRPC_PATH;
    // SAFETY: the subrequest's upstream is not created yet; everything set lives in the pool
    // or is a read-only static (the gRPC proxy only reads `r->uri`).
    unsafe {
        (*sr).request_body = p.body;
        (*sr).headers_in.content_length = core::ptr::null_mut();
        (*sr).headers_in.content_length_n = -1;
        (*sr).headers_in.te = p.lines.add(1);
        (*sr).method = NGX_HTTP_POST as ngx_uint_t;
        (*sr).method_name = ngx_str_t { len: 4, data: c"POST".as_ptr().cast::<u8>().cast_mut() };
        crate::epp::check::install_headers(sr, (p.lines, 1));
        (*sr).uri = ngx_str_t { len: path.len(), data: path.as_ptr().cast_mut() };
        (*sr).set_valid_unparsed_uri(0);
    }
}

/// The call's body filter: its output is consumed here, never passed on; an EPP answer (200)
/// is fed to `decoder` first. `u->length = 0` ends the call (its connection not kept) once
/// nothing more is read: past the decoder's budget, once it has its outcome, or at once for an
/// answer that is not the EPP's (another status: a proxy's error page).
///
/// # Safety
/// `sr` must be a gRPC call, `decoder` its [`Prepared::decoder`], `chain` NGINX's output chain.
pub(crate) unsafe fn swallow(
    sr: *mut ngx_http_request_t,
    decoder: *mut Option<Decoder>,
    chain: *mut ngx_chain_t,
) {
    // SAFETY: the chain's links and buffers are NGINX's (`pos..last` initialized memory of a
    // buffer not in a file); the upstream, if any, is the call's.
    unsafe {
        let u = (*sr).upstream;
        let answer = !u.is_null() && (*u).headers_in.status_n == 200;
        let mut decoder = if answer { (*decoder).as_mut() } else { None };
        consume(chain, |bytes| decoder.as_deref_mut().map_or((), |d| d.feed(bytes)));
        if !u.is_null() && decoder.is_none_or(|d| d.done()) {
            (*u).length = 0;
        }
    }
}

/// Marks every memory buffer of `chain` as read (`pos = last`), after `read` saw its bytes:
/// the proxies reuse them only once they are (both calls are unbuffered: no temp file).
///
/// # Safety
/// `chain` must be NGINX's output chain (null: none).
pub(crate) unsafe fn consume(mut chain: *mut ngx_chain_t, mut read: impl FnMut(&[u8])) {
    // SAFETY: the chain's links and buffers are NGINX's (`pos..last` initialized memory of a
    // buffer not in a file); only `pos` is moved, within the buffer.
    unsafe {
        while !chain.is_null() {
            let b = (*chain).buf;
            if !b.is_null() && (*b).in_file() == 0 && !(*b).pos.is_null() {
                let len = (*b).last.offset_from((*b).pos).max(0) as usize;
                read(core::slice::from_raw_parts((*b).pos, len));
                (*b).pos = (*b).last;
            }
            chain = (*chain).next;
        }
    }
}

/// Decodes the call's answer from what [`swallow`] fed `decoder`.
///
/// # Safety
/// `sr` must be the call being finalized, its upstream non-null with a status (`status_n`);
/// `decoder` its [`Prepared::decoder`] (null: the call lost its context).
pub(crate) unsafe fn read_answer(
    sr: *mut ngx_http_request_t,
    decoder: *mut Option<Decoder>,
) -> Outcome {
    // SAFETY: the upstream's header lists (zeroed with it, initialized before its status line
    // was read) and the decoder live in the request's pool.
    unsafe {
        let h = &(*(*sr).upstream).headers_in;
        let taken = if decoder.is_null() { None } else { (*decoder).take() };
        let field = |trailers: bool, name: &[u8]| {
            let list = if trailers { &h.trailers } else { &h.headers };
            (lines(list).find(|h| h.key.as_bytes().eq_ignore_ascii_case(name)))
                .map(|h| h.value.as_bytes())
        };
        let lines = match field(true, b"grpc-status") {
            Some(code) => (Some(code), field(true, b"grpc-message")),
            None => (field(false, b"grpc-status"), field(false, b"grpc-message")),
        };
        // Not read: a panic in the body filter, or a call moved off its location.
        epp_proto::answer_outcome(h.status_n, taken, lines)
    }
}

/// `value` moved into `pool`, dropped with it; null when out of memory (ngx 0.5's
/// `Pool::allocate` would write through the null pointer).
///
/// # Safety
/// `pool` must be a live pool; `T` at most word-aligned, its drop not panicking.
pub(crate) unsafe fn keep<T>(pool: *mut ngx_pool_t, value: T) -> *mut T {
    unsafe extern "C" fn drop_value<T>(data: *mut core::ffi::c_void) {
        // SAFETY: `data` is the `T` written by `keep`; NGINX runs a cleanup once, when the
        // pool is destroyed (dropping strings and vectors does not panic).
        unsafe { core::ptr::drop_in_place(data.cast::<T>()) }
    }
    const { assert!(core::mem::align_of::<T>() <= core::mem::size_of::<usize>()) };
    // SAFETY: a cleanup with room for one `T` (NGINX aligns pool allocations to
    // `NGX_ALIGNMENT`, a word, at least `T`'s alignment), written before its handler is set.
    unsafe {
        let cln = ngx_pool_cleanup_add(pool, core::mem::size_of::<T>());
        if cln.is_null() {
            return core::ptr::null_mut();
        }
        let at = (*cln).data.cast::<T>();
        at.write(value);
        (*cln).handler = Some(drop_value::<T>);
        at
    }
}

/// Sets the client's status, length and the `ImmediateResponse`'s lines; `false`: out of
/// memory, with some of them set.
///
/// # Safety
/// `r` must be the client's request, nothing sent to it yet.
unsafe fn set_headers(
    r: *mut ngx_http_request_t,
    status: u16,
    headers: &[(String, Vec<u8>)],
    len: usize,
) -> bool {
    // SAFETY: the request's output headers list and pool; every string is a pool copy.
    unsafe {
        let pool = (*r).pool;
        (*r).headers_out.status = ngx_uint_t::from(status);
        (*r).headers_out.content_length_n = len as i64;
        for (name, value) in headers.iter().filter(|(n, v)| epp_proto::response_header_ok(n, v)) {
            let (Some(key), Some(val), Some(low)) = (
                pool_str(pool, name.as_bytes()),
                pool_str(pool, value),
                pool_str(pool, name.to_ascii_lowercase().as_bytes()),
            ) else {
                return false;
            };
            if name.eq_ignore_ascii_case("content-type") {
                (*r).headers_out.content_type = val;
                (*r).headers_out.content_type_len = val.len;
                continue;
            }
            let h = ngx_list_push(&mut (*r).headers_out.headers) as *mut ngx_table_elt_t;
            if h.is_null() {
                return false;
            }
            h.write(core::mem::zeroed());
            (*h).hash = 1;
            (*h).key = key;
            (*h).value = val;
            (*h).lowcase_key = low.data;
        }
        true
    }
}

/// Answers the client with an `ImmediateResponse`: its status, headers and body (`dropped`:
/// its header lines past the decoder's bounds, logged).
///
/// # Safety
/// `r` must be the client's request, nothing sent to it yet.
pub(crate) unsafe fn answer(
    r: *mut ngx_http_request_t,
    status: u16,
    headers: &[(String, Vec<u8>)],
    body: &[u8],
    dropped: usize,
) -> ngx_int_t {
    let fail = NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
    // SAFETY: the request's output headers and pool; the body buffer is a pool copy, marked
    // as the last.
    unsafe {
        let log = (*(*r).connection).log;
        let what = "http_matches_epp: the EndpointPicker answered the request";
        ngx_log_error!(NGX_LOG_INFO, log, "{what}: {status}");
        if dropped > 0 {
            ngx_log_error!(
                NGX_LOG_WARN,
                log,
                "http_matches_epp: the EndpointPicker's immediate response has {dropped} header \
                 lines past {} lines or {} bytes: not sent",
                epp_proto::msg::IMMEDIATE_LINES,
                epp_proto::msg::IMMEDIATE_HEADER_BYTES
            );
        }
        // Everything allocated before anything is set or sent.
        let Some(data) = pool_str((*r).pool, body) else { return fail };
        let b = slice_buf(r, Segment::Memory(data.data), 0, data.len);
        if b.is_null() {
            return fail;
        }
        if !set_headers(r, status, headers, body.len()) {
            // NGINX's 500 page keeps the output header list: none of the EPP's lines on it.
            ngx_http_clean_header(r);
            return fail;
        }
        let rc = ngx_http_send_header(r);
        if rc == NGX_ERROR as ngx_int_t || rc > NGX_OK as ngx_int_t || (*r).header_only() != 0 {
            return rc;
        }
        if body.is_empty() {
            return ngx_http_send_special(r, NGX_HTTP_LAST as ngx_uint_t);
        }
        (*b).set_last_buf(1);
        (*b).set_last_in_chain(1);
        let mut out = ngx_chain_t { buf: b, next: core::ptr::null_mut() };
        ngx_http_output_filter(r, &mut out)
    }
}
