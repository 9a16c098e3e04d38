//! Configuration: directives, variables, and everything decided at load time (the conf
//! structures themselves are in `state`).
//!
//! Lists from `http_matches_load` and inline `http_matches` arguments are parsed and compiled
//! here, in the master, while NGINX reads its configuration: never per request, never per
//! worker. Problems surface at `nginx -t` in NGINX's own style.

use core::ffi::c_void;
use std::sync::Arc;

use ngx::core::{NGX_CONF_ERROR, NGX_CONF_OK, Pool, Status};
use ngx::ffi::{
    NGX_CONF_UNSET, NGX_LOG_EMERG, NGX_LOG_WARN, ngx_command_t, ngx_conf_full_name, ngx_conf_t,
    ngx_cycle_t, ngx_flag_t, ngx_hash_key_t, ngx_http_add_variable, ngx_http_core_loc_conf_t,
    ngx_http_core_srv_conf_t, ngx_http_get_variable_index, ngx_http_request_t,
    ngx_http_variable_value_t, ngx_int_t, ngx_parse_size, ngx_str_t, ngx_uint_t,
};
use ngx::http::{
    HttpModuleLocationConf, HttpModuleMainConf, HttpModuleServerConf, NgxHttpCoreModule,
};
use ngx::{ngx_conf_log_error, ngx_log_error};
use route_match::{Bounds, FileError, Syntax, Warning};

use crate::state::{
    DEFAULT_REGEX_BUDGET, DEFAULT_REGEX_CACHE_SIZE, DEFAULT_VAR_CACHE_SIZE, DEFAULT_VAR_MAX_SIZE,
    EXITING, LocConf, MainConf, NGX_CONF_UNSET_SIZE, NGX_CONF_UNSET_UINT, NamedCheck, SrvConf,
    release_free_memory,
};
use crate::util::{conf_args, conf_where, text};
use crate::{ConfResult, HttpMatchesModule, guard, handler};

const VAR_REDIRECT: &str = "matches_redirect";
const VAR_ENTRY: &str = "matches_entry";
/// Set by `http_matches_fallback`: how many servers the request fell back through.
const VAR_FALLBACK: &str = "matches_fallback";
const VAR_WORK: &str = "http_matches_work";

pub(crate) unsafe extern "C" fn create_main_conf(cf: *mut ngx_conf_t) -> *mut c_void {
    // SAFETY: `cf->pool` is the configuration pool; `allocate` registers a cleanup that drops
    // the Rust value when the cycle is destroyed.
    unsafe { Pool::from_ngx_pool((*cf).pool).allocate(MainConf::default()) as *mut c_void }
}

/// Defaults of the http-level directives that were not given.
pub(crate) unsafe extern "C" fn init_main_conf(
    cf: *mut ngx_conf_t,
    conf: *mut c_void,
) -> ConfResult {
    guard::directive(cf, || {
        // SAFETY: NGINX passes this module's main conf, created by `create_main_conf`.
        let mcf = unsafe { &mut *(conf as *mut MainConf) };
        if mcf.var_max_size == NGX_CONF_UNSET_SIZE {
            mcf.var_max_size = DEFAULT_VAR_MAX_SIZE;
        }
        if mcf.var_cache_size == NGX_CONF_UNSET_SIZE {
            mcf.var_cache_size = DEFAULT_VAR_CACHE_SIZE;
        }
        if mcf.regex_cache_size == NGX_CONF_UNSET_SIZE {
            mcf.regex_cache_size = DEFAULT_REGEX_CACHE_SIZE;
        }
        NGX_CONF_OK
    })
}

pub(crate) unsafe extern "C" fn create_srv_conf(cf: *mut ngx_conf_t) -> *mut c_void {
    // SAFETY: as above.
    unsafe { Pool::from_ngx_pool((*cf).pool).allocate(SrvConf::default()) as *mut c_void }
}

pub(crate) unsafe extern "C" fn create_loc_conf(cf: *mut ngx_conf_t) -> *mut c_void {
    // SAFETY: as above.
    unsafe { Pool::from_ngx_pool((*cf).pool).allocate(LocConf::default()) as *mut c_void }
}

