//! Malformed entries and missing named locations, logged at load: a `[warn]`, or an
//! `[emerg]` that fails the configuration under `http_matches_strict on`.

use ngx::core::{NGX_CONF_ERROR, NGX_CONF_OK};
use ngx::ffi::{NGX_LOG_EMERG, NGX_LOG_WARN, ngx_conf_t};
use ngx::ngx_log_error;
use route_match::Warning;

use crate::ConfResult;

/// Logs malformed entries: `[warn]`, or `[emerg]` and a failed configuration when strict.
pub(super) fn report(
    cf: *mut ngx_conf_t,
    warnings: &[Warning],
    at: &str,
    strict: bool,
) -> ConfResult {
    report_as(cf, warnings, at, strict, "the entry answers 500 when a request reaches it")
}

/// [`report`], saying what happens at run time (`[warn]`) in `consequence`.
pub(super) fn report_as(
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
