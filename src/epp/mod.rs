//! `http_matches_epp [URL];`: NGF's `epp.js` (`js_content epp.getEndpoint`) as a directive.
//!
//! Per request of a location with the directive: read the client's body, ask the endpoint
//! picker shim at URL (the request's method, every header plus `X-EPP-Host: $epp_host` and
//! `X-EPP-Port: $epp_port`, the body), set `$inference_workload_endpoint` to the first
//! `ip:port` of the answer's `X-Gateway-Destination-Endpoint` list (checked, see
//! [`crate::epp::check`]; the answer's `X-Accel-*` headers ignored), and internally redirect
//! to `$epp_internal_path` with the client's own query string, whatever the shim answered.
//!
//! Design (issue #32):
//! - **Where the proxying lives: in the same location.** The directive calls the proxy
//!   module's own `proxy_pass URL` command handler at configuration time, keeps the content
//!   handler it installed, and installs ours. Our handler serves the client's request by a
//!   subrequest to the same URI (so it comes back to this location), and serves that
//!   subrequest (marked in its module context) with the saved proxy handler. The operator
//!   writes no extra location, and every `proxy_*` directive of the location tunes the call
//!   (`proxy_read_timeout`, `proxy_connect_timeout`, buffers, `proxy_http_version 1.1` with an
//!   `upstream` block with `keepalive` as URL). NGINX's proxy brings timeouts, keepalive,
//!   buffering, the `Content-Length` of the body (never `Transfer-Encoding: chunked` over an
//!   unchunked body: the body is read whole first) and no `Expect` (so no `100 Continue`).
//!   The proxy sends the path `/` (epp.js fetches the shim's root): the subrequest's URI is
//!   set to `/` once it reached the location, so URL may not have a path of its own.
//! - **The subrequest**: `NGX_HTTP_SUBREQUEST_IN_MEMORY | WAITED` (the answer's body stays in
//!   memory for the error line, up to `subrequest_output_buffer_size`; a longer one is cut
//!   there), with the client's method and a copy of the client's header list plus the two
//!   `X-EPP-*` headers (a client's own `X-EPP-Host` / `X-EPP-Port` lines are dropped: the
//!   configuration names the EPP, never the client). The body is the client's, read by
//!   `ngx_http_read_client_request_body` (memory or temp file, chunked included); NGINX's
//!   subrequests share it and the later proxy to the backend sends it again.
//! - **NGINX callbacks written out, not the `ngx` crate's async support**: the flow is the
//!   one of `auth_request` (three callbacks: body read, post-subrequest, parent resumed), with
//!   no runtime, no task allocation and no extra dependency; the async support of ngx 0.5 has
//!   no subrequest primitive, it would wrap the same callbacks.
//! - **Failures**: `$epp_host`, `$epp_port` or `$epp_internal_path` unset or empty is a 500
//!   and an `[error]` naming it (epp.js throws: 500). A shim answer other than 200 with the
//!   header, a timeout, a refused or closed connection: an `[error]` with the status and the
//!   start of the body (escaped, at most 256 bytes), and the redirect still happens with the
//!   variable empty, as in epp.js. A subrequest that fails with `NGX_ERROR` (its answer too
//!   big for memory, a connection lost mid-body) is recorded and then finished as done, so
//!   the client's request goes on (NGINX would otherwise terminate the client's request).
//! - Every entry point runs under `catch_unwind` (`guard`): no panic crosses into NGINX.
//!
//! `http_matches_epp grpc://ADDRESS;` (issue #47) keeps this flow and speaks the Endpoint
//! Picker protocol through NGINX's gRPC proxy instead of asking a shim: see `epp::grpc`.

pub(crate) mod check;
pub(crate) mod endpoints;
pub(crate) mod grpc;

use core::ffi::{CStr, c_char, c_void};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::panic::{AssertUnwindSafe, catch_unwind};

use ngx::core::{NGX_CONF_ERROR, NGX_CONF_OK};
use ngx::ffi::{
    NGX_DONE, NGX_ERROR, NGX_HTTP_CLIENT_CLOSED_REQUEST, NGX_HTTP_INTERNAL_SERVER_ERROR,
    NGX_HTTP_SPECIAL_RESPONSE, NGX_HTTP_SUBREQUEST_IN_MEMORY, NGX_HTTP_SUBREQUEST_WAITED,
    NGX_HTTP_VAR_CHANGEABLE, NGX_HTTP_VAR_NOCACHEABLE, NGX_LOG_ALERT, NGX_LOG_EMERG, NGX_LOG_ERR,
    NGX_OK, ngx_array_t, ngx_chain_t, ngx_command_t, ngx_conf_t, ngx_hash_key, ngx_http_conf_ctx_t,
    ngx_http_finalize_request, ngx_http_handler_pt, ngx_http_internal_redirect,
    ngx_http_named_location, ngx_http_post_subrequest_t, ngx_http_read_client_request_body,
    ngx_http_request_empty_handler, ngx_http_request_t, ngx_http_subrequest,
    ngx_http_variable_value_t, ngx_int_t, ngx_list_part_t, ngx_module_t, ngx_palloc, ngx_pcalloc,
    ngx_str_t, ngx_table_elt_t, ngx_uint_t,
};
use ngx::http::{HttpModule, HttpModuleLocationConf, HttpModuleMainConf, NgxHttpCoreModule};
use ngx::{ngx_conf_log_error, ngx_log_error};

use epp_proto::destination::Mode;

