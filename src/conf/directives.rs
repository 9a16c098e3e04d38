//! The directive table and the handlers of this module's directives: each turns its
//! arguments into typed values (lists compiled where they stand, in the master) and fails
//! the load in NGINX's own style.

use core::ffi::{c_char, c_void};
use core::mem::offset_of;
use std::sync::Arc;

use ngx::core::{NGX_CONF_ERROR, NGX_CONF_OK};
use ngx::ffi::{
    NGX_CONF_FLAG, NGX_CONF_NOARGS, NGX_CONF_TAKE1, NGX_CONF_TAKE2, NGX_CONF_TAKE12,
    NGX_HTTP_LIF_CONF, NGX_HTTP_LOC_CONF, NGX_HTTP_LOC_CONF_OFFSET, NGX_HTTP_MAIN_CONF,
    NGX_HTTP_MAIN_CONF_OFFSET, NGX_HTTP_SRV_CONF, NGX_HTTP_UPS_CONF, NGX_LOG_WARN, ngx_command_t,
    ngx_conf_full_name, ngx_conf_set_flag_slot, ngx_conf_set_size_slot, ngx_conf_t, ngx_int_t,
    ngx_parse_size, ngx_str_t, ngx_uint_t,
};
use ngx::http::{
    HttpModuleLocationConf, HttpModuleMainConf, HttpModuleServerConf, NgxHttpCoreModule,
};
use ngx::{ngx_conf_log_error, ngx_string};
use route_match::{Bounds, Syntax};

use crate::epp::{EPP, endpoints::ENDPOINTS};
use crate::guard::{self, Slot};
use crate::reload_report::RELOAD_REPORT;
use crate::state::{Level, LocConf, MainConf, NamedCheck, SrvConf};
use crate::util::{conf_where, emerg, text};
use crate::{ConfResult, HttpMatchesModule, handler};

/// A directive handler as `ngx_command_t` holds it.
type SetFn = unsafe extern "C" fn(*mut ngx_conf_t, *mut ngx_command_t, *mut c_void) -> *mut c_char;

/// One entry of the directive table: `name`, its contexts and arguments (`type_`), its handler,
/// the conf it writes (`NGX_HTTP_*_CONF_OFFSET`) and the field's offset (NGINX's slot setters).
const fn directive(
    name: ngx_str_t,
    type_: u32,
    set: SetFn,
    conf: ngx_uint_t,
    offset: ngx_uint_t,
) -> ngx_command_t {
    ngx_command_t {
        name,
        type_: type_ as ngx_uint_t,
        set: Some(set),
        conf,
        offset,
        post: core::ptr::null_mut(),
    }
}

/// A directive of this module's own: its [`Slot`] `s` run by [`guard::slot`] on its level `T`.
const fn slot<T: Level>(name: ngx_str_t, type_: u32, s: &'static Slot<T>) -> ngx_command_t {
    let post = core::ptr::from_ref(s).cast_mut().cast();
    ngx_command_t { post, ..directive(name, type_, guard::slot::<T>, T::OFFSET, 0) }
}

/// An `on|off` directive: `ngx_conf_set_flag_slot` into the location conf's field at `offset`.
const fn flag(name: ngx_str_t, contexts: u32, offset: usize) -> ngx_command_t {
    let conf = NGX_HTTP_LOC_CONF_OFFSET;
    directive(name, contexts | NGX_CONF_FLAG, ngx_conf_set_flag_slot, conf, offset)
}

/// An `http`-level size (`16k`, `32m`): `ngx_conf_set_size_slot` into the main conf's field.
const fn main_size(name: ngx_str_t, offset: usize) -> ngx_command_t {
    let (type_, conf) = (MAIN | NGX_CONF_TAKE1, NGX_HTTP_MAIN_CONF_OFFSET);
    directive(name, type_, ngx_conf_set_size_slot, conf, offset)
}

