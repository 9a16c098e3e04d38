//! The call both `http_matches_epp` modes make, as `auth_request` does: the client's body
//! read, a waited subrequest to the request's own URI (served by the location's saved proxy or
//! gRPC handler), its answer recorded ([`call_done`], once even when NGINX finalizes it twice),
//! the client's request resumed and redirected to `$epp_internal_path` whatever the answer.
//! [`body_filter`] consumes the call's output as it arrives (no answer is too big) and ends the
//! call once it has what it keeps. Mode steps: [`super::shim`], [`super::grpc`]; README.

use core::ffi::{CStr, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};

use ngx::ffi::{
    NGX_DONE, NGX_ERROR, NGX_HTTP_CLIENT_CLOSED_REQUEST, NGX_HTTP_INTERNAL_SERVER_ERROR,
    NGX_HTTP_SPECIAL_RESPONSE, NGX_HTTP_SUBREQUEST_IN_MEMORY, NGX_HTTP_SUBREQUEST_WAITED,
    NGX_LOG_ALERT, NGX_LOG_ERR, NGX_OK, ngx_chain_t, ngx_conf_t, ngx_http_finalize_request,
    ngx_http_post_subrequest_t, ngx_http_read_client_request_body, ngx_http_request_empty_handler,
    ngx_http_request_t, ngx_http_subrequest, ngx_int_t, ngx_palloc, ngx_pcalloc, ngx_str_t,
    ngx_uint_t,
};
use ngx::http::{HttpModule, HttpModuleLocationConf, HttpModuleMainConf};
use ngx::ngx_log_error;

use epp_proto::Outcome;
use epp_proto::destination::BodyHead;
use epp_proto::verdict::{self, Answer, VAR_HOST, VAR_PATH, VAR_PORT, Verdict};

use crate::epp::check::{install_headers, set_endpoint};
use crate::epp::grpc::{self, keep};
use crate::epp::shim;
use crate::util::{emerg, escape, log, pool_str, var};
use crate::{HttpMatchesModule, guard};

/// An empty string (no data).
const EMPTY: ngx_str_t = ngx_str_t { len: 0, data: core::ptr::null_mut() };

/// The module's request context (`r->ctx`, pool memory, zeroed): the client's (`call` null)
/// and its call's (`call` points at the client's).
#[repr(C)]
pub(crate) struct Ctx {
    /// In the subrequest: the client request's context.
    call: *mut Ctx,
    /// The subrequest reached this location's handler (its URI may map elsewhere).
    reached: bool,
    /// The subrequest is finished (the post-subrequest handler ran).
    done: bool,
    /// The first failing code the subrequest was finalized with (0 if none).
    rc: ngx_int_t,
    /// The call's answer, either framing (in the request's pool; null: none).
    answer: *mut Answer,
    /// The start of a shim's answer body, fed by [`body_filter`] as it arrives.
    body: BodyHead,
    /// `$epp_internal_path`, read when the request arrived.
    path: ngx_str_t,
    /// In the client's request: the call (null until it is made).
    sr: *mut ngx_http_request_t,
    /// The call speaks the EPP protocol (`grpc://`, see `epp::grpc`), not the shim's.
    grpc: bool,
    /// In a gRPC call: what `grpc::reached` installs once it reached its location.
    prepared: grpc::Prepared,
}

/// The body filter after ours (`ngx_http_output_body_filter_pt`, as a number; 0: none).
static NEXT_BODY_FILTER: AtomicUsize = AtomicUsize::new(0);