use crate::epp::check::{install_headers, set_endpoint};
use crate::state::{EppVars, LocConf};
use crate::util::{conf_args, escape, pool_str, text, var};
use crate::{ConfResult, HttpMatchesModule, guard, variables};

/// The shim NGF runs beside NGINX (epp.js's `SHIM_URI`).
const DEFAULT_URL: &str = "http://127.0.0.1:54800";
const VAR_ENDPOINT: &str = "inference_workload_endpoint";
const VAR_HOST: &str = "epp_host";
const VAR_PORT: &str = "epp_port";
const VAR_PATH: &str = "epp_internal_path";
const ENDPOINT_HEADER: &[u8] = b"x-gateway-destination-endpoint";
const HOST_HEADER: &[u8] = b"X-EPP-Host";
const PORT_HEADER: &[u8] = b"X-EPP-Port";
/// An empty string (no data).
const EMPTY: ngx_str_t = ngx_str_t { len: 0, data: core::ptr::null_mut() };
/// Bytes of the shim's answer body shown in an `[error]` line.
const BODY_SHOWN: usize = 256;

/// The request context of this module, in `r->ctx` (pool memory, zeroed at creation).
/// The client's request has one (`call` null); the subrequest to the shim has one whose
/// `call` points at the client's.
#[repr(C)]
pub(crate) struct Ctx {
    /// In the subrequest: the client request's context.
    call: *mut Ctx,
    /// The subrequest reached this location's handler (it could land elsewhere if the URI
    /// maps to another location, e.g. from a named location).
    reached: bool,
    /// The subrequest is finished (the post-subrequest handler ran).
    done: bool,
    /// The first failing code the subrequest was finalized with (0 if none).
    pub(crate) rc: ngx_int_t,
    /// The shim's status (0: no answer).
    status: ngx_uint_t,
    /// `X-Gateway-Destination-Endpoint` of the answer (pool copy; len 0 when absent).
    endpoint: ngx_str_t,
    /// The start of the answer's body (pool copy, at most `BODY_SHOWN + 1` bytes) and its
    /// length in memory.
    body: ngx_str_t,
    body_len: usize,
    /// `$epp_internal_path`, read when the request arrived.
    path: ngx_str_t,
    /// The client's connection had an error when the call started.
    error_before: bool,
    /// The answer's body did not fit in memory (`subrequest_output_buffer_size`).
    pub(crate) cut: bool,
    /// The call speaks the EPP protocol (`grpc://`, see `epp::grpc`), and what its answer
    /// means (in the request's pool; null: no answer).
    grpc: bool,
    pub(crate) outcome: *mut epp_proto::Outcome,
    /// In a gRPC call: what [`crate::epp::grpc::install`] makes of it once it reached its
    /// location (until then it has the client's method and lines, for its rewrite phases).
    prepared: crate::epp::grpc::Prepared,
}

/// `http_matches_epp [URL];`
pub(crate) unsafe extern "C" fn cmd_http_matches_epp(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> ConfResult {
    guard::directive(cf, || {
        // SAFETY: registered with NGX_HTTP_LOC_CONF_OFFSET: `conf` is this module's location
        // conf, created by `create_loc_conf`.
        let lcf = unsafe { &mut *(conf as *mut LocConf) };
        if lcf.epp_proxy.is_some() {
            return c"is duplicate".as_ptr().cast_mut();
        }
        if let Some(why) = not_here(cf, lcf) {
            ngx_conf_log_error!(NGX_LOG_EMERG, cf, "http_matches_epp: {why}");
            return NGX_CONF_ERROR;
        }
        // SAFETY: in a directive handler; the arguments are used before it returns.
        let args = unsafe { conf_args(cf) };
        let url: Vec<u8> =
            args.get(1).map_or(DEFAULT_URL.as_bytes().to_vec(), |a| a.as_bytes().to_vec());
        let mode = match epp_proto::destination::check_url(&url) {
            Ok(mode) => mode,
            Err(e) => {
                let url = text(&url);
                ngx_conf_log_error!(
                    NGX_LOG_EMERG,
                    cf,
                    "http_matches_epp: invalid URL \"{url}\": {e}"
                );
                return NGX_CONF_ERROR;
            }
        };
        let grpc = mode != Mode::Shim;
        // SAFETY: in a directive handler, `cf` parses this location.
        let proxy = match unsafe { proxy_pass(cf, &url, mode) } {
            Ok(h) => h,
            Err(rc) => return rc,
        };
        lcf.epp_proxy = Some(proxy);
        lcf.epp_grpc = grpc;
        // SAFETY: in a directive handler, `cf` is parsing a file.
        lcf.epp_where = unsafe { crate::util::conf_where(cf) };
        // SAFETY: `cf` parses a location block: the core module's location conf exists; we
        // only set its content handler, as `proxy_pass` did just before.
        match NgxHttpCoreModule::location_conf_mut(unsafe { &*cf }) {
            Some(clcf) => {
                clcf.handler = Some(content_handler);
                lcf.epp_handler = clcf.handler.map(|f| f as usize);
                // proxy_pass turns on the 301 to "NAME/" for a location NAME ending in "/":
                // this location is not the proxy's, and epp.js never redirected.
                clcf.set_auto_redirect(0);
            }
            None => return NGX_CONF_ERROR,
        }
        // Registered in preconfiguration.
        let Some(index) = variables::variable_index(cf, VAR_ENDPOINT) else {
            return NGX_CONF_ERROR;
        };
        // SAFETY: the http main conf of this module exists while a location is parsed.
        if let Some(mcf) = HttpMatchesModule::main_conf_mut(unsafe { &*cf }) {
            mcf.epp.used = true;
            mcf.epp.endpoint = index;
        }
        NGX_CONF_OK
    })
}

/// Why `http_matches_epp` may not stand in the location `cf` parses, if so.
fn not_here(cf: *mut ngx_conf_t, lcf: &LocConf) -> Option<&'static str> {
    if lcf.enabled {
        return Some("cannot be combined with http_matches in one location");
    }
    // SAFETY: `cf` parses a location block: the core module's location conf exists.
    let named = NgxHttpCoreModule::location_conf(unsafe { &*cf }).is_some_and(|c| c.named() != 0);
    // The call is a subrequest to the request's URI: from a named location it lands in another
    // location, and the shim is never asked.
    named.then_some(
        "not allowed in a named location (the call to the shim is a subrequest to the \
         request's URI, which never comes back to a named location)",
    )
}

