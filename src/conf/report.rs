//! Malformed entries and missing named locations, logged at load: a `[warn]`, or an
//! `[emerg]` that fails the configuration under `http_matches_strict on`.

use ngx::ffi::{NGX_LOG_EMERG, NGX_LOG_WARN, ngx_conf_t};
use ngx::ngx_log_error;
use route_match::Warning;

/// What a malformed entry does at run time.
pub(super) const ENTRY_500: &str = "the entry answers 500 when a request reaches it";

/// Logs `warnings`: `[warn]` with their `consequence`, or `[emerg]` when strict (`false`).
pub(super) fn report(
    cf: *mut ngx_conf_t,
    warnings: &[Warning],
    at: &str,
    strict: bool,
    consequence: &str,
) -> bool {
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
    !strict || warnings.is_empty()
}