/// Puts [`body_filter`] on top of NGINX's body filter chain; `false`, with an `[emerg]`, when
/// this module's postconfiguration does not run after the postpone filter's (every build runs
/// it after: `load_module` appends the .so; the addon `config` declares a filter module).
///
/// # Safety
/// Only from the http block's postconfiguration.
pub(crate) unsafe fn register_filter(cf: *mut ngx_conf_t) -> bool {
    // SAFETY: during configuration `cf->cycle->modules` is the null-terminated module list;
    // the chain's head is NGINX's global, set by each filter's postconfiguration in turn.
    unsafe {
        // Positions in the list (the order postconfigurations run in), not `index`es (a
        // dynamic module takes the first free one).
        let at = |name: &CStr| crate::util::modules(cf).position(|(n, _)| n == name);
        let (postpone, ours) =
            (at(c"ngx_http_postpone_filter_module"), at(c"ngx_http_matches_module"));
        if !matches!((postpone, ours), (Some(p), Some(o)) if p < o) {
            let what = "http_matches_epp: ngx_http_matches_module must load after \
                        ngx_http_postpone_filter_module (its body filter reads the EPP's answer): \
                        load it with load_module, or build it with its own config \
                        (--add-module or --add-dynamic-module), which places it after NGINX's \
                        filters";
            return emerg(cf, false, format_args!("{what}"));
        }
        let next = ngx::ffi::ngx_http_top_body_filter.map_or(0, |f| f as usize);
        NEXT_BODY_FILTER.store(next, Ordering::Relaxed);
        ngx::ffi::ngx_http_top_body_filter = Some(body_filter);
        true
    }
}

/// The body filter: a call's output is consumed here (a shim's first bytes kept in `BodyHead`,
/// then `u->length = 0` stops the unbuffered proxy) or by [`grpc::swallow`]; anything else
/// goes on down the chain.
unsafe extern "C" fn body_filter(r: *mut ngx_http_request_t, chain: *mut ngx_chain_t) -> ngx_int_t {
    // SAFETY: NGINX calls body filters with a valid request; a module context slot is null
    // or this module's `Ctx` (only this file sets it); `r->parent` is null or a live request.
    // The client's context names its call (`sr`), whichever location answers it.
    unsafe {
        let parent =
            if (*r).parent.is_null() { core::ptr::null_mut() } else { get_ctx((*r).parent) };
        if !parent.is_null() && core::ptr::eq((*parent).sr, r) && !(*parent).grpc {
            let mut more = false;
            grpc::consume(chain, |bytes| more = (*parent).body.feed(bytes));
            if more && !(*r).upstream.is_null() {
                (*(*r).upstream).length = 0;
            }
            return NGX_OK as ngx_int_t;
        }
        let ctx = get_ctx(r);
        if !ctx.is_null() && !(*ctx).call.is_null() && !(*ctx).prepared.decoder.is_null() {
            let decoder = (*ctx).prepared.decoder;
            let then = " reading the EndpointPicker's answer; no endpoint";
            let log = (*(*r).connection).log;
            if guard::caught(log, NGX_LOG_ALERT, then, || grpc::swallow(r, decoder, chain))
                .is_none()
            {
                // The call ends with what was decoded, its output consumed (else the gRPC
                // proxy waits for its buffer forever).
                grpc::consume(chain, |_| ());
                if (*decoder).is_some() && !(*r).upstream.is_null() {
                    *decoder = None;
                    (*(*r).upstream).length = 0;
                }
            }
            return NGX_OK as ngx_int_t;
        }
        let next = NEXT_BODY_FILTER.load(Ordering::Relaxed);
        if next == 0 {
            return NGX_OK as ngx_int_t;
        }
        // SAFETY (of the transmute): `next` is the chain's head read in `register_filter`, a
        // body filter function pointer stored as a number.
        let next: unsafe extern "C" fn(*mut ngx_http_request_t, *mut ngx_chain_t) -> ngx_int_t =
            core::mem::transmute(next);
        next(r, chain)
    }
}

/// Forgets the cached value of variable `index` (shared with the call): the gRPC proxy's
/// `Content-Length: $content_length` re-reads only non-cacheable variables and must not frame
/// the call with the client's length; after the call the client's computes its own again.
///
/// # Safety
/// `r` must be a valid request; `index` an indexed variable of its configuration.
unsafe fn forget(r: *mut ngx_http_request_t, index: Option<ngx_uint_t>) {
    if let Some(i) = index {
        // SAFETY: `r->variables` has one slot per indexed variable.
        unsafe {
            let v = &mut *(*r).variables.add(i);
            v.set_valid(0);
            v.set_not_found(0);
        }
    }
}

/// The content handler of `http_matches_epp` locations (the client's request and its call).
pub(crate) unsafe extern "C" fn content_handler(r: *mut ngx_http_request_t) -> ngx_int_t {
    // SAFETY: NGINX calls content handlers with a valid request.
    guard::request(r, || unsafe { handle(r) })
}

fn module_index() -> usize {
    HttpMatchesModule::module().ctx_index
}