/// The shim answer's headers the proxy would act on, ignored on the call (issue #46): the
/// answer only names an endpoint, it never moves the call or tunes the client's answer.
const IGNORED: [&[u8]; 5] = [
    b"X-Accel-Redirect",
    b"X-Accel-Expires",
    b"X-Accel-Limit-Rate",
    b"X-Accel-Buffering",
    b"X-Accel-Charset",
];

/// Runs the proxy module's `proxy_pass URL` handler for the location being parsed, then its
/// `proxy_ignore_headers` with [`IGNORED`] (a bitmask: ORed with the operator's own), and
/// returns the content handler `proxy_pass` installed; with `grpc`, the gRPC module's
/// `grpc_pass` and `grpc_ignore_headers`.
///
/// # Safety
/// Only from a directive handler of a location block.
unsafe fn proxy_pass(
    cf: *mut ngx_conf_t,
    url: &[u8],
    mode: Mode,
) -> Result<unsafe extern "C" fn(*mut ngx_http_request_t) -> ngx_int_t, ConfResult> {
    let (module, pass, ignore) = if mode != Mode::Shim {
        (c"ngx_http_grpc_module", &b"grpc_pass"[..], &b"grpc_ignore_headers"[..])
    } else {
        (c"ngx_http_proxy_module", &b"proxy_pass"[..], &b"proxy_ignore_headers"[..])
    };
    // SAFETY: as the caller's.
    unsafe {
        proxy_command(cf, module, pass, &[url])?;
        proxy_command(cf, module, ignore, &IGNORED)?;
        if mode == (Mode::Grpc { tls: true }) {
            // The EPP's certificate is verified (NGINX's default is off: a man in the middle
            // would name any destination). An operator's own `grpc_ssl_verify` before the
            // directive stays: NGINX answers "is duplicate", taken as already set.
            match run_command(cf, module, b"grpc_ssl_verify", &[b"on"])? {
                Ok(()) => {}
                Err(why) if why == c"is duplicate" => {}
                Err(why) => return Err(command_failed(cf, b"grpc_ssl_verify", why)),
            }
        }
        let handler: ngx_http_handler_pt =
            NgxHttpCoreModule::location_conf_mut(&*cf).and_then(|clcf| clcf.handler);
        handler.ok_or(NGX_CONF_ERROR)
    }
}

/// Runs `module`'s command `name` with `values` for the location being parsed; a failure is
/// logged.
///
/// # Safety
/// Only from a directive handler of a location block.
unsafe fn proxy_command(
    cf: *mut ngx_conf_t,
    module: &CStr,
    name: &[u8],
    values: &[&[u8]],
) -> Result<(), ConfResult> {
    // SAFETY: as the caller's.
    match unsafe { run_command(cf, module, name, values) }? {
        Ok(()) => Ok(()),
        Err(why) => Err(command_failed(cf, name, why)),
    }
}

/// Logs the message `why` a command `name` returned (NGINX prints it after the directive's
/// name); the error to return.
fn command_failed(cf: *mut ngx_conf_t, name: &[u8], why: &CStr) -> ConfResult {
    let why = why.to_string_lossy();
    ngx_conf_log_error!(NGX_LOG_EMERG, cf, "http_matches_epp: {} {why}", text(name));
    NGX_CONF_ERROR
}