const MAIN: u32 = NGX_HTTP_MAIN_CONF;
const LOC: u32 = NGX_HTTP_LOC_CONF;
const ANY_LEVEL: u32 = NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | LOC;

pub(crate) static mut NGX_HTTP_MATCHES_COMMANDS: [ngx_command_t; 13] = [
    slot(ngx_string!("http_matches_load"), MAIN | NGX_CONF_TAKE12, &LOAD),
    slot(
        ngx_string!("http_matches"),
        LOC | NGX_HTTP_LIF_CONF | NGX_CONF_NOARGS | NGX_CONF_TAKE12,
        &MATCHES,
    ),
    flag(ngx_string!("http_matches_strict"), ANY_LEVEL, offset_of!(LocConf, strict)),
    slot(ngx_string!("http_matches_fallback"), NGX_HTTP_SRV_CONF | NGX_CONF_TAKE1, &FALLBACK),
    slot(ngx_string!("http_matches_regex_budget"), ANY_LEVEL | NGX_CONF_TAKE1, &REGEX_BUDGET),
    slot(ngx_string!("http_matches_max_memory"), MAIN | NGX_CONF_TAKE12, &MAX_MEMORY),
    main_size(ngx_string!("http_matches_regex_cache"), offset_of!(MainConf, regex_cache_size)),
    main_size(ngx_string!("http_matches_var_max_size"), offset_of!(MainConf, var_max_size)),
    main_size(ngx_string!("http_matches_var_cache"), offset_of!(MainConf, var_cache_size)),
    // http_matches_epp (issue #32; see src/epp).
    slot(ngx_string!("http_matches_epp"), LOC | NGX_CONF_NOARGS | NGX_CONF_TAKE1, &EPP),
    // http_matches_epp_endpoints (issue #47; see src/epp/endpoints.rs).
    slot(
        ngx_string!("http_matches_epp_endpoints"),
        NGX_HTTP_UPS_CONF | NGX_CONF_NOARGS,
        &ENDPOINTS,
    ),
    // The master's verdict on each configuration load (issue #45; see src/reload_report.rs).
    slot(ngx_string!("http_matches_reload_report"), MAIN | NGX_CONF_TAKE2, &RELOAD_REPORT),
    ngx_command_t::empty(),
];

/// A directive's arguments (`args`, `[0]` its name), split into the `syntax=` option and the
/// others (`route_match::split_syntax`); `None` (logged) when `syntax=` is wrong.
fn directive_args(cf: *mut ngx_conf_t, args: &[ngx_str_t]) -> Option<(Syntax, Vec<&[u8]>)> {
    let args = args.get(1..).unwrap_or_default().iter().map(|a| a.as_bytes());
    route_match::split_syntax(args)
        .map_err(|why| emerg(cf, (), format_args!("http_matches: {why}")))
        .ok()
}

/// `http_matches_load FILE [syntax=auto|typed|untyped];`
static LOAD: Slot<MainConf> = Slot { given: |m| m.file.is_some(), set: load };