pub(crate) unsafe extern "C" fn merge_loc_conf(
    cf: *mut ngx_conf_t,
    prev: *mut c_void,
    conf: *mut c_void,
) -> ConfResult {
    guard::directive(cf, || {
        // SAFETY: NGINX passes this module's parent and child location confs, both created by
        // `create_loc_conf`; they are distinct objects.
        let (prev, conf) = unsafe { (&*(prev as *const LocConf), &mut *(conf as *mut LocConf)) };
        if conf.strict == NGX_CONF_UNSET as ngx_flag_t {
            conf.strict = if prev.strict == NGX_CONF_UNSET as ngx_flag_t { 0 } else { prev.strict };
        }
        if conf.regex_budget == NGX_CONF_UNSET_UINT {
            conf.regex_budget = if prev.regex_budget == NGX_CONF_UNSET_UINT {
                DEFAULT_REGEX_BUDGET
            } else {
                prev.regex_budget
            };
        }
        // An inline list is inherited like other directives (this is what makes `http_matches`
        // work inside `if` blocks of its location).
        if conf.inline.is_none() && !conf.enabled {
            conf.inline = prev.inline.clone();
            conf.inline_empty = prev.inline_empty;
            conf.var_syntax = prev.var_syntax;
        }
        // `http_matches_epp`'s proxy handler goes into the `if` blocks of its location (blocks
        // with no name): there the content handler stays ours (an `if` block sets none) and
        // the proxy module inherits its upstream the same way.
        // SAFETY: during the merge `cf->ctx` holds the child location's confs.
        let clcf = NgxHttpCoreModule::location_conf(unsafe { &*cf });
        if conf.epp_proxy.is_none() && clcf.is_some_and(|c| c.noname() != 0) {
            conf.epp_proxy = prev.epp_proxy;
        }
        if let Some(why) = clcf.and_then(|c| crate::epp::merge_check(c, conf)) {
            // SAFETY: NGINX passes a valid configuration context whose log outlives the call.
            let log = unsafe { (*cf).log };
            ngx_log_error!(NGX_LOG_EMERG, log, "http_matches_epp: {why} in {}", conf.epp_where);
            return NGX_CONF_ERROR;
        }
        let warnings = core::mem::take(&mut conf.pending);
        report(cf, &warnings, &conf.pending_where, conf.strict == 1)
    })
}

/// Logs malformed entries: `[warn]`, or `[emerg]` and a failed configuration when strict.
fn report(cf: *mut ngx_conf_t, warnings: &[Warning], at: &str, strict: bool) -> ConfResult {
    report_as(cf, warnings, at, strict, "the entry answers 500 when a request reaches it")
}

/// [`report`], saying what happens at run time (`[warn]`) in `consequence`.
fn report_as(
    cf: *mut ngx_conf_t,
    warnings: &[Warning],
    at: &str,
    strict: bool,
    consequence: &str,
) -> ConfResult {
    // SAFETY: NGINX passes a valid configuration context whose log outlives the call.
    let log = unsafe { (*cf).log };
    for w in warnings {
        if strict {
            ngx_log_error!(
                NGX_LOG_EMERG,
                log,
                "http_matches: {w} (http_matches_strict is on) in {at}"
            );
        } else {
            ngx_log_error!(NGX_LOG_WARN, log, "http_matches: {w}; {consequence} in {at}");
        }
    }
    if strict && !warnings.is_empty() { NGX_CONF_ERROR } else { NGX_CONF_OK }
}

/// The arguments of the directive being parsed, split into the `syntax=` option and the
/// others; `None` (logged) when `syntax=` is wrong.
///
/// # Safety
/// Only from a directive handler; the result must not outlive it (`cf->args`).
unsafe fn directive_args<'a>(cf: *mut ngx_conf_t) -> Option<(Syntax, Vec<&'a [u8]>)> {
    // SAFETY: the caller is a directive handler, so `cf->args` is valid for `'a`.
    let args = unsafe { conf_args(cf) };
    match split_syntax(args.get(1..).unwrap_or_default()) {
        Ok(v) => Some(v),
        Err(e) => {
            ngx_conf_log_error!(NGX_LOG_EMERG, cf, "http_matches: {e}");
            None
        }
    }
}

/// Splits directive arguments into the `syntax=` option and the others.
fn split_syntax(args: &[ngx_str_t]) -> Result<(Syntax, Vec<&[u8]>), String> {
    let mut syntax = Syntax::Auto;
    let mut rest = Vec::new();
    for a in args {
        match a.as_bytes().strip_prefix(b"syntax=") {
            Some(v) => {
                syntax =
                    core::str::from_utf8(v).ok().and_then(Syntax::from_name).ok_or_else(|| {
                        format!("invalid \"syntax={}\": use auto, typed or untyped", text(v))
                    })?;
            }
            None => rest.push(a.as_bytes()),
        }
    }
    Ok((syntax, rest))
}