/// Runs `module`'s command `name` with `values` for the location being parsed: `Ok(Err(why))`
/// with the message the command returned (a static string of NGINX's), `Err` when it failed
/// and logged why itself or it could not be run.
///
/// # Safety
/// Only from a directive handler of a location block.
unsafe fn run_command(
    cf: *mut ngx_conf_t,
    module: &CStr,
    name: &[u8],
    values: &[&[u8]],
) -> Result<Result<(), &'static CStr>, ConfResult> {
    // SAFETY: during configuration `cf->cycle->modules` is the null-terminated array of
    // every module; each has a NUL-terminated `name` and a `commands` array ending with an
    // entry whose name is empty. `cf->ctx` is the location's ngx_http_conf_ctx_t, whose
    // `loc_conf` has one slot per HTTP module (the proxy's included). `cf->args` is restored
    // before returning; the new array and its strings live in the configuration pool.
    unsafe {
        let proxy = find_module(cf, module);
        if proxy.is_null() {
            ngx_conf_log_error!(
                NGX_LOG_EMERG,
                cf,
                "http_matches_epp: NGINX is built without {}",
                module.to_string_lossy()
            );
            return Err(NGX_CONF_ERROR);
        }
        let mut cmd = (*proxy).commands;
        while (*cmd).name.len != 0 && (*cmd).name.as_bytes() != name {
            cmd = cmd.add(1);
        }
        let Some(set) = (*cmd).set.filter(|_| (*cmd).name.len != 0) else {
            ngx_conf_log_error!(
                NGX_LOG_EMERG,
                cf,
                "http_matches_epp: no {} in {}",
                text(name),
                module.to_string_lossy()
            );
            return Err(NGX_CONF_ERROR);
        };
        let ctx = (*cf).ctx as *mut ngx_http_conf_ctx_t;
        let plcf = *(*ctx).loc_conf.add((*proxy).ctx_index);
        let pool = (*cf).pool;
        let n = values.len() + 1;
        let elts = ngx_palloc(pool, n * core::mem::size_of::<ngx_str_t>()) as *mut ngx_str_t;
        if elts.is_null() {
            return Err(NGX_CONF_ERROR);
        }
        for (i, v) in core::iter::once(name).chain(values.iter().copied()).enumerate() {
            // NUL-terminated as NGINX's own arguments (a bitmask slot compares with strcasecmp).
            let Some(mut v) = pool_str(pool, &[v, b"\0"].concat()) else {
                return Err(NGX_CONF_ERROR);
            };
            v.len -= 1;
            elts.add(i).write(v);
        }
        let mut args = ngx_array_t {
            elts: elts.cast(),
            nelts: n,
            size: core::mem::size_of::<ngx_str_t>(),
            nalloc: n,
            pool,
        };
        let saved = (*cf).args;
        (*cf).args = &mut args;
        let rc = set(cf, cmd, plcf);
        (*cf).args = saved;
        if rc == NGX_CONF_OK {
            Ok(Ok(()))
        } else if rc == NGX_CONF_ERROR {
            Err(NGX_CONF_ERROR)
        } else {
            // A message the caller (NGINX) would print after the directive's name: a static
            // C string of the command's.
            Ok(Err(CStr::from_ptr(rc as *const c_char)))
        }
    }
}

/// At merge, for a location with its own `http_matches_epp`: `None` if the location is
/// fine, else why not. Another content handler set after ours (`http_matches`, `js_content`,
/// `grpc_pass`, `empty_gif`, ...) would serve the client's request instead of the call; and a
/// `limit_except` block gets the proxy's own handler from the proxy's merge, which would send
/// the client's request straight to the shim.
pub(crate) fn merge_check(
    clcf: &ngx::ffi::ngx_http_core_loc_conf_t,
    lcf: &LocConf,
) -> Option<&'static str> {
    if lcf.epp_where.is_empty() || clcf.noname() != 0 {
        return None;
    }
    // The address we stored at the directive, compared as a number: did another directive
    // overwrite it (the same value read back, not two addresses of one function)?
    if clcf.handler.map(|f| f as usize) != lcf.epp_handler {
        return Some(
            "another directive of this location (http_matches, proxy_pass, js_content, \
             grpc_pass, ...) replaced its content handler",
        );
    }
    if clcf.limit_except != 0 {
        return Some(
            "limit_except is not supported in its location (the proxy module would send the \
             client's request straight to the shim)",
        );
    }
    None
}

/// Registers `$inference_workload_endpoint` (empty until the handler sets it, like
/// `js_var`). Changeable, so that a `js_var` or `set` of the same name still loads.
pub(crate) fn preconfiguration(cf: *mut ngx_conf_t) -> bool {
    let flags = NGX_HTTP_VAR_CHANGEABLE | NGX_HTTP_VAR_NOCACHEABLE;
    variables::add(cf, VAR_ENDPOINT, flags as ngx_uint_t, endpoint_empty)
}

/// Getter of `$inference_workload_endpoint` before the handler stored a value: empty.
unsafe extern "C" fn endpoint_empty(
    _r: *mut ngx_http_request_t,
    v: *mut ngx_http_variable_value_t,
    _data: usize,
) -> ngx_int_t {
    // SAFETY: NGINX passes the value slot to fill; an empty static string.
    unsafe { var::set(&mut *v, c"".as_ptr().cast::<u8>().cast_mut(), 0) };
    NGX_OK as ngx_int_t
}

/// The indexes of `$epp_host`, `$epp_port`, `$epp_internal_path` when some directive declares
/// them (an undeclared one is "missing" at run time, as in epp.js, not a load failure).
pub(crate) fn postconfiguration(cf: *mut ngx_conf_t, epp: &mut EppVars) {
    if !epp.used {
        return;
    }
    // SAFETY: postconfiguration of the http block.
    unsafe { register_filter(cf) };
    let index = |name| variables::declared_index(cf, name);
    epp.host = index(VAR_HOST);
    epp.port = index(VAR_PORT);
    epp.path = index(VAR_PATH);
    epp.content_length = variables::variable_index(cf, "content_length");
}

/// The body filter after ours (`ngx_http_output_body_filter_pt`, as a number; 0: none).
static NEXT_BODY_FILTER: AtomicUsize = AtomicUsize::new(0);
/// [`body_filter`] is in NGINX's chain: a gRPC call's answer is read there.
static FILTERED: AtomicBool = AtomicBool::new(false);

