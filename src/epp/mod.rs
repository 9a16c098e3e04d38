//! `http_matches_epp [URL];`: NGF's `epp.js` as a directive (README). It runs the proxy's own
//! `proxy_pass URL` (or `grpc_pass`) for its location, keeps the handler that installed and
//! installs [`flow::content_handler`]: the client's request makes a subrequest to its own URI,
//! served by the saved handler, so every `proxy_*` / `grpc_*` directive of the location tunes
//! the call. NGINX callbacks (ngx 0.5 has no subrequest primitive), no async runtime. The path:
//! [`flow`]; the modes: [`shim`], [`grpc`].

pub(crate) mod check;
pub(crate) mod endpoints;
mod flow;
pub(crate) mod grpc;
mod shim;

use core::ffi::{CStr, c_char};

use ngx::core::{NGX_CONF_ERROR, NGX_CONF_OK};
use ngx::ffi::{
    NGX_HTTP_VAR_CHANGEABLE, NGX_HTTP_VAR_NOCACHEABLE, ngx_array_t, ngx_conf_t,
    ngx_http_conf_ctx_t, ngx_http_handler_pt, ngx_http_request_t, ngx_int_t, ngx_palloc, ngx_str_t,
    ngx_uint_t,
};
use ngx::http::{HttpModuleLocationConf, HttpModuleMainConf, NgxHttpCoreModule};

use epp_proto::destination::Mode;
use epp_proto::verdict::{VAR_HOST, VAR_PATH, VAR_PORT};

use crate::epp::flow::{content_handler, register_filter};
use crate::guard::{self, Slot};
use crate::state::{EppVars, LocConf};
use crate::util::{emerg, modules, pool_str, text};
use crate::{ConfResult, HttpMatchesModule, variables};

/// The shim NGF runs beside NGINX (epp.js's `SHIM_URI`).
const DEFAULT_URL: &str = "http://127.0.0.1:54800";
const VAR_ENDPOINT: &str = "inference_workload_endpoint";

/// `http_matches_epp [URL];`
pub(crate) static EPP: Slot<LocConf> = Slot { given: |l| l.epp_proxy.is_some(), set: epp };

fn epp(cf: *mut ngx_conf_t, lcf: &mut LocConf, args: &[ngx_str_t]) -> ConfResult {
    if let Some(why) = not_here(cf, lcf) {
        return emerg(cf, NGX_CONF_ERROR, format_args!("http_matches_epp: {why}"));
    }
    let url = args.get(1).map_or(DEFAULT_URL.as_bytes(), |a| a.as_bytes());
    let mode = match epp_proto::destination::check_url(url) {
        Ok(mode) => mode,
        Err(e) => {
            let what = format_args!("http_matches_epp: invalid URL \"{}\": {e}", text(url));
            return emerg(cf, NGX_CONF_ERROR, what);
        }
    };
    let grpc = mode != Mode::Shim;
    // SAFETY: in a directive handler, `cf` parses this location.
    let proxy = match unsafe { proxy_pass(cf, url, mode) } {
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
}

/// Why `http_matches_epp` may not stand in the location `cf` parses, if so.
fn not_here(cf: *mut ngx_conf_t, lcf: &LocConf) -> Option<&'static str> {
    if lcf.enabled {
        return Some("cannot be combined with http_matches in one location");
    }
    // SAFETY: `cf` parses a location block: the core module's location conf exists.
    let named = NgxHttpCoreModule::location_conf(unsafe { &*cf }).is_some_and(|c| c.named() != 0);
    named.then_some(
        "not allowed in a named location (the call to the shim is a subrequest to the \
         request's URI, which never comes back to a named location)",
    )
}

