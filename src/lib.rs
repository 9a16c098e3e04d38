//! `ngx_http_matches_module`: NGF's HTTPRoute matching (`httpmatches.js`) and endpoint picker
//! (`epp.js`) as a native NGINX module: the glue between NGINX and the engine crates. Unsafe
//! code lives here and in `crates/pcre2-bounded`, each block with a `SAFETY:` comment; every
//! function NGINX calls is wrapped in [`guard`] (a panic: `[alert]` + 500, or `[emerg]`).

use core::ffi::{c_char, c_void};
use core::ptr::{addr_of, addr_of_mut};

use ngx::ffi::{
    NGX_HTTP_MODULE, ngx_conf_t, ngx_http_module_t, ngx_int_t, ngx_module_t, ngx_uint_t,
};
use ngx::http::{HttpModule, HttpModuleLocationConf, HttpModuleMainConf, HttpModuleServerConf};

mod conf;
mod epp;
mod fallback;
mod guard;
mod handler;
mod prefork;
mod reload_report;
mod state;
mod util;
mod variables;

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

// SAFETY: the main conf of this module is always created by `HttpModule::create_main_conf`
// (the context's callback), which allocates a `MainConf`.
unsafe impl HttpModuleMainConf for HttpMatchesModule {
    type MainConf = MainConf;
}

// SAFETY: the server conf of this module is always created by `HttpModule::create_srv_conf`
// (the context's callback), which allocates a `SrvConf`.
unsafe impl HttpModuleServerConf for HttpMatchesModule {
    type ServerConf = SrvConf;
}

// SAFETY: the location conf of this module is always created by `HttpModule::create_loc_conf`
// (the context's callback), which allocates a `LocConf`.
unsafe impl HttpModuleLocationConf for HttpMatchesModule {
    type LocationConf = LocConf;
}

static NGX_HTTP_MATCHES_MODULE_CTX: ngx_http_module_t = ngx_http_module_t {
    preconfiguration: Some(HttpMatchesModule::preconfiguration),
    postconfiguration: Some(HttpMatchesModule::postconfiguration),
    create_main_conf: Some(HttpMatchesModule::create_main_conf),
    init_main_conf: Some(conf::init_main_conf),
    create_srv_conf: Some(HttpMatchesModule::create_srv_conf),
    merge_srv_conf: None,
    create_loc_conf: Some(HttpMatchesModule::create_loc_conf),
    merge_loc_conf: Some(conf::merge_loc_conf),
};

/// The module object `load_module` finds through `ngx_modules`.
// SAFETY (no_mangle): the symbol name is this module's own and unique in NGINX; the addon build
// and `ngx_modules!` refer to it by that name.
#[used]
#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
pub static mut ngx_http_matches_module: ngx_module_t = ngx_module_t {
    ctx: addr_of!(NGX_HTTP_MATCHES_MODULE_CTX) as *mut c_void,
    // SAFETY: taking the address of a static does not read or write it.
    commands: unsafe { addr_of_mut!(conf::NGX_HTTP_MATCHES_COMMANDS[0]) },
    type_: NGX_HTTP_MODULE as ngx_uint_t,
    init_module: Some(conf::init_module),
    init_process: Some(prefork::init_process),
    exit_process: Some(conf::exit_process),
    ..ngx_module_t::default()
};

#[cfg(feature = "export-modules")]
ngx::ngx_modules!(ngx_http_matches_module);

/// The module's Rust allocations, counted (a load's memory bounds); one that fails becomes an
/// error at the next checkpoint, not an abort (`alloc_meter`). NGINX's own are not affected.
#[global_allocator]
static ALLOCATOR: pcre2_bounded::Metered = pcre2_bounded::Metered;

/// `NGX_CONF_OK` / `NGX_CONF_ERROR` for directive handlers.
pub(crate) type ConfResult = *mut c_char;