/// Puts [`body_filter`] on top of NGINX's body filter chain, when this module's
/// postconfiguration runs after the filter modules' (a dynamic module, appended to the module
/// list: the build everywhere but `--add-module`). Statically linked (`--add-module`, listed
/// before the filters, whose registration would drop ours), the call's answer stays capped
/// at subrequest_output_buffer_size as before (see `grpc::read_answer`).
///
/// # Safety
/// Only from the http block's postconfiguration.
unsafe fn register_filter(cf: *mut ngx_conf_t) {
    // SAFETY: during configuration `cf->cycle->modules` is the null-terminated module list;
    // the chain's head is NGINX's global, set by each filter's postconfiguration in turn.
    unsafe {
        // Positions in the list (the order postconfigurations run in), not `index`es (a
        // dynamic module takes the first free one).
        let (mut at, mut postpone, mut ours) = (0, None, None);
        let mut m = (*(*cf).cycle).modules;
        while !m.is_null() && !(*m).is_null() {
            match (!(**m).name.is_null()).then(|| CStr::from_ptr((**m).name)) {
                Some(n) if n == c"ngx_http_postpone_filter_module" => postpone = Some(at),
                Some(n) if n == c"ngx_http_matches_module" => ours = Some(at),
                _ => {}
            }
            (m, at) = (m.add(1), at + 1);
        }
        FILTERED.store(false, Ordering::Relaxed);
        if !matches!((postpone, ours), (Some(p), Some(o)) if p < o) {
            return;
        }
        let next = ngx::ffi::ngx_http_top_body_filter.map_or(0, |f| f as usize);
        NEXT_BODY_FILTER.store(next, Ordering::Relaxed);
        FILTERED.store(true, Ordering::Relaxed);
        ngx::ffi::ngx_http_top_body_filter = Some(body_filter);
    }
}

/// The body filter: a gRPC call's output is its answer, consumed by
/// [`crate::epp::grpc::swallow`]; everything else goes on down the chain.
unsafe extern "C" fn body_filter(r: *mut ngx_http_request_t, chain: *mut ngx_chain_t) -> ngx_int_t {
    // SAFETY: NGINX calls body filters with a valid request; its module context slot is null
    // or this module's `Ctx` (only this file sets it).
    unsafe {
        let ctx = get_ctx(r);
        if !ctx.is_null() && !(*ctx).call.is_null() && !(*ctx).prepared.decoder.is_null() {
            let decoder = (*ctx).prepared.decoder;
            let swallowed = catch_unwind(AssertUnwindSafe(|| {
                crate::epp::grpc::swallow(r, decoder, chain);
            }));
            if let Err(payload) = swallowed {
                ngx_log_error!(
                    NGX_LOG_ALERT,
                    (*(*r).connection).log,
                    "http_matches_epp: internal error (panic: {}) reading the EndpointPicker's \
                     answer; no endpoint",
                    guard::describe(&*payload)
                );
                // Nothing more is read: the call ends with what was decoded, its output
                // consumed (else the gRPC proxy waits for its buffer forever).
                crate::epp::grpc::consume(chain);
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

/// Forgets the cached value of variable `index` (a subrequest shares its parent's): the
/// gRPC proxy's `Content-Length: $content_length` reads only non-cacheable variables anew,
/// so a `$content_length` the client's request evaluated would frame the call with the
/// client's length; after the call, the client's request computes its own again.
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

/// The content handler of locations with `http_matches_epp` (both for the client's request and
/// for the subrequest to the shim).
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
        let log = (*(*r).connection).log;
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
                // The call landed in a location of the other mode (the parent's URI maps
                // elsewhere): its request would be the wrong protocol's.
                return fail(r, "the call landed in a location of the other mode (shim / grpc://)");
            }
            // The URI points at a read-only static: NGINX's proxy reads `r->uri` to build the
            // request line (a location without a URI part: the URI as is) and never writes
            // it; the location was already found, so no later phase matches it again.
            (*r).uri = ngx_str_t { len: 1, data: c"/".as_ptr().cast::<u8>().cast_mut() };
            if lcf.epp_grpc {
                crate::epp::grpc::reached(r, &(*ctx).prepared);
                forget(r, mcf.epp.content_length);
            }
            (*r).args = ngx_str_t { len: 0, data: core::ptr::null_mut() };
            (*r).set_valid_location(0);
            return proxy(r);
        }
        if !ctx.is_null() {
            return fail(r, "the content handler ran twice for one request");
        }
        // The gRPC mode names the EPP itself: only the redirect's path is needed.
        let missing =
            [(VAR_HOST, mcf.epp.host), (VAR_PORT, mcf.epp.port), (VAR_PATH, mcf.epp.path)]
                .into_iter()
                .filter(|(n, _)| !lcf.epp_grpc || *n == VAR_PATH)
                .filter(|(_, i)| value_of(r, *i).is_none())
                .map(|(n, _)| format!("${n}"))
                .collect::<Vec<_>>();
        if !missing.is_empty() {
            ngx_log_error!(
                NGX_LOG_ERR,
                log,
                "http_matches_epp: missing required variable{} {} (unset or empty in this location)",
                if missing.len() > 1 { "s" } else { "" },
                missing.join(" and ")
            );
            return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
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
    // SAFETY: every request has a connection with a log.
    let log = unsafe { (*(*r).connection).log };
    ngx_log_error!(NGX_LOG_ERR, log, "http_matches_epp: {why}");
    NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t
}

/// Runs a callback that returns nothing; a panic logs an `[alert]` and finalizes `r` with
/// 500.
fn guard_void(r: *mut ngx_http_request_t, body: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(body)) {
        // SAFETY: NGINX passed a valid request whose connection outlives the call.
        unsafe {
            ngx_log_error!(
                NGX_LOG_ALERT,
                (*(*r).connection).log,
                "http_matches_epp: internal error (panic: {}); the request gets 500, the worker \
                 keeps serving",
                guard::describe(&*payload)
            );
            ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t);
        }
    }
}