fn load(cf: *mut ngx_conf_t, mcf: &mut MainConf, args: &[ngx_str_t]) -> ConfResult {
    let Some((syntax, rest)) = directive_args(cf, args) else { return NGX_CONF_ERROR };
    let [path] = rest[..] else {
        return emerg(cf, NGX_CONF_ERROR, format_args!("http_matches_load: expected one FILE"));
    };
    let mut name = ngx_str_t { len: path.len(), data: path.as_ptr().cast_mut() };
    // SAFETY: `ngx_conf_full_name` resolves `name` against the configuration prefix,
    // allocating the result in the cycle pool; `name` points at the argument, alive here.
    if unsafe { ngx_conf_full_name((*cf).cycle, &mut name, 1) } != ngx::ffi::NGX_OK as ngx_int_t {
        return NGX_CONF_ERROR;
    }
    let file_name = text(name.as_bytes()).into_owned();
    mcf.compiled_any = true;
    let bounds = mcf.bounds();
    let compiled = route_match::compile_file_at_within(file_name.as_ref(), syntax, bounds);
    let file = match compiled {
        Ok(file) => file,
        Err(e) => {
            let why = e.describe(&file_name, mcf.max_memory, mcf.compiled_memory);
            return emerg(cf, NGX_CONF_ERROR, format_args!("http_matches: {why}"));
        }
    };
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

/// `http_matches [JSON_LIST] [syntax=auto|typed|untyped];`
static MATCHES: Slot<LocConf> = Slot { given: |l| l.enabled, set: matches };

fn matches(cf: *mut ngx_conf_t, lcf: &mut LocConf, args: &[ngx_str_t]) -> ConfResult {
    let Some((syntax, rest)) = directive_args(cf, args) else { return NGX_CONF_ERROR };
    lcf.enabled = true;
    lcf.var_syntax = syntax;
    // SAFETY: the http main conf of this module exists while parsing.
    let main = HttpMatchesModule::main_conf_mut(unsafe { &*cf });
    let bounds = main.as_ref().map_or_else(Bounds::default, |m| m.bounds());
    if let Some(m) = main {
        m.compiled_any |= !rest.is_empty();
        m.used = true;
    }
    match rest[..] {
        [] => {}
        // `[]`: never a winner (a catch-all under `http_matches_fallback`); nothing compiled.
        [json] if route_match::is_empty_list(json) => lcf.inline_empty = true,
        [json] => {
            if compile_inline(cf, lcf, json, syntax, bounds) != NGX_CONF_OK {
                return NGX_CONF_ERROR;
            }
        }
        _ => {
            let what = "http_matches: expected at most one match list (a JSON array)";
            return emerg(cf, NGX_CONF_ERROR, format_args!("{what}"));
        }
    }
    // SAFETY: `cf` is parsing a location (or `if`) block, so the core module's location
    // conf exists; we only set its content handler, as `proxy_pass` or `return` do.
    match NgxHttpCoreModule::location_conf_mut(unsafe { &*cf }) {
        Some(clcf) => clcf.handler = Some(handler::content_handler),
        None => return NGX_CONF_ERROR,
    }
    NGX_CONF_OK
}

/// Compiles the inline list `json` into `lcf`, its `@name` paths kept for postconfiguration.
fn compile_inline(
    cf: *mut ngx_conf_t,
    lcf: &mut LocConf,
    json: &[u8],
    syntax: Syntax,
    bounds: Bounds,
) -> ConfResult {
    let c = match route_match::compile_list_within(json, syntax, bounds) {
        Ok(c) => c,
        Err(e) if e.is_memory() => {
            let left = route_match::bound_text(bounds.memory);
            let what = format_args!(
                "http_matches: cannot compile the inline match list: {e} (http_matches_max_memory \
                 {left} left for it)"
            );
            return emerg(cf, NGX_CONF_ERROR, what);
        }
        Err(e) => {
            let what = format_args!("http_matches: invalid inline match list: {e}");
            return emerg(cf, NGX_CONF_ERROR, what);
        }
    };
    // SAFETY: called from a directive handler.
    lcf.pending_where = unsafe { conf_where(cf) };
    // SAFETY: `cf` is parsing a location inside a server block, so the core module's server
    // conf of that server and this module's main conf exist (and live for the cycle).
    let cf_ref = unsafe { &*cf };
    let server =
        NgxHttpCoreModule::server_conf(cf_ref).map_or(core::ptr::null(), core::ptr::from_ref);
    if let Some(mcf) = HttpMatchesModule::main_conf_mut(cf_ref) {
        mcf.compiled_memory += c.list.memory();
        if c.list.redirects().any(|(_, p)| p.starts_with('@')) {
            mcf.named_checks.push(NamedCheck { server, loc: core::ptr::from_ref(lcf) });
        }
    }
    for n in &c.notices {
        ngx_conf_log_error!(NGX_LOG_WARN, cf, "http_matches: inline list: {n}");
    }
    lcf.inline = Some(Arc::new(c.list));
    lcf.pending = c.warnings;
    NGX_CONF_OK
}

/// `http_matches_fallback server_name;`
static FALLBACK: Slot<SrvConf> = Slot { given: |s| s.fallback.is_some(), set: fallback };

fn fallback(cf: *mut ngx_conf_t, scf: &mut SrvConf, args: &[ngx_str_t]) -> ConfResult {
    let Some(name) = args.get(1) else { return NGX_CONF_ERROR };
    if !route_match::vhost::valid_fallback_name(name.as_bytes()) {
        let name = crate::util::escape(name.as_bytes(), 256);
        let what = format_args!(
            "http_matches_fallback: \"{name}\" is not a host name, \"*.\" and a host name, or \"\""
        );
        return emerg(cf, NGX_CONF_ERROR, what);
    }
    scf.fallback = Some(name.as_bytes().to_vec());
    scf.fallback_name = name.as_bytes().to_ascii_lowercase();
    // SAFETY: ngx_hash_key only reads `len` bytes of the name.
    scf.fallback_key =
        unsafe { ngx::ffi::ngx_hash_key(scf.fallback_name.as_mut_ptr(), scf.fallback_name.len()) };
    // SAFETY: called from a directive handler.
    scf.fallback_where = unsafe { conf_where(cf) };
    NGX_CONF_OK
}

/// A size in NGINX's own grammar (`ngx_parse_size`, as `ngx_conf_set_size_slot`).
fn parse_size(v: &[u8]) -> Option<usize> {
    let mut s = ngx_str_t { len: v.len(), data: v.as_ptr().cast_mut() };
    // SAFETY: `s` describes `v`'s bytes, alive for the call; `ngx_parse_size` only reads them.
    let n = unsafe { ngx_parse_size(&mut s) };
    usize::try_from(n).ok()
}

/// `http_matches_max_memory size [pattern=size];`
static MAX_MEMORY: Slot<MainConf> = Slot { given: |m| m.memory_set, set: max_memory };

fn max_memory(cf: *mut ngx_conf_t, mcf: &mut MainConf, args: &[ngx_str_t]) -> ConfResult {
    mcf.memory_set = true;
    if mcf.compiled_any {
        let what = "http_matches_max_memory must come before http_matches_load and every \
                    inline http_matches list (they are compiled where they stand)";
        return emerg(cf, NGX_CONF_ERROR, format_args!("{what}"));
    }
    let args: Vec<&[u8]> = args.iter().skip(1).map(|a| a.as_bytes()).collect();
    match route_match::memory_args(&args, parse_size) {
        Ok((all, pattern)) => {
            mcf.max_memory = all;
            mcf.max_pattern_memory = pattern.unwrap_or(mcf.max_pattern_memory);
        }
        Err(v) => {
            let what = format_args!(
                "http_matches_max_memory: invalid \"{}\": expected a size (or off), then \
                 optionally pattern=size",
                text(v)
            );
            return emerg(cf, NGX_CONF_ERROR, what);
        }
    }
    NGX_CONF_OK
}

/// `http_matches_regex_budget steps | off;`
static REGEX_BUDGET: Slot<LocConf> =
    Slot { given: |l| l.regex_budget.is_some(), set: regex_budget };

fn regex_budget(cf: *mut ngx_conf_t, lcf: &mut LocConf, args: &[ngx_str_t]) -> ConfResult {
    let v = args.get(1).map_or(&b""[..], |a| a.as_bytes());
    let n = match v {
        b"off" => Some(0),
        _ => core::str::from_utf8(v).ok().and_then(|s| s.parse::<ngx_uint_t>().ok()),
    };
    let Some(n) = n else {
        let what = format_args!(
            "http_matches_regex_budget: invalid \"{}\": expected a number of match steps or off",
            text(v)
        );
        return emerg(cf, NGX_CONF_ERROR, what);
    };
    lcf.regex_budget = Some(n);
    NGX_CONF_OK
}