/// # Safety
/// `r` must be a valid request.
unsafe fn get_ctx(r: *mut ngx_http_request_t) -> *mut Ctx {
    // SAFETY: `r->ctx` has one slot per HTTP module.
    unsafe { *(*r).ctx.add(module_index()) as *mut Ctx }
}

/// # Safety
/// `r` must be a valid request in a location with `http_matches_epp`.
unsafe fn handle(r: *mut ngx_http_request_t) -> ngx_int_t {
    // SAFETY: see `content_handler`; every pointer below comes from NGINX for this request
    // and lives in its pool.
    unsafe {
        let (Some(lcf), Some(mcf)) =
            (HttpMatchesModule::location_conf(&*r), HttpMatchesModule::main_conf(&*r))
        else {
            return fail(r, "module configuration is missing");
        };
        let Some(proxy) = lcf.epp_proxy else { return fail(r, "not configured here") };
        let ctx = get_ctx(r);
        if !ctx.is_null() && !(*ctx).call.is_null() {
            // The subrequest to the shim: the proxy asks "/" with no query.
            (*(*ctx).call).reached = true;
            if lcf.epp_grpc != (*(*ctx).call).grpc {
                return fail(r, "the call landed in a location of the other mode (shim / grpc://)");
            }
            // A read-only static: the proxy only reads `r->uri` for the request line, and the
            // location was already found.
            (*r).uri = ngx_str_t { len: 1, data: c"/".as_ptr().cast::<u8>().cast_mut() };
            if lcf.epp_grpc {
                grpc::reached(r, &(*ctx).prepared);
                forget(r, mcf.epp.content_length);
            }
            (*r).args = EMPTY;
            (*r).set_valid_location(0);
            return proxy(r);
        }
        if !ctx.is_null() {
            return fail(r, "the content handler ran twice for one request");
        }
        // The gRPC mode names the EPP itself: only the redirect's path is needed.
        let unset = [(VAR_HOST, mcf.epp.host), (VAR_PORT, mcf.epp.port), (VAR_PATH, mcf.epp.path)]
            .into_iter()
            .filter(|(n, _)| !lcf.epp_grpc || *n == VAR_PATH)
            .filter_map(|(n, i)| value_of(r, i).is_none().then_some(n))
            .collect::<Vec<_>>();
        if let Some(why) = verdict::missing(&unset) {
            return fail(r, &why);
        }
        let ctx = ngx_pcalloc((*r).pool, core::mem::size_of::<Ctx>()) as *mut Ctx;
        if ctx.is_null() {
            return fail(r, "out of memory");
        }
        (*ctx).path = value_of(r, mcf.epp.path).unwrap_or(EMPTY);
        *(*r).ctx.add(module_index()) = ctx.cast();
        let rc = ngx_http_read_client_request_body(r, Some(body_read));
        if rc >= NGX_HTTP_SPECIAL_RESPONSE as ngx_int_t {
            return rc;
        }
        NGX_DONE as ngx_int_t
    }
}

/// Logs an `[error]` and answers 500.
///
/// # Safety
/// `r` must be a valid request.
unsafe fn fail(r: *mut ngx_http_request_t, why: &str) -> ngx_int_t {
    // SAFETY: see the contract.
    ngx_log_error!(NGX_LOG_ERR, log(unsafe { &*r }), "http_matches_epp: {why}");
    NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t
}

/// The client's body is read: issue the subrequest to the shim.
unsafe extern "C" fn body_read(r: *mut ngx_http_request_t) {
    guard::finalizing(r, || {
        // SAFETY: NGINX calls this with the request whose body was read.
        let rc = unsafe { start_call(r) };
        if rc != NGX_OK as ngx_int_t {
            // SAFETY: as above; finalizing with an error answers the client.
            unsafe { ngx_http_finalize_request(r, rc) };
        }
    });
}