/// The client's body is read: issue the subrequest to the shim.
unsafe extern "C" fn body_read(r: *mut ngx_http_request_t) {
    guard_void(r, || {
        // SAFETY: NGINX calls this with the request whose body was read.
        let rc = unsafe { start_call(r) };
        if rc != NGX_OK as ngx_int_t {
            // SAFETY: as above; finalizing with an error answers the client.
            unsafe { ngx_http_finalize_request(r, rc) };
        }
    });
}

/// The call to make: to the shim, or the EPP protocol's (prepared, or why not).
enum Call {
    Shim,
    Grpc(Result<crate::epp::grpc::Prepared, String>),
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
        (*ctx).error_before = (*(*r).connection).error() != 0;
        // Everything that can fail comes before ngx_http_subrequest: once it returned, the
        // subrequest is posted and must run under a live parent, so no error path follows.
        let grpc = HttpMatchesModule::location_conf(&*r).is_some_and(|l| l.epp_grpc);
        let call_of = if grpc { Call::Grpc(crate::epp::grpc::prepare(r)) } else { Call::Shim };
        if let Call::Grpc(Err(why)) = call_of {
            // No call: the redirect still happens, with no endpoint and one [error] (conclude).
            let why = epp_proto::Outcome::NoEndpoint(format!("no call: {why}"));
            (*ctx).outcome = crate::epp::grpc::keep(pool, why);
            (*ctx).done = true;
            (*ctx).reached = true;
            (*ctx).grpc = true;
            return finish(r, &*ctx);
        }
        let host = value_of(r, mcf.epp.host).unwrap_or(EMPTY);
        let port = value_of(r, mcf.epp.port).unwrap_or(EMPTY);
        let Some(lines) = headers_for_shim(r, host, port) else {
            return fail(r, "out of memory");
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
        if let Call::Grpc(Ok(prepared)) = call_of {
            (*ctx).grpc = true;
            (*call).prepared = prepared;
            return NGX_OK as ngx_int_t;
        }
        (*sr).method = (*r).method;
        (*sr).method_name = (*r).method_name;
        install_headers(sr, lines);
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

/// The header lines of the call, in the client request's pool: the client's lines (but its
/// `X-EPP-Host` and `X-EPP-Port`), then `X-EPP-Host: host` and `X-EPP-Port: port`. `None`: out
/// of memory. The elements point at the client's names and values (alive with its request)
/// and, for the two added lines, at the read-only statics `HOST_HEADER` / `PORT_HEADER` and
/// their lowercase literals: NGINX's proxy only reads `key`, `lowcase_key` and `value` of
/// request header lines, never writes them.
///
/// # Safety
/// `r` must be the client's request.
unsafe fn headers_for_shim(
    r: *mut ngx_http_request_t,
    host: ngx_str_t,
    port: ngx_str_t,
) -> Option<(*mut ngx_table_elt_t, usize)> {
    // SAFETY: the client's list parts hold `nelts` initialized elements each; the new array
    // is allocated for all of them plus two and lives in the request's pool; all-zero bytes
    // are a valid ngx_table_elt_t (integers, null pointers, empty strings); the statics the
    // two added lines point at are never written (see above).
    unsafe {
        let mut lines: Vec<ngx_table_elt_t> = Vec::new();
        let mut part: *const ngx_list_part_t = &(*r).headers_in.headers.part;
        while !part.is_null() {
            let elts = (*part).elts as *const ngx_table_elt_t;
            for i in 0..(*part).nelts {
                let h = elts.add(i).read();
                let name = h.key.as_bytes();
                if h.hash == 0
                    || name.eq_ignore_ascii_case(HOST_HEADER)
                    || name.eq_ignore_ascii_case(PORT_HEADER)
                {
                    continue;
                }
                lines.push(h);
            }
            part = (*part).next;
        }
        for (name, lower, value) in
            [(HOST_HEADER, &b"x-epp-host"[..], host), (PORT_HEADER, &b"x-epp-port"[..], port)]
        {
            // Zeroed, then filled: NGINX 1.23 added `next`, and older ones have no such field
            // (Debian's 1.22); a null `next` is what ngx_list_push'ed lines start with too.
            let mut line: ngx_table_elt_t = core::mem::zeroed();
            line.hash = ngx_hash_key(lower.as_ptr().cast_mut(), lower.len());
            line.key = ngx_str_t { len: name.len(), data: name.as_ptr().cast_mut() };
            line.value = value;
            line.lowcase_key = lower.as_ptr().cast_mut();
            lines.push(line);
        }
        let size = core::mem::size_of::<ngx_table_elt_t>();
        let elts = ngx_palloc((*r).pool, size * lines.len()) as *mut ngx_table_elt_t;
        if elts.is_null() {
            return None;
        }
        core::ptr::copy_nonoverlapping(lines.as_ptr(), elts, lines.len());
        Some((elts, lines.len()))
    }
}

/// The post-subrequest handler: records the shim's answer in the client request's context,
/// and has the client's request resume in [`resume`]. Called each time NGINX finalizes the
/// subrequest (an error code first, then the special response's own finalization).
unsafe extern "C" fn call_done(
    sr: *mut ngx_http_request_t,
    data: *mut c_void,
    rc: ngx_int_t,
) -> ngx_int_t {
    let out = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `data` is the client request's context given in `start_call`, alive in its
        // pool; `sr` is the subrequest NGINX finalizes, its parent the client's request.
        unsafe { record(sr, &mut *(data as *mut Ctx), rc) }
    }));
    match out {
        Ok(rc) => rc,
        Err(payload) => {
            // SAFETY: as above.
            unsafe {
                ngx_log_error!(
                    NGX_LOG_ALERT,
                    (*(*sr).connection).log,
                    "http_matches_epp: internal error (panic: {}) reading the shim's answer",
                    guard::describe(&*payload)
                );
                let ctx = &mut *(data as *mut Ctx);
                if !ctx.done {
                    ctx.done = true;
                    (*(*sr).parent).write_event_handler = Some(resume);
                }
            }
            rc
        }
    }
}

