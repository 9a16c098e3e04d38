//! Configuration: directives and everything decided at load (the structures are `state`'s).
//! Lists are compiled here, in the master, never per request (a `$http_matches` value: once per
//! distinct value in a worker); problems surface at `nginx -t` in NGINX's style.

use core::ffi::c_void;

use ngx::core::{NGX_CONF_ERROR, NGX_CONF_OK};
use ngx::ffi::{NGX_CONF_UNSET, NGX_LOG_EMERG, ngx_conf_t, ngx_flag_t};
use ngx::http::{HttpModuleLocationConf, Merge, MergeConfigError, NgxHttpCoreModule};
use ngx::ngx_log_error;

use crate::state::{
    DEFAULT_REGEX_CACHE_SIZE, DEFAULT_VAR_CACHE_SIZE, DEFAULT_VAR_MAX_SIZE, LocConf, MainConf,
    NGX_CONF_UNSET_SIZE,
};
use crate::{ConfResult, guard};

mod directives;
mod lifecycle;
mod named;
mod report;

use report::{ENTRY_500, report};

pub(crate) use directives::NGX_HTTP_MATCHES_COMMANDS;
pub(crate) use lifecycle::{exit_process, init_module, postconfiguration, preconfiguration};

/// `init_main_conf`: defaults of the http-level directives that were not given.
pub(crate) unsafe extern "C" fn init_main_conf(
    cf: *mut ngx_conf_t,
    conf: *mut c_void,
) -> ConfResult {
    guard::directive(cf, || {
        // SAFETY: NGINX passes this module's main conf, created by `create_main_conf`.
        let mcf = unsafe { &mut *(conf as *mut MainConf) };
        let unset_or = |v: &mut usize, d| *v = if *v == NGX_CONF_UNSET_SIZE { d } else { *v };
        unset_or(&mut mcf.var_max_size, DEFAULT_VAR_MAX_SIZE);
        unset_or(&mut mcf.var_cache_size, DEFAULT_VAR_CACHE_SIZE);
        unset_or(&mut mcf.regex_cache_size, DEFAULT_REGEX_CACHE_SIZE);
        NGX_CONF_OK
    })
}

impl Merge for LocConf {
    /// What a location inherits from the level above.
    fn merge(&mut self, prev: &LocConf) -> Result<(), MergeConfigError> {
        if self.strict == NGX_CONF_UNSET as ngx_flag_t {
            self.strict = if prev.strict == NGX_CONF_UNSET as ngx_flag_t { 0 } else { prev.strict };
        }
        self.regex_budget = self.regex_budget.or(prev.regex_budget);
        // Inherited like other directives (so `http_matches` works in `if` blocks).
        if self.inline.is_none() && !self.enabled {
            self.inline = prev.inline.clone();
            self.inline_empty = prev.inline_empty;
            self.var_syntax = prev.var_syntax;
        }
        Ok(())
    }
}

/// `merge_loc_conf`: [`Merge`], then what needs the configuration context: `http_matches_epp`
/// in `if` blocks, its checks, and the inline list's malformed entries.
pub(crate) unsafe extern "C" fn merge_loc_conf(
    cf: *mut ngx_conf_t,
    prev: *mut c_void,
    conf: *mut c_void,
) -> ConfResult {
    guard::directive(cf, || {
        // SAFETY: NGINX passes this module's parent and child location confs, both created by
        // `create_loc_conf`; they are distinct objects.
        let (prev, conf) = unsafe { (&*(prev as *const LocConf), &mut *(conf as *mut LocConf)) };
        let _ = conf.merge(prev);
        // `http_matches_epp`'s proxy handler goes into its location's `if` blocks, where the
        // content handler stays ours and the proxy inherits its upstream.
        // SAFETY: during the merge `cf->ctx` holds the child location's confs.
        let clcf = NgxHttpCoreModule::location_conf(unsafe { &*cf });
        if conf.epp_proxy.is_none() && clcf.is_some_and(|c| c.noname() != 0) {
            conf.epp_proxy = prev.epp_proxy;
            conf.epp_grpc = prev.epp_grpc;
        }
        if let Some(why) = clcf.and_then(|c| crate::epp::merge_check(c, conf)) {
            // SAFETY: NGINX passes a valid configuration context whose log outlives the call.
            let log = unsafe { (*cf).log };
            ngx_log_error!(NGX_LOG_EMERG, log, "http_matches_epp: {why} in {}", conf.epp_where);
            return NGX_CONF_ERROR;
        }
        let warnings = core::mem::take(&mut conf.pending);
        let ok = report(cf, &warnings, &conf.pending_where, conf.strict == 1, ENTRY_500);
        if ok { NGX_CONF_OK } else { NGX_CONF_ERROR }
    })
}