/// # Safety
/// `r` must be the client's request of an `http_matches_epp` location, its body read.
unsafe fn start_call(r: *mut ngx_http_request_t) -> ngx_int_t {
    // SAFETY: pool allocations of the request live as long as it; the subrequest and its
    // context are NGINX's (`sr->ctx` has one slot per module); the copied header list only
    // points at table elements of the client's request, alive as long as it.
    unsafe {
        let ctx = get_ctx(r);
        let Some(mcf) = HttpMatchesModule::main_conf(&*r) else {
            return fail(r, "module configuration is missing");
        };
        if ctx.is_null() {
            return fail(r, "the request context is missing");
        }
        let pool = (*r).pool;
        let ps = ngx_palloc(pool, core::mem::size_of::<ngx_http_post_subrequest_t>())
            as *mut ngx_http_post_subrequest_t;
        let call = ngx_pcalloc(pool, core::mem::size_of::<Ctx>()) as *mut Ctx;
        if ps.is_null() || call.is_null() {
            return fail(r, "out of memory");
        }
        ps.write(ngx_http_post_subrequest_t { handler: Some(call_done), data: ctx.cast() });
        (*call).call = ctx;
        // Everything that can fail comes before ngx_http_subrequest: once posted, the call must
        // run under a live parent. Prepared: the EPP protocol's request, or the shim's lines.
        let shim_lines = if HttpMatchesModule::location_conf(&*r).is_some_and(|l| l.epp_grpc) {
            match grpc::prepare(r) {
                Ok(prepared) => ((*ctx).grpc, (*call).prepared) = (true, prepared),
                Err(why) => {
                    // No call: the redirect still happens, with no endpoint and one [error].
                    let why = Outcome::NoEndpoint(format!("no call: {why}"));
                    (*ctx).answer = keep(pool, Answer::Grpc(why));
                    ((*ctx).done, (*ctx).reached, (*ctx).grpc) = (true, true, true);
                    return finish(r, &*ctx);
                }
            }
            None
        } else {
            let host = value_of(r, mcf.epp.host).unwrap_or(EMPTY);
            let port = value_of(r, mcf.epp.port).unwrap_or(EMPTY);
            let Some(lines) = shim::headers(r, host, port) else {
                return fail(r, "out of memory");
            };
            Some(lines)
        };
        let mut sr: *mut ngx_http_request_t = core::ptr::null_mut();
        let mut uri = (*r).uri;
        let flags = (NGX_HTTP_SUBREQUEST_IN_MEMORY | NGX_HTTP_SUBREQUEST_WAITED) as ngx_uint_t;
        if ngx_http_subrequest(r, &mut uri, core::ptr::null_mut(), &mut sr, ps, flags)
            != NGX_OK as ngx_int_t
        {
            return fail(r, "could not create the subrequest to the endpoint picker shim");
        }
        *(*sr).ctx.add(module_index()) = call.cast();
        (*ctx).sr = sr;
        if let Some(lines) = shim_lines {
            (*sr).method = (*r).method;
            (*sr).method_name = (*r).method_name;
            install_headers(sr, lines);
        }
        NGX_OK as ngx_int_t
    }
}

/// The value of an indexed variable (`None` when unset or empty).
///
/// # Safety
/// `r` must be valid and `index` an indexed variable of its configuration.
unsafe fn value_of(r: *mut ngx_http_request_t, index: Option<ngx_uint_t>) -> Option<ngx_str_t> {
    // SAFETY: see the contract; the value lives in the request.
    let bytes = unsafe { var::evaluated(r, index?) }?;
    Some(ngx_str_t { len: bytes.len(), data: bytes.as_ptr().cast_mut() })
}

/// The post-subrequest handler: records the answer in the client's context and has it resume
/// in [`resume`]. Called at each finalization of the call (an error code, then its special
/// response's).
unsafe extern "C" fn call_done(
    sr: *mut ngx_http_request_t,
    data: *mut c_void,
    rc: ngx_int_t,
) -> ngx_int_t {
    // SAFETY: `data` is the client request's context given in `start_call`, alive in its
    // pool; `sr` is the subrequest NGINX finalizes, its parent the client's request.
    unsafe {
        let ctx = &mut *(data as *mut Ctx);
        let then = " reading the EndpointPicker's answer";
        let log = (*(*sr).connection).log;
        guard::caught(log, NGX_LOG_ALERT, then, || record(sr, ctx, rc)).unwrap_or_else(|| {
            if !ctx.done {
                ctx.done = true;
                (*(*sr).parent).write_event_handler = Some(resume);
            }
            rc
        })
    }
}

