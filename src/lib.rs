//! `ngx_http_matches_module`: NGF's HTTPRoute header/query/method matching as a native NGINX
//! module, a drop-in for `httpmatches.js`.
//!
//! This crate is the thin glue between NGINX and the `route-match` engine: directives, the
//! content handler, variables. All unsafe code of the project lives here, each block with a
//! `SAFETY:` comment. Every function NGINX calls is wrapped in [`guard`]: a Rust panic becomes a
//! logged error (`[alert]` + 500 for requests, `[emerg]` for configuration), never a dead worker.

use core::ffi::{c_char, c_void};
use core::ptr::{addr_of, addr_of_mut};

use ngx::ffi::{
    NGX_CONF_FLAG, NGX_CONF_NOARGS, NGX_CONF_TAKE1, NGX_CONF_TAKE2, NGX_CONF_TAKE12,
    NGX_HTTP_LIF_CONF, NGX_HTTP_LOC_CONF, NGX_HTTP_LOC_CONF_OFFSET, NGX_HTTP_MAIN_CONF,
    NGX_HTTP_MAIN_CONF_OFFSET, NGX_HTTP_MODULE, NGX_HTTP_SRV_CONF, NGX_HTTP_SRV_CONF_OFFSET,
    ngx_command_t, ngx_conf_set_flag_slot, ngx_conf_set_size_slot, ngx_conf_t, ngx_http_module_t,
    ngx_int_t, ngx_module_t, ngx_str_t, ngx_uint_t,
};
use ngx::http::{HttpModule, HttpModuleLocationConf, HttpModuleMainConf, HttpModuleServerConf};
use ngx::ngx_string;

mod cache;
mod conf;
mod epp;
mod fallback;
mod guard;
mod handler;
mod prefork;
mod reload_report;
mod state;
mod util;

pub use state::{LocConf, MainConf, SrvConf};

/// The module's marker type (configuration accessors come from the `ngx` traits).
pub struct HttpMatchesModule;

impl HttpModule for HttpMatchesModule {
    fn module() -> &'static ngx_module_t {
        // SAFETY: the module static is only written by NGINX while it loads the module (it sets
        // `index` / `ctx_index`), before any of our code runs; after that it is read-only.
        unsafe { &*addr_of!(ngx_http_matches_module) }
    }

    unsafe extern "C" fn preconfiguration(cf: *mut ngx_conf_t) -> ngx_int_t {
        guard::conf_status(cf, || conf::preconfiguration(cf))
    }

    unsafe extern "C" fn postconfiguration(cf: *mut ngx_conf_t) -> ngx_int_t {
        guard::conf_status(cf, || conf::postconfiguration(cf))
    }
}

// SAFETY: the main conf of this module is always created by `conf::create_main_conf`, which
// allocates a `MainConf`.
unsafe impl HttpModuleMainConf for HttpMatchesModule {
    type MainConf = MainConf;
}

// SAFETY: the server conf of this module is always created by `conf::create_srv_conf`, which
// allocates a `SrvConf`.
unsafe impl HttpModuleServerConf for HttpMatchesModule {
    type ServerConf = SrvConf;
}

// SAFETY: the location conf of this module is always created by `conf::create_loc_conf`, which
// allocates a `LocConf`.
unsafe impl HttpModuleLocationConf for HttpMatchesModule {
    type LocationConf = LocConf;
}

static NGX_HTTP_MATCHES_MODULE_CTX: ngx_http_module_t = ngx_http_module_t {
    preconfiguration: Some(HttpMatchesModule::preconfiguration),
    postconfiguration: Some(HttpMatchesModule::postconfiguration),
    create_main_conf: Some(conf::create_main_conf),
    init_main_conf: Some(conf::init_main_conf),
    create_srv_conf: Some(conf::create_srv_conf),
    merge_srv_conf: None,
    create_loc_conf: Some(conf::create_loc_conf),
    merge_loc_conf: Some(conf::merge_loc_conf),
};

/// A directive handler as `ngx_command_t` holds it.
type SetFn = unsafe extern "C" fn(*mut ngx_conf_t, *mut ngx_command_t, *mut c_void) -> *mut c_char;

/// One entry of the directive table: `name`, where it may stand and its arguments (`type_`),
/// its handler, which configuration it writes (`conf`: `NGX_HTTP_*_CONF_OFFSET`) and the
/// field's offset in it (for NGINX's own slot setters; 0 for ours).
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

/// A directive with a handler of this module (which finds its field itself).
const fn handler(name: ngx_str_t, type_: u32, set: SetFn, conf: ngx_uint_t) -> ngx_command_t {
    directive(name, type_, set, conf, 0)
}

/// An `on|off` directive stored by `ngx_conf_set_flag_slot` into the field at `offset`.
const fn flag(name: ngx_str_t, contexts: u32, conf: ngx_uint_t, offset: usize) -> ngx_command_t {
    directive(name, contexts | NGX_CONF_FLAG, ngx_conf_set_flag_slot, conf, offset)
}