/// # Safety
/// See [`call_done`].
unsafe fn record(sr: *mut ngx_http_request_t, ctx: &mut Ctx, rc: ngx_int_t) -> ngx_int_t {
    // SAFETY: the subrequest's upstream (if any), its header list and its in-memory output
    // live in the request's pool; copies go to the same pool.
    unsafe {
        let pool = (*sr).pool;
        let failed = rc == NGX_ERROR as ngx_int_t || rc >= NGX_HTTP_SPECIAL_RESPONSE as ngx_int_t;
        if failed && ctx.rc == 0 {
            ctx.rc = rc;
        }
        // NGINX may finalize the subrequest more than once (an error code, then the special
        // response's own finalization, which may run another handler): the answer is the
        // first finalization's upstream, and the parent is resumed once.
        let first = !ctx.done;
        let u = (*sr).upstream;
        let c = (*sr).connection;
        // A gRPC answer read by the body filter never fills the in-memory buffer.
        let filtered = ctx.grpc && FILTERED.load(Ordering::Relaxed);
        let cut = !filtered && (*c).error() != 0 && !ctx.error_before && too_big_for_memory(sr, rc);
        if first && ctx.grpc && !u.is_null() && (*u).headers_in.status_n != 0 {
            let call = get_ctx(sr);
            let decoder =
                if call.is_null() { core::ptr::null_mut() } else { (*call).prepared.decoder };
            ctx.outcome = crate::epp::grpc::read_answer(sr, cut, decoder);
        } else if first && !u.is_null() && (*u).headers_in.status_n != 0 {
            ctx.status = (*u).headers_in.status_n;
            let joined = shim_endpoint(&(*u).headers_in.headers);
            if let Some(s) = pool_str(pool, &joined) {
                ctx.endpoint = s;
            }
        }
        if first && ctx.status != 0 {
            // SAFETY (of the slice): `sr->out->buf` is the memory filter's one temporary
            // buffer, holding `last - pos` initialized bytes of the answer from `pos` on (both
            // in that buffer, `pos <= last`; `max(0)` guards the subtraction anyway); at most
            // BODY_SHOWN + 1 of them are read, then copied to the pool.
            let out = (*sr).out;
            if !out.is_null() && !(*out).buf.is_null() {
                let b = &*(*out).buf;
                let len = b.last.offset_from(b.pos).max(0) as usize;
                if len > 0 {
                    let shown = core::slice::from_raw_parts(b.pos, len.min(BODY_SHOWN + 1));
                    if let Some(s) = pool_str(pool, shown) {
                        ctx.body = s;
                        ctx.body_len = len;
                    }
                }
            }
        }
        ctx.done = true;
        if first {
            (*(*sr).parent).write_event_handler = Some(resume);
        }
        // An in-memory subrequest never writes to the client, so NGINX's output filter marks
        // the client's connection (`c->error`) when the memory filter refuses an answer longer
        // than subrequest_output_buffer_size. Only that case, seen positively, is cleared: the
        // call failed, the client's request goes on. A client that went away (HTTP/1 EOF, an
        // HTTP/2 RST_STREAM that sets only `fc->error`) finalizes the call with 499 (or 408):
        // never cleared, NGINX terminates the client's request as it would without us.
        // SAFETY (of clearing it): the subrequest shares the client's connection; `c->error`
        // was 0 when the call started (`error_before`), the client's events show no end or
        // error, and nothing was written to the client (an in-memory subrequest has no
        // output to it), so the flag set by the memory filter's refusal is the only reason
        // it is 1; clearing it lets the client's request go on, as after any failed call.
        if cut {
            (*c).set_error(0);
            ctx.cut = true;
            return NGX_OK as ngx_int_t;
        }
        if rc == NGX_ERROR as ngx_int_t && (*c).error() == 0 {
            return NGX_OK as ngx_int_t;
        }
        rc
    }
}

/// Whether the subrequest's failure is the memory filter refusing the answer: finalized with
/// `NGX_ERROR` (or 0) while the client's connection shows no end or error on either side,
/// and the answer's declared length exceeds `subrequest_output_buffer_size` (no buffer made)
/// or the buffer it was being copied into has less room left than one upstream buffer.
///
/// # Safety
/// `sr` must be the subrequest being finalized.
unsafe fn too_big_for_memory(sr: *mut ngx_http_request_t, rc: ngx_int_t) -> bool {
    if rc != 0 && rc != NGX_ERROR as ngx_int_t {
        // 499 (client closed), 408 (client timed out) and every HTTP status.
        return false;
    }
    // SAFETY: the subrequest, its connection's events, its upstream (with its configuration)
    // and its in-memory output buffer are NGINX's, alive while it is finalized; only read.
    unsafe {
        let c = (*sr).connection;
        let quiet = |ev: *mut ngx::ffi::ngx_event_t| {
            ev.is_null() || ((*ev).eof() == 0 && (*ev).error() == 0)
        };
        if !quiet((*c).read) || !quiet((*c).write) {
            return false;
        }
        let u = (*sr).upstream;
        if u.is_null() || (*u).headers_in.status_n == 0 {
            return false;
        }
        let Some(clcf) = NgxHttpCoreModule::location_conf(&*sr) else { return false };
        let limit = clcf.subrequest_output_buffer_size;
        let out = (*sr).out;
        if out.is_null() || (*out).buf.is_null() {
            let declared = (*sr).headers_out.content_length_n;
            return declared >= 0 && declared as usize > limit;
        }
        let b = &*(*out).buf;
        let room = b.end.offset_from(b.last).max(0) as usize;
        let chunk = if (*u).conf.is_null() {
            0
        } else {
            (*(*u).conf).buffer_size.max((*(*u).conf).bufs.size)
        };
        room == 0 || room < chunk
    }
}

