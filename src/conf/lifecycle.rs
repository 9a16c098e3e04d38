//! Lifecycle hooks: the start and end of a configuration load (with the load-time memory
//! guard), `init_module` and `exit_process`.

use ngx::core::Status;
use ngx::ffi::{ngx_conf_t, ngx_cycle_t};
use ngx::http::{HttpModuleLocationConf, HttpModuleMainConf};
use ngx::ngx_log_error;

use super::named::check_named_locations;
use super::report::{ENTRY_500, report};
use crate::HttpMatchesModule;
use crate::state::EXITING;
use crate::util::emerg;

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
    crate::reload_report::taken();
    ngx::ffi::NGX_OK as ngx::ffi::ngx_int_t
}

/// `exit_process`: this worker is exiting; see `MainConf`'s `Drop`.
pub(crate) unsafe extern "C" fn exit_process(_cycle: *mut ngx_cycle_t) {
    EXITING.store(true, core::sync::atomic::Ordering::Relaxed);
    // Nothing to log from here if it failed: the worker is on its way out either way.
    let _ = std::panic::catch_unwind(route_match::var_cache::forget_all);
}

/// Registers the variables before the configuration is parsed (`log_format` may name them).
pub(crate) fn preconfiguration(cf: *mut ngx_conf_t) -> Status {
    // A configuration load begins (master): the heap held since the last fork serves it.
    crate::prefork::release();
    crate::guard::install_panic_hook();
    // The allocator's reserve is held until the end of `postconfiguration`: an allocation of
    // the module's part of the load that fails is rescued and refuses the load, instead of
    // aborting the master (`alloc_meter`). Without a reserve now, the load is refused before
    // the module allocates anything (a reload swept across address-space limits once aborted
    // in the file's read buffer).
    if !alloc_meter::begin_load() {
        let what = "http_matches: out of memory while loading the configuration: the system \
                    refused the module's 16 MiB reserve (an address-space limit?); the \
                    configuration is not loaded";
        return emerg(cf, Status::NGX_ERROR, format_args!("{what}"));
    }
    if !crate::util::var::layout_ok() {
        let what = "http_matches: ngx_variable_value_t is not laid out as this module expects \
                    on this platform; the module cannot set variables safely";
        return emerg(cf, Status::NGX_ERROR, format_args!("{what}"));
    }
    if !crate::variables::register(cf) {
        return Status::NGX_ERROR;
    }
    if !crate::epp::preconfiguration(cf) || !crate::epp::endpoints::preconfiguration(cf) {
        return Status::NGX_ERROR;
    }
    Status::NGX_OK
}

/// Reports the file's malformed entries (strictness of the http level) and resolves the
/// variables the handler reads; ends the memory guard of the load.
pub(crate) fn postconfiguration(cf: *mut ngx_conf_t) -> Status {
    let status = postconfiguration_checks(cf);
    // The workers' JIT allowance: what `http_matches_max_memory` leaves (see `prefork`).
    // SAFETY: postconfiguration runs with `cf->ctx` = the http block's context.
    let mcf = HttpMatchesModule::main_conf(unsafe { &*cf });
    crate::prefork::want(
        mcf.map_or(0, |m| m.bounds().memory),
        mcf.is_some_and(|m| m.used || m.file.is_some()),
    );
    // The last checkpoint: an allocation rescued since `preconfiguration` fails the load with
    // an `[emerg]`; the reserve is given back either way (no forked process keeps it).
    if alloc_meter::end_load() {
        let what = "http_matches: out of memory while loading the configuration: the system \
                    refused an allocation (an address-space limit?); the configuration is not \
                    loaded";
        return emerg(cf, Status::NGX_ERROR, format_args!("{what}"));
    }
    status
}

fn postconfiguration_checks(cf: *mut ngx_conf_t) -> Status {
    // SAFETY: postconfiguration runs with `cf->ctx` = the http block's context.
    let cf_ref = unsafe { &*cf };
    let strict = HttpMatchesModule::location_conf(cf_ref).is_some_and(|l| l.strict == 1);
    let Some(mcf) = HttpMatchesModule::main_conf_mut(cf_ref) else { return Status::NGX_ERROR };
    let warnings = core::mem::take(&mut mcf.file_warnings);
    if !report(cf, &warnings, &mcf.file_where, strict, ENTRY_500) {
        return Status::NGX_ERROR;
    }
    if !check_named_locations(cf, mcf, strict) {
        return Status::NGX_ERROR;
    }
    if !crate::fallback::resolve(cf) || !crate::epp::endpoints::check_blocks(cf) {
        return Status::NGX_ERROR;
    }
    // The workers fork from this process: they inherit the setting of its thread.
    route_match::regex_cache::set_capacity(mcf.regex_cache_size);
    if !crate::epp::postconfiguration(cf, &mut mcf.epp) {
        return Status::NGX_ERROR;
    }
    if !mcf.used {
        return Status::NGX_OK;
    }
    crate::variables::resolve(cf, mcf)
}