/// A size directive (`16k`, `32m`) stored by `ngx_conf_set_size_slot` into the field at
/// `offset`.
const fn size(name: ngx_str_t, contexts: u32, conf: ngx_uint_t, offset: usize) -> ngx_command_t {
    directive(name, contexts | NGX_CONF_TAKE1, ngx_conf_set_size_slot, conf, offset)
}

/// The `http` block only.
const MAIN: u32 = NGX_HTTP_MAIN_CONF;
/// `http`, `server` and `location`.
const ANY_LEVEL: u32 = NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF;

static mut NGX_HTTP_MATCHES_COMMANDS: [ngx_command_t; 13] = [
    handler(
        ngx_string!("http_matches_load"),
        MAIN | NGX_CONF_TAKE12,
        conf::cmd_http_matches_load,
        NGX_HTTP_MAIN_CONF_OFFSET,
    ),
    handler(
        ngx_string!("http_matches"),
        NGX_HTTP_LOC_CONF | NGX_HTTP_LIF_CONF | NGX_CONF_NOARGS | NGX_CONF_TAKE12,
        conf::cmd_http_matches,
        NGX_HTTP_LOC_CONF_OFFSET,
    ),
    flag(
        ngx_string!("http_matches_strict"),
        ANY_LEVEL,
        NGX_HTTP_LOC_CONF_OFFSET,
        core::mem::offset_of!(LocConf, strict),
    ),
    handler(
        ngx_string!("http_matches_fallback"),
        NGX_HTTP_SRV_CONF | NGX_CONF_TAKE1,
        conf::cmd_http_matches_fallback,
        NGX_HTTP_SRV_CONF_OFFSET,
    ),
    handler(
        ngx_string!("http_matches_regex_budget"),
        ANY_LEVEL | NGX_CONF_TAKE1,
        conf::cmd_http_matches_regex_budget,
        NGX_HTTP_LOC_CONF_OFFSET,
    ),
    handler(
        ngx_string!("http_matches_max_memory"),
        MAIN | NGX_CONF_TAKE12,
        conf::cmd_http_matches_max_memory,
        NGX_HTTP_MAIN_CONF_OFFSET,
    ),
    size(
        ngx_string!("http_matches_regex_cache"),
        MAIN,
        NGX_HTTP_MAIN_CONF_OFFSET,
        core::mem::offset_of!(MainConf, regex_cache_size),
    ),
    size(
        ngx_string!("http_matches_var_max_size"),
        MAIN,
        NGX_HTTP_MAIN_CONF_OFFSET,
        core::mem::offset_of!(MainConf, var_max_size),
    ),
    size(
        ngx_string!("http_matches_var_cache"),
        MAIN,
        NGX_HTTP_MAIN_CONF_OFFSET,
        core::mem::offset_of!(MainConf, var_cache_size),
    ),
    flag(
        ngx_string!("http_matches_prefork"),
        MAIN,
        NGX_HTTP_MAIN_CONF_OFFSET,
        core::mem::offset_of!(MainConf, prefork),
    ),
    // http_matches_epp (issue #32; see src/epp.rs).
    handler(
        ngx_string!("http_matches_epp"),
        NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS | NGX_CONF_TAKE1,
        epp::cmd_http_matches_epp,
        NGX_HTTP_LOC_CONF_OFFSET,
    ),
    // The master's verdict on each configuration load (issue #45; see src/reload_report.rs).
    handler(
        ngx_string!("http_matches_reload_report"),
        MAIN | NGX_CONF_TAKE2,
        reload_report::cmd_http_matches_reload_report,
        NGX_HTTP_MAIN_CONF_OFFSET,
    ),
    ngx_command_t::empty(),
];

/// The module object `load_module` finds through `ngx_modules`.
// SAFETY (no_mangle): the symbol name is this module's own and unique in NGINX; the addon build
// and `ngx_modules!` refer to it by that name.
#[used]
#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
pub static mut ngx_http_matches_module: ngx_module_t = ngx_module_t {
    ctx: addr_of!(NGX_HTTP_MATCHES_MODULE_CTX) as *mut c_void,
    // SAFETY: taking the address of a static does not read or write it.
    commands: unsafe { addr_of_mut!(NGX_HTTP_MATCHES_COMMANDS[0]) },
    type_: NGX_HTTP_MODULE as ngx_uint_t,
    init_module: Some(reload_report::init_module),
    init_process: Some(prefork::init_process),
    exit_process: Some(conf::exit_process),
    ..ngx_module_t::default()
};

#[cfg(feature = "export-modules")]
ngx::ngx_modules!(ngx_http_matches_module);

/// Every Rust allocation of the module is counted (the memory bounds of a configuration
/// load), and one that fails becomes an error at the compiler's next checkpoint instead of an
/// abort of the master (see `pcre2_bounded::memory`). NGINX's own allocations are not
/// affected: it calls the C library directly.
#[global_allocator]
static ALLOCATOR: pcre2_bounded::memory::Metered = pcre2_bounded::memory::Metered;

/// `NGX_CONF_OK` / `NGX_CONF_ERROR` for directive handlers.
pub(crate) type ConfResult = *mut c_char;