/// `http_matches_load FILE [syntax=auto|typed|untyped];`
pub(crate) unsafe extern "C" fn cmd_http_matches_load(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> ConfResult {
    guard::directive(cf, || {
        // SAFETY: the directive is registered with NGX_HTTP_MAIN_CONF_OFFSET, so `conf` is this
        // module's main conf, created by `create_main_conf`.
        let mcf = unsafe { &mut *(conf as *mut MainConf) };
        if mcf.file.is_some() {
            return c"is duplicate".as_ptr().cast_mut();
        }
        // SAFETY: in a directive handler; the arguments are used before it returns.
        let Some((syntax, rest)) = (unsafe { directive_args(cf) }) else { return NGX_CONF_ERROR };
        let [path] = rest[..] else {
            ngx_conf_log_error!(NGX_LOG_EMERG, cf, "http_matches_load: expected one FILE");
            return NGX_CONF_ERROR;
        };
        let mut name = ngx_str_t { len: path.len(), data: path.as_ptr().cast_mut() };
        // SAFETY: `ngx_conf_full_name` resolves `name` against the configuration prefix,
        // allocating the result in the cycle pool; `name` points at the argument, alive here.
        if unsafe { ngx_conf_full_name((*cf).cycle, &mut name, 1) } != ngx::ffi::NGX_OK as ngx_int_t
        {
            return NGX_CONF_ERROR;
        }
        let file_name = text(name.as_bytes()).into_owned();
        mcf.compiled_any = true;
        crate::prefork::mark_used();
        let bounds = mcf.bounds();
        let compiled = route_match::compile_file_at_within(file_name.as_ref(), syntax, bounds);
        match compiled {
            Ok(file) => {
                for n in &file.notices {
                    ngx_conf_log_error!(NGX_LOG_WARN, cf, "http_matches: \"{}\": {n}", file_name);
                }
                mcf.compiled_memory += file.memory();
                mcf.file_warnings = file.warnings.clone();
                mcf.file = Some(Arc::new(file));
                mcf.file_name = file_name;
                // SAFETY: called from a directive handler.
                mcf.file_where = unsafe { conf_where(cf) };
                NGX_CONF_OK
            }
            Err(FileError::Io(e)) => {
                ngx_conf_log_error!(
                    NGX_LOG_EMERG,
                    cf,
                    "http_matches: cannot read \"{file_name}\": {e}"
                );
                NGX_CONF_ERROR
            }
            Err(FileError::Memory(e)) => {
                ngx_conf_log_error!(
                    NGX_LOG_EMERG,
                    cf,
                    "http_matches: cannot compile \"{file_name}\": {e} (http_matches_max_memory \
                     {}; {} bytes already taken by lists compiled before it)",
                    size_text(mcf.max_memory),
                    mcf.compiled_memory
                );
                NGX_CONF_ERROR
            }
            Err(e) => {
                ngx_conf_log_error!(
                    NGX_LOG_EMERG,
                    cf,
                    "http_matches: invalid \"{file_name}\": {e}"
                );
                NGX_CONF_ERROR
            }
        }
    })
}

/// `http_matches [JSON_LIST] [syntax=auto|typed|untyped];`
pub(crate) unsafe extern "C" fn cmd_http_matches(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> ConfResult {
    guard::directive(cf, || {
        // SAFETY: registered with NGX_HTTP_LOC_CONF_OFFSET: `conf` is this module's location
        // conf, created by `create_loc_conf`.
        let lcf = unsafe { &mut *(conf as *mut LocConf) };
        if lcf.enabled {
            return c"is duplicate".as_ptr().cast_mut();
        }
        // SAFETY: in a directive handler; the arguments are used before it returns.
        let Some((syntax, rest)) = (unsafe { directive_args(cf) }) else { return NGX_CONF_ERROR };
        lcf.enabled = true;
        crate::prefork::mark_used();
        lcf.var_syntax = syntax;
        // SAFETY: as below, the http main conf of this module exists while parsing.
        let main = HttpMatchesModule::main_conf_mut(unsafe { &*cf });
        let bounds = main.as_ref().map_or_else(Bounds::default, |m| m.bounds());
        if let Some(m) = main {
            m.compiled_any |= !rest.is_empty();
        }
        match rest[..] {
            [] => {}
            // `[]`: a list with no entry, so never a winner (a server's catch-all under
            // `http_matches_fallback`). The engine compiles no empty list; none is needed.
            [json] if is_empty_list(json) => lcf.inline_empty = true,
            [json] => match route_match::compile_list_within(json, syntax, bounds) {
                Ok(c) => {
                    // SAFETY: called from a directive handler.
                    lcf.pending_where = unsafe { conf_where(cf) };
                    let names: Vec<(usize, String)> = c
                        .list
                        .redirects()
                        .filter(|(_, p)| p.starts_with('@'))
                        .map(|(i, p)| (i, p.to_owned()))
                        .collect();
                    // SAFETY: `cf` is parsing a location inside a server block, so the core
                    // module's server conf of that server and this module's main conf exist
                    // (and live for the cycle).
                    let cf_ref = unsafe { &*cf };
                    let server = NgxHttpCoreModule::server_conf(cf_ref)
                        .map_or(core::ptr::null(), core::ptr::from_ref);
                    let main = HttpMatchesModule::main_conf_mut(cf_ref);
                    if let Some(mcf) = HttpMatchesModule::main_conf_mut(cf_ref) {
                        mcf.compiled_memory += c.list.memory();
                    }
                    if let (false, Some(mcf)) = (names.is_empty(), main) {
                        mcf.named_checks.push(NamedCheck {
                            server,
                            loc: core::ptr::from_ref(lcf),
                            names,
                            at: lcf.pending_where.clone(),
                        });
                    }
                    for n in &c.notices {
                        ngx_conf_log_error!(NGX_LOG_WARN, cf, "http_matches: inline list: {n}");
                    }
                    lcf.inline = Some(Arc::new(c.list));
                    lcf.pending = c.warnings;
                }
                Err(e) if e.is_memory() => {
                    ngx_conf_log_error!(
                        NGX_LOG_EMERG,
                        cf,
                        "http_matches: cannot compile the inline match list: {e} \
                         (http_matches_max_memory {} left for it)",
                        size_text(bounds.memory)
                    );
                    return NGX_CONF_ERROR;
                }
                Err(e) => {
                    ngx_conf_log_error!(
                        NGX_LOG_EMERG,
                        cf,
                        "http_matches: invalid inline match list: {e}"
                    );
                    return NGX_CONF_ERROR;
                }
            },
            _ => {
                ngx_conf_log_error!(
                    NGX_LOG_EMERG,
                    cf,
                    "http_matches: expected at most one match list (a JSON array)"
                );
                return NGX_CONF_ERROR;
            }
        }
        // SAFETY: `cf` is parsing a location (or `if`) block, so the core module's location
        // conf exists; we only set its content handler, as `proxy_pass` or `return` do.
        match NgxHttpCoreModule::location_conf_mut(unsafe { &*cf }) {
            Some(clcf) => clcf.handler = Some(handler::content_handler),
            None => return NGX_CONF_ERROR,
        }
        // SAFETY: as above, the http main conf of this module exists while parsing.
        if let Some(mcf) = HttpMatchesModule::main_conf_mut(unsafe { &*cf }) {
            mcf.used = true;
        }
        NGX_CONF_OK
    })
}

/// Whether an inline argument is the empty JSON array (`[]`, JSON whitespace allowed inside).
fn is_empty_list(json: &[u8]) -> bool {
    let rest = json.iter().filter(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    rest.eq(b"[]".iter())
}

/// `http_matches_fallback server_name;`
pub(crate) unsafe extern "C" fn cmd_http_matches_fallback(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> ConfResult {
    guard::directive(cf, || {
        // SAFETY: registered with NGX_HTTP_SRV_CONF_OFFSET: `conf` is this module's server
        // conf, created by `create_srv_conf`.
        let scf = unsafe { &mut *(conf as *mut SrvConf) };
        if scf.fallback.is_some() {
            return c"is duplicate".as_ptr().cast_mut();
        }
        // SAFETY: in a directive handler; the argument is copied before it returns.
        let args = unsafe { conf_args(cf) };
        let Some(name) = args.get(1) else { return NGX_CONF_ERROR };
        if !route_match::vhost::valid_fallback_name(name.as_bytes()) {
            ngx_conf_log_error!(
                NGX_LOG_EMERG,
                cf,
                "http_matches_fallback: \"{}\" is not a host name, \"*.\" and a host name, or \"\"",
                crate::util::escape(name.as_bytes(), 256)
            );
            return NGX_CONF_ERROR;
        }
        scf.fallback = Some(name.as_bytes().to_vec());
        scf.fallback_name = name.as_bytes().to_ascii_lowercase();
        // SAFETY: ngx_hash_key only reads `len` bytes of the name.
        scf.fallback_key = unsafe {
            ngx::ffi::ngx_hash_key(scf.fallback_name.as_mut_ptr(), scf.fallback_name.len())
        };
        // SAFETY: called from a directive handler.
        scf.fallback_where = unsafe { conf_where(cf) };
        NGX_CONF_OK
    })
}

/// A bound for log lines: bytes, or `off`.
fn size_text(n: usize) -> String {
    if n == usize::MAX { "off".to_owned() } else { n.to_string() }
}

/// A size in NGINX's own grammar (`ngx_parse_size`: a number with an optional `k` or `m`,
/// either case), the one `ngx_conf_set_size_slot` uses for every other size directive.
fn parse_size(v: &[u8]) -> Option<usize> {
    let mut s = ngx_str_t { len: v.len(), data: v.as_ptr().cast_mut() };
    // SAFETY: `s` describes `v`'s bytes, alive for the call; `ngx_parse_size` only reads them.
    let n = unsafe { ngx_parse_size(&mut s) };
    usize::try_from(n).ok()
}

/// `http_matches_max_memory size [pattern=size];`
pub(crate) unsafe extern "C" fn cmd_http_matches_max_memory(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> ConfResult {
    guard::directive(cf, || {
        // SAFETY: registered with NGX_HTTP_MAIN_CONF_OFFSET: `conf` is this module's main conf.
        let mcf = unsafe { &mut *(conf as *mut MainConf) };
        if mcf.compiled_any {
            ngx_conf_log_error!(
                NGX_LOG_EMERG,
                cf,
                "http_matches_max_memory must come before http_matches_load and every inline \
                 http_matches list (they are compiled where they stand)"
            );
            return NGX_CONF_ERROR;
        }
        // SAFETY: in a directive handler; the arguments are used before it returns.
        let args = unsafe { conf_args(cf) };
        for (i, a) in args.iter().enumerate().skip(1) {
            let v = a.as_bytes();
            let (value, is_pattern) = match v.strip_prefix(b"pattern=") {
                Some(p) => (p, true),
                None => (v, false),
            };
            let size = match (value, i, is_pattern) {
                (b"off", 1, false) => Some(usize::MAX),
                (_, 1, false) | (_, 2.., true) => parse_size(value).filter(|n| *n > 0),
                _ => None,
            };
            let Some(size) = size else {
                ngx_conf_log_error!(
                    NGX_LOG_EMERG,
                    cf,
                    "http_matches_max_memory: invalid \"{}\": expected a size (or off), then \
                     optionally pattern=size",
                    text(v)
                );
                return NGX_CONF_ERROR;
            };
            if is_pattern {
                mcf.max_pattern_memory = size;
            } else {
                mcf.max_memory = size;
            }
        }
        NGX_CONF_OK
    })
}

/// `http_matches_regex_budget steps | off;`
pub(crate) unsafe extern "C" fn cmd_http_matches_regex_budget(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> ConfResult {
    guard::directive(cf, || {
        // SAFETY: registered with NGX_HTTP_LOC_CONF_OFFSET: `conf` is this module's loc conf.
        let lcf = unsafe { &mut *(conf as *mut LocConf) };
        if lcf.regex_budget != NGX_CONF_UNSET_UINT {
            return c"is duplicate".as_ptr().cast_mut();
        }
        // SAFETY: in a directive handler; the arguments are used before it returns.
        let args = unsafe { conf_args(cf) };
        let v = args.get(1).map_or(&b""[..], |a| a.as_bytes());
        if v == b"off" {
            lcf.regex_budget = 0;
            return NGX_CONF_OK;
        }
        if let Some(n) = core::str::from_utf8(v).ok().and_then(|s| s.parse::<ngx_uint_t>().ok()) {
            if n != NGX_CONF_UNSET_UINT {
                lcf.regex_budget = n;
                return NGX_CONF_OK;
            }
        }
        let time_unit = v.iter().rposition(u8::is_ascii_digit).is_some_and(|i| {
            matches!(&v[i + 1..], b"ms" | b"s" | b"m" | b"h" | b"d" | b"w" | b"M" | b"y")
        });
        if time_unit {
            // The old syntax (a time): still loads, with the default work budget.
            ngx_conf_log_error!(
                NGX_LOG_WARN,
                cf,
                "http_matches_regex_budget \"{}\": the budget is now a count of PCRE2 match \
                 steps, not a time (the answer must not depend on the machine's speed); the \
                 default of {} steps applies",
                text(v),
                DEFAULT_REGEX_BUDGET
            );
            lcf.regex_budget = DEFAULT_REGEX_BUDGET;
            return NGX_CONF_OK;
        }
        ngx_conf_log_error!(
            NGX_LOG_EMERG,
            cf,
            "http_matches_regex_budget: invalid \"{}\": expected a number of match steps or off",
            text(v)
        );
        NGX_CONF_ERROR
    })
}

/// The named locations (`@name`) of every server, per server.
///
/// # Safety
/// Only from postconfiguration: the core module's main conf, its servers and their
/// `named_locations` arrays (built by ngx_http_init_locations just before) are alive.
unsafe fn named_locations(
    cf: *mut ngx_conf_t,
) -> Vec<(*const ngx_http_core_srv_conf_t, Vec<Vec<u8>>)> {
    let mut out = Vec::new();
    // SAFETY: see the function's contract; `servers` is an array of core srv conf pointers and
    // each `named_locations` is null or a null-terminated array of core loc conf pointers.
    unsafe {
        let Some(cmcf) = NgxHttpCoreModule::main_conf(&*cf) else { return out };
        let servers = &cmcf.servers;
        if servers.nelts == 0 || servers.elts.is_null() {
            return out;
        }
        let servers = core::slice::from_raw_parts(
            servers.elts as *const *const ngx_http_core_srv_conf_t,
            servers.nelts,
        );
        for &cscf in servers {
            let mut names = Vec::new();
            let mut p = (*cscf).named_locations;
            while !p.is_null() && !(*p).is_null() {
                let clcf: *const ngx_http_core_loc_conf_t = *p;
                names.push((*clcf).name.as_bytes().to_vec());
                p = p.add(1);
            }
            out.push((cscf, names));
        }
    }
    out
}

/// `@name` redirect paths that no server defines (the file's lists: any server; an inline
/// list: its own server, as `ngx_http_named_location` looks there) are a `[warn]` at load,
/// or an `[emerg]` under `http_matches_strict on`. Returns `false` when that fails the
/// configuration.
fn check_named_locations(cf: *mut ngx_conf_t, mcf: &mut MainConf, file_strict: bool) -> bool {
    let checks = core::mem::take(&mut mcf.named_checks);
    if checks.is_empty() && mcf.file.is_none() {
        return true;
    }
    // SAFETY: called from postconfiguration.
    let servers = unsafe { named_locations(cf) };
    let warning = |key: Option<&[u8]>, entry: usize, message: String| Warning {
        key: key.map(|k| text(k).into_owned()),
        also: 0,
        entry,
        message,
    };
    const WINS: &str = "a request that it wins answers 500";
    let mut ok = true;
    for c in &checks {
        let names = servers.iter().find(|(s, _)| core::ptr::eq(*s, c.server)).map(|(_, n)| n);
        let missing: Vec<Warning> = c
            .names
            .iter()
            .filter(|(_, name)| !names.is_some_and(|n| n.iter().any(|n| n == name.as_bytes())))
            .map(|(entry, name)| {
                let what = format!(
                    "redirectPath \"{name}\" names a location that this server does not define"
                );
                warning(None, *entry, what)
            })
            .collect();
        // SAFETY: `c.loc` is a location conf in the configuration pool, merged by now.
        let strict = unsafe { (*c.loc).strict == 1 };
        ok &= report_as(cf, &missing, &c.at, strict, WINS) == NGX_CONF_OK;
    }
    if let Some(file) = &mcf.file {
        let mut missing: Vec<Warning> = Vec::new();
        for (key, list) in file.iter() {
            for (entry, path) in list.redirects().filter(|(_, p)| p.starts_with('@')) {
                if !servers.iter().any(|(_, n)| n.iter().any(|n| n == path.as_bytes())) {
                    let what =
                        format!("redirectPath \"{path}\" names a location that no server defines");
                    missing.push(warning(Some(key), entry, what));
                }
            }
        }
        missing.sort_by(|a, b| (&a.key, a.entry).cmp(&(&b.key, b.entry)));
        ok &= report_as(cf, &missing, &mcf.file_where, file_strict, WINS) == NGX_CONF_OK;
    }
    ok
}

/// `init_module`: once per configuration load (start and reload, not `nginx -t`), the version
/// at `notice`, as NGINX names its own at start, so an error log says which build ran.
pub(crate) unsafe extern "C" fn init_module(cycle: *mut ngx_cycle_t) -> ngx::ffi::ngx_int_t {
    // SAFETY: `cycle` and its log are valid during init_module.
    let log = unsafe { (*cycle).log };
    let notice = std::panic::AssertUnwindSafe(|| {
        // SAFETY: NGINX sets `ngx_test_config` before it loads any configuration and only
        // reads it afterwards.
        if unsafe { ngx::ffi::ngx_test_config } == 0 {
            crate::prefork::arm();
            ngx_log_error!(
                ngx::ffi::NGX_LOG_NOTICE,
                log,
                "ngx_http_matches_module {} loaded",
                env!("CARGO_PKG_VERSION")
            );
        }
    });
    // Like every entry point: a panic must not unwind into NGINX. Only a notice is at stake.
    let _ = std::panic::catch_unwind(notice);
    ngx::ffi::NGX_OK as ngx::ffi::ngx_int_t
}

/// `exit_process`: this worker is exiting; see `MainConf`'s `Drop`.
pub(crate) unsafe extern "C" fn exit_process(_cycle: *mut ngx_cycle_t) {
    EXITING.store(true, core::sync::atomic::Ordering::Relaxed);
    // Nothing to log from here if it failed: the worker is on its way out either way.
    let _ = std::panic::catch_unwind(crate::cache::forget_all);
}

/// Registers `$matches_redirect` and `$matches_entry` before the configuration is parsed, so
/// `log_format` and friends can name them.
pub(crate) fn preconfiguration(cf: *mut ngx_conf_t) -> Status {
    // A configuration load begins (master): the heap held since the last fork serves it.
    crate::prefork::release();
    crate::guard::install_panic_hook();
    if !begin_memory_guard() {
        ngx_conf_log_error!(
            NGX_LOG_EMERG,
            cf,
            "http_matches: out of memory while loading the configuration: the system refused \
             the module's 16 MiB reserve (an address-space limit?); the configuration is not \
             loaded"
        );
        return Status::NGX_ERROR;
    }
    if !crate::util::var::layout_ok() {
        ngx_conf_log_error!(
            NGX_LOG_EMERG,
            cf,
            "http_matches: ngx_variable_value_t is not laid out as this module expects on this \
             platform; the module cannot set variables safely"
        );
        return Status::NGX_ERROR;
    }
    for name in [VAR_REDIRECT, VAR_ENTRY, VAR_WORK, VAR_FALLBACK] {
        let mut n = ngx_str_t { len: name.len(), data: name.as_ptr().cast_mut() };
        // SAFETY: `ngx_http_add_variable` copies the name into the configuration pool.
        let v = unsafe { ngx_http_add_variable(cf, &mut n, 0) };
        if v.is_null() {
            return Status::NGX_ERROR;
        }
        // SAFETY: `v` is the variable NGINX just created; we set its getter.
        unsafe { (*v).get_handler = Some(variable_not_set) };
    }
    if !crate::epp::preconfiguration(cf) {
        return Status::NGX_ERROR;
    }
    Status::NGX_OK
}

/// Getter of our variables: until the handler stores a value (see `handler`), there is none.
unsafe extern "C" fn variable_not_set(
    _r: *mut ngx_http_request_t,
    v: *mut ngx_http_variable_value_t,
    _data: usize,
) -> ngx_int_t {
    // SAFETY: NGINX passes the value slot to fill.
    unsafe { (*v).set_not_found(1) };
    Status::NGX_OK.into()
}

/// The declared variable named `name` (by `set`, `map`, ...), as ngx_http_add_variable made it;
/// `None` when nothing declared it.
fn declared_variable(
    cf: *mut ngx_conf_t,
    name: &str,
) -> Option<*const ngx::ffi::ngx_http_variable_t> {
    // SAFETY: during postconfiguration the core main conf and its `variables_keys` (freed only
    // later, by ngx_http_variables_init_vars) are alive; `keys` is an array of ngx_hash_key_t,
    // each `value` the `ngx_http_variable_t` that ngx_http_add_variable made (alive with the
    // configuration).
    unsafe {
        let cmcf = NgxHttpCoreModule::main_conf(&*cf)?;
        let vk = cmcf.variables_keys;
        if vk.is_null() || (*vk).keys.nelts == 0 {
            return None;
        }
        let keys =
            core::slice::from_raw_parts((*vk).keys.elts as *const ngx_hash_key_t, (*vk).keys.nelts);
        keys.iter()
            .find(|k| k.key.as_bytes() == name.as_bytes())
            .map(|k| k.value as *const ngx::ffi::ngx_http_variable_t)
    }
}

/// Whether some directive (`set`, `map`, ...) declared a variable named `name`.
pub(crate) fn declared(cf: *mut ngx_conf_t, name: &str) -> bool {
    declared_variable(cf, name).is_some()
}

/// Whether the declared variable `name` has a definition of its own: a `map`, `geo`,
/// `split_clients`, `js_set`, ... gives it a getter. `set` alone declares it weak
/// (ngx_http_rewrite_module, `NGX_HTTP_VAR_WEAK`): NGINX then replaces its getter by the
/// prefix variable's when it initializes the variables, after postconfiguration, so that a
/// `$http_...` name reads the request header of that name where no `set` ran.
fn has_getter(cf: *mut ngx_conf_t, name: &str) -> bool {
    match declared_variable(cf, name) {
        Some(v) if !v.is_null() => {
            // SAFETY: `v` is a live ngx_http_variable_t of this configuration
            // (`declared_variable`).
            let v = unsafe { &*v };
            v.get_handler.is_some() && v.flags & ngx::ffi::NGX_HTTP_VAR_WEAK as ngx_uint_t == 0
        }
        _ => false,
    }
}

/// The index of variable `name` when something in the configuration (`log_format`, `return`,
/// `add_header`, ...) refers to it; `None` when nothing does (the handler then counts no work).
fn indexed_variable(cf: *mut ngx_conf_t, name: &str) -> Option<ngx_uint_t> {
    // SAFETY: during postconfiguration the core main conf and its `variables` array (of
    // ngx_http_variable_t, one per indexed variable, in index order) are alive.
    unsafe {
        let cmcf = NgxHttpCoreModule::main_conf(&*cf)?;
        let vars = &cmcf.variables;
        if vars.nelts == 0 || vars.elts.is_null() {
            return None;
        }
        let vars = core::slice::from_raw_parts(
            vars.elts as *const ngx::ffi::ngx_http_variable_t,
            vars.nelts,
        );
        vars.iter().position(|v| v.name.as_bytes() == name.as_bytes())
    }
}

fn variable_index(cf: *mut ngx_conf_t, name: &str) -> Option<ngx_uint_t> {
    let mut n = ngx_str_t { len: name.len(), data: name.as_ptr().cast_mut() };
    // SAFETY: valid during configuration; the name is copied by NGINX.
    let i = unsafe { ngx_http_get_variable_index(cf, &mut n) };
    (i != ngx::ffi::NGX_ERROR as ngx_int_t).then_some(i as ngx_uint_t)
}

/// The allocator's reserve is held from here to [`end_memory_guard`]: an allocation that
/// fails anywhere in this module's part of the load (a compile, a directive handler, a merge,
/// the checks of postconfiguration) is rescued and refuses the load there, instead of
/// aborting the master (`pcre2_bounded::memory`). `false` when the system cannot give the
/// reserve now: the load is refused before anything of the module allocates (without the
/// reserve, any allocation that fails would abort the master: a reload swept across
/// address-space limits found one in the file's read buffer).
fn begin_memory_guard() -> bool {
    pcre2_bounded::memory::begin_load()
}

/// The last checkpoint of the load: an allocation failed since [`begin_memory_guard`] (and
/// was rescued by the reserve) fails it with an `[emerg]`; the reserve is given back either
/// way, so no process forked after the load keeps it.
fn end_memory_guard(cf: *mut ngx_conf_t, status: Status) -> Status {
    if pcre2_bounded::memory::end_load() {
        ngx_conf_log_error!(
            NGX_LOG_EMERG,
            cf,
            "http_matches: out of memory while loading the configuration: the system refused \
             an allocation (an address-space limit?); the configuration is not loaded"
        );
        return Status::NGX_ERROR;
    }
    status
}

/// Reports the file's malformed entries (strictness of the http level) and resolves the
/// variables the handler reads; ends the memory guard of the load.
pub(crate) fn postconfiguration(cf: *mut ngx_conf_t) -> Status {
    let status = postconfiguration_checks(cf);
    want_prefork(cf);
    end_memory_guard(cf, status)
}

/// `http_matches_prefork on`: the fill runs at the next fork (`init_module` arms it); and the
/// workers' JIT allowance, what `http_matches_max_memory` leaves (see `prefork`).
fn want_prefork(cf: *mut ngx_conf_t) {
    // SAFETY: postconfiguration runs with `cf->ctx` = the http block's context.
    let mcf = HttpMatchesModule::main_conf(unsafe { &*cf });
    let on = mcf.is_some_and(|m| m.prefork == 1);
    let left = mcf.map_or(0, |m| m.max_memory.saturating_sub(m.compiled_memory));
    crate::prefork::want(on, left);
}

fn postconfiguration_checks(cf: *mut ngx_conf_t) -> Status {
    // SAFETY: postconfiguration runs with `cf->ctx` = the http block's context.
    let cf_ref = unsafe { &*cf };
    let strict = HttpMatchesModule::location_conf(cf_ref).is_some_and(|l| l.strict == 1);
    let Some(mcf) = HttpMatchesModule::main_conf_mut(cf_ref) else { return Status::NGX_ERROR };
    let warnings = core::mem::take(&mut mcf.file_warnings);
    if report(cf, &warnings, &mcf.file_where, strict) == NGX_CONF_ERROR {
        return Status::NGX_ERROR;
    }
    if !check_named_locations(cf, mcf, strict) {
        return Status::NGX_ERROR;
    }
    if !crate::fallback::resolve(cf) {
        return Status::NGX_ERROR;
    }
    if mcf.file.is_some() {
        release_free_memory();
    }
    // The workers fork from this process: they inherit the setting of its thread.
    route_match::regex_cache::set_capacity(mcf.regex_cache_size);
    crate::epp::postconfiguration(cf, &mut mcf.epp);
    if !mcf.used {
        return Status::NGX_OK;
    }
    // Only variables that some `set` declares: asking NGINX for an undeclared one would fail
    // the configuration with "unknown variable".
    if mcf.file.is_some() && declared(cf, "match_key") {
        mcf.match_key = variable_index(cf, "match_key");
    }
    if declared(cf, "http_matches") {
        mcf.http_matches = variable_index(cf, "http_matches");
        mcf.http_matches_getter = has_getter(cf, "http_matches");
    }
    mcf.var_work = indexed_variable(cf, VAR_WORK);
    mcf.var_fallback = variable_index(cf, VAR_FALLBACK);
    match (variable_index(cf, VAR_REDIRECT), variable_index(cf, VAR_ENTRY)) {
        (Some(r), Some(e)) => {
            mcf.var_redirect = r;
            mcf.var_entry = e;
            Status::NGX_OK
        }
        _ => Status::NGX_ERROR,
    }
}