/// # Safety
/// See [`call_done`].
unsafe fn record(sr: *mut ngx_http_request_t, ctx: &mut Ctx, rc: ngx_int_t) -> ngx_int_t {
    // SAFETY: the subrequest's upstream (if any), its header list and its in-memory output
    // live in the request's pool; copies go to the same pool.
    unsafe {
        let failed = rc == NGX_ERROR as ngx_int_t || rc >= NGX_HTTP_SPECIAL_RESPONSE as ngx_int_t;
        if failed && ctx.rc == 0 {
            ctx.rc = rc;
        }
        // The answer is the first finalization's upstream; the parent is resumed once.
        let first = !ctx.done;
        let u = (*sr).upstream;
        if first && !u.is_null() && (*u).headers_in.status_n != 0 {
            let answer = if ctx.grpc {
                // An empty slot (an internal redirect cleared it): nothing was read.
                let call = get_ctx(sr);
                let decoder =
                    if call.is_null() { core::ptr::null_mut() } else { (*call).prepared.decoder };
                Answer::Grpc(grpc::read_answer(sr, decoder))
            } else {
                shim::read_answer(sr)
            };
            ctx.answer = keep((*sr).pool, answer);
        }
        ctx.done = true;
        if first {
            (*(*sr).parent).write_event_handler = Some(resume);
        }
        // A call lost with `NGX_ERROR` (its upstream connection, not the client's) is recorded,
        // then finished as done so that the client's request goes on.
        if rc == NGX_ERROR as ngx_int_t && (*(*sr).connection).error() == 0 {
            return NGX_OK as ngx_int_t;
        }
        rc
    }
}

/// The client's request resumes once its call is done: [`finish`].
unsafe extern "C" fn resume(r: *mut ngx_http_request_t) {
    guard::finalizing(r, || {
        // SAFETY: NGINX calls the write event handler with a valid request.
        unsafe {
            let ctx = get_ctx(r);
            if ctx.is_null() || !(*ctx).done {
                return;
            }
            (*r).write_event_handler = Some(ngx_http_request_empty_handler);
            if (*(*r).connection).error() != 0 {
                // The client went away during the call: end as NGINX would, never redirect.
                ngx_http_finalize_request(r, NGX_HTTP_CLIENT_CLOSED_REQUEST as ngx_int_t);
                return;
            }
            let rc = finish(r, &*ctx);
            ngx_http_finalize_request(r, rc);
        }
    });
}

/// # Safety
/// `r` must be the client's request, its subrequest done and recorded in `ctx`.
unsafe fn finish(r: *mut ngx_http_request_t, ctx: &Ctx) -> ngx_int_t {
    // SAFETY: as in `resume`; the context's strings live in the request's pool (the redirect
    // copies what it keeps).
    unsafe {
        let log = log(&*r);
        let Some(mcf) = HttpMatchesModule::main_conf(&*r) else {
            return fail(r, "module configuration is missing");
        };
        #[cfg(feature = "panic-test")]
        if crate::util::header_lines(&*r)
            .any(|(n, _)| n.eq_ignore_ascii_case(b"x-matches-test-panic"))
        {
            panic!("panic-test: the request asked for a panic after the endpoint picker call");
        }
        if !ctx.reached {
            ngx_log_error!(
                NGX_LOG_ERR,
                log,
                "http_matches_epp: the subrequest to \"{}\" did not come back to this location \
                 (another location answers that URI), the shim was not asked",
                escape((*r).uri.as_bytes(), 128)
            );
        } else {
            if ctx.grpc {
                forget(r, mcf.epp.content_length);
            }
            let answer = ctx.answer.as_ref();
            match verdict::verdict(answer, ctx.grpc, ctx.rc, &ctx.body, escape) {
                Verdict::Endpoint(list) => {
                    let Some(list) = pool_str((*r).pool, list) else {
                        return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
                    };
                    set_endpoint(r, mcf.epp.endpoint, list);
                }
                Verdict::Immediate { status, headers, body, dropped } => {
                    return grpc::answer(r, status, headers, body, dropped);
                }
                Verdict::Error(why) => {
                    ngx_log_error!(NGX_LOG_ERR, log, "http_matches_epp: {why}");
                }
            }
        }
        // The redirect to `$epp_internal_path`, with the client's query string.
        match verdict::bad_path(ctx.path.as_bytes(), escape) {
            Some(why) => fail(r, &why),
            None => crate::util::redirect_keeping_args(r, ctx.path),
        }
    }
}