/// Runs the proxy module's directives `mode` needs here (`Mode::commands`) and returns the
/// content handler the pass installed.
///
/// # Safety
/// Only from a directive handler of a location block.
unsafe fn proxy_pass(
    cf: *mut ngx_conf_t,
    url: &[u8],
    mode: Mode,
) -> Result<unsafe extern "C" fn(*mut ngx_http_request_t) -> ngx_int_t, ConfResult> {
    // SAFETY: as the caller's.
    unsafe {
        for c in mode.commands(url) {
            proxy_command(cf, mode.module(), c.name, &c.values, c.kept)?;
        }
        let handler: ngx_http_handler_pt =
            NgxHttpCoreModule::location_conf_mut(&*cf).and_then(|clcf| clcf.handler);
        handler.ok_or(NGX_CONF_ERROR)
    }
}

/// Runs `module`'s command `name` with `values` here; a message it returns fails the directive
/// (logged after its name, as NGINX would), but "is duplicate" when `set_before` (the
/// operator's value stays).
///
/// # Safety
/// Only from a directive handler of a location block.
unsafe fn proxy_command(
    cf: *mut ngx_conf_t,
    module: &CStr,
    name: &[u8],
    values: &[&[u8]],
    set_before: bool,
) -> Result<(), ConfResult> {
    // SAFETY: during configuration `cf->cycle->modules` is the null-terminated array of
    // every module; each has a NUL-terminated `name` and a `commands` array ending with an
    // entry whose name is empty. `cf->ctx` is the location's ngx_http_conf_ctx_t, whose
    // `loc_conf` has one slot per HTTP module (the proxy's included). `cf->args` is restored
    // before returning; the new array and its strings live in the configuration pool.
    unsafe {
        let module_name = module.to_string_lossy();
        let Some((_, proxy)) = modules(cf).find(|(n, _)| *n == module) else {
            let what = format_args!("http_matches_epp: NGINX is built without {module_name}");
            return Err(emerg(cf, NGX_CONF_ERROR, what));
        };
        let mut cmd = (*proxy).commands;
        while (*cmd).name.len != 0 && (*cmd).name.as_bytes() != name {
            cmd = cmd.add(1);
        }
        let Some(set) = (*cmd).set.filter(|_| (*cmd).name.len != 0) else {
            let what = format_args!("http_matches_epp: no {} in {module_name}", text(name));
            return Err(emerg(cf, NGX_CONF_ERROR, what));
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
            return Ok(());
        } else if rc == NGX_CONF_ERROR {
            return Err(NGX_CONF_ERROR);
        }
        // A message the caller (NGINX) would print after the directive's name: a static C
        // string of the command's.
        let why = CStr::from_ptr(rc as *const c_char);
        if set_before && why == guard::DUPLICATE {
            return Ok(());
        }
        let what = format_args!("http_matches_epp: {} {}", text(name), why.to_string_lossy());
        Err(emerg(cf, NGX_CONF_ERROR, what))
    }
}

/// At merge, for a location with its own `http_matches_epp`: why it cannot work, if so: a
/// content handler set after ours, or `limit_except` (whose block gets the proxy's handler).
pub(crate) fn merge_check(
    clcf: &ngx::ffi::ngx_http_core_loc_conf_t,
    lcf: &LocConf,
) -> Option<&'static str> {
    if lcf.epp_where.is_empty() || clcf.noname() != 0 {
        return None;
    }
    // Compared as the number stored at the directive, not two addresses of one function.
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
    variables::add(cf, VAR_ENDPOINT, flags as ngx_uint_t, Some(variables::empty))
}

/// The indexes of `$epp_host`, `$epp_port`, `$epp_internal_path` when some directive declares
/// them (an undeclared one is "missing" at run time, as in epp.js, not a load failure), those
/// it sets, and the calls' body filter; `false`: the load is refused (logged).
pub(crate) fn postconfiguration(cf: *mut ngx_conf_t, epp: &mut EppVars) -> bool {
    if !epp.used {
        return true;
    }
    // SAFETY: postconfiguration of the http block.
    if !unsafe { register_filter(cf) } {
        return false;
    }
    let index = |name| variables::declared_index(cf, name);
    epp.host = index(VAR_HOST);
    epp.port = index(VAR_PORT);
    epp.path = index(VAR_PATH);
    epp.content_length = variables::variable_index(cf, "content_length");
    epp.endpoints = variables::variable_index(cf, endpoints::VAR_ENDPOINTS);
    true
}