/// The client's request resumes once the subrequest is done: sets the variable or logs why
/// not, then redirects.
unsafe extern "C" fn resume(r: *mut ngx_http_request_t) {
    guard_void(r, || {
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
    // SAFETY: as in `resume`; the context's strings live in the request's pool.
    unsafe {
        let log = (*(*r).connection).log;
        let Some(mcf) = HttpMatchesModule::main_conf(&*r) else {
            return fail(r, "module configuration is missing");
        };
        #[cfg(feature = "panic-test")]
        if crate::util::HeaderLines::new(&*r)
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
        } else if ctx.grpc {
            forget(r, mcf.epp.content_length);
            if let Some(rc) =
                crate::epp::grpc::conclude(r, (ctx.outcome, ctx.rc, ctx.cut), mcf.epp.endpoint)
            {
                return rc;
            }
        } else if ctx.status == 200 && ctx.endpoint.len > 0 {
            set_endpoint(r, mcf.epp.endpoint, ctx.endpoint);
        } else if ctx.status != 0 {
            let body = ctx.body.as_bytes();
            let more = if ctx.body_len > BODY_SHOWN {
                format!("...({} bytes)", ctx.body_len)
            } else {
                String::new()
            };
            let cut = if ctx.cut {
                " (the answer's body is longer than subrequest_output_buffer_size: not read)"
            } else if ctx.rc != 0 {
                " (the answer failed: see the error above)"
            } else {
                ""
            };
            ngx_log_error!(
                NGX_LOG_ERR,
                log,
                "http_matches_epp: could not get specific inference endpoint from EndpointPicker; \
                 status: {}; body: \"{}{more}\"{cut}",
                ctx.status,
                escape(&body[..body.len().min(BODY_SHOWN)], BODY_SHOWN)
            );
        } else {
            ngx_log_error!(
                NGX_LOG_ERR,
                log,
                "http_matches_epp: no answer from the EndpointPicker shim (status: {}, see the \
                 upstream error above); body: \"\"",
                ctx.rc
            );
        }
        redirect(r, ctx.path)
    }
}

/// The redirect to `$epp_internal_path` (`path`), with the client's query string.
///
/// # Safety
/// `r` must be the client's request; `path` lives in its pool.
unsafe fn redirect(r: *mut ngx_http_request_t, path: ngx_str_t) -> ngx_int_t {
    // SAFETY: the request and its strings are NGINX's; the redirect copies what it keeps.
    unsafe {
        let bytes = path.as_bytes();
        if bytes.is_empty() {
            return fail(r, "missing required variable $epp_internal_path");
        }
        if bytes.contains(&b'?') {
            return fail(
                r,
                &format!(
                    "$epp_internal_path \"{}\" has a query string; the client's is kept",
                    escape(bytes, 128)
                ),
            );
        }
        let mut uri = path;
        if bytes.starts_with(b"@") {
            ngx_http_named_location(r, &mut uri)
        } else {
            // The client's query string, byte for byte.
            let args: *mut ngx_str_t = &mut (*r).args;
            ngx_http_internal_redirect(r, &mut uri, args)
        }
    }
}

/// Every `X-Gateway-Destination-Endpoint` line of the shim's answer, joined with `, `.
///
/// # Safety
/// `list` must be an initialized NGINX list of `ngx_table_elt_t`.
unsafe fn shim_endpoint(list: &ngx::ffi::ngx_list_t) -> Vec<u8> {
    // SAFETY: each part holds `nelts` initialized elements; `next` is null or the next part.
    unsafe {
        let mut joined: Vec<u8> = Vec::new();
        let mut part: *const ngx_list_part_t = &list.part;
        while !part.is_null() {
            let elts = (*part).elts as *const ngx_table_elt_t;
            for i in 0..(*part).nelts {
                let h = &*elts.add(i);
                if h.hash != 0 && h.key.as_bytes().eq_ignore_ascii_case(ENDPOINT_HEADER) {
                    if !joined.is_empty() {
                        joined.extend_from_slice(b", ");
                    }
                    joined.extend_from_slice(h.value.as_bytes());
                }
            }
            part = (*part).next;
        }
        joined
    }
}

/// The module named `name` (null if NGINX has none).
///
/// # Safety
/// During configuration: `cf->cycle->modules` is the null-terminated array of every module,
/// each with a NUL-terminated `name` (or null).
unsafe fn find_module(cf: *mut ngx_conf_t, name: &CStr) -> *mut ngx_module_t {
    // SAFETY: see the contract.
    unsafe {
        let mut m = (*(*cf).cycle).modules;
        while !m.is_null() && !(*m).is_null() {
            if !(**m).name.is_null() && CStr::from_ptr((**m).name) == name {
                return *m;
            }
            m = m.add(1);
        }
        core::ptr::null_mut()
    }
}
