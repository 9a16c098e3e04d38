//! The module's configuration state, shared by the directives (`conf`) and the handlers,
//! which depend on it and not on each other.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use ngx::ffi::{NGX_CONF_UNSET, ngx_flag_t, ngx_http_core_srv_conf_t, ngx_uint_t};
use route_match::{CompiledFile, MatchList, Syntax, Warning};

/// `http {}` level state.
pub struct MainConf {
    /// The compiled `http_matches_load` file.
    pub(crate) file: Option<Arc<CompiledFile>>,
    /// Its absolute path, for log lines.
    pub(crate) file_name: String,
    /// Where `http_matches_load` stands ("file:line"), and the file's malformed entries,
    /// reported in postconfiguration once `http_matches_strict` at http level is known.
    pub(crate) file_where: String,
    pub(crate) file_warnings: Vec<Warning>,
    /// Some location uses `http_matches`.
    pub(crate) used: bool,
    /// Indexes of `$match_key` and `$http_matches`, when some `set` declares them.
    pub(crate) match_key: Option<ngx_uint_t>,
    pub(crate) http_matches: Option<ngx_uint_t>,
    /// `$http_matches` has a definition with a getter (a `map`): evaluated where no `set` ran,
    /// never the `Matches:` request header.
    pub(crate) http_matches_getter: bool,
    /// Indexes of `$matches_redirect` and `$matches_entry`.
    pub(crate) var_redirect: ngx_uint_t,
    pub(crate) var_entry: ngx_uint_t,
    /// Index of `$matches_fallback`.
    pub(crate) var_fallback: Option<ngx_uint_t>,
    /// Index of `$http_matches_work` when the configuration refers to it: only then is each
    /// request's work counted and stored.
    pub(crate) var_work: Option<ngx_uint_t>,
    /// `http_matches_var_max_size`: the longest `$http_matches` value compiled.
    pub var_max_size: usize,
    /// `http_matches_var_cache`: bytes of compiled `$http_matches` values a worker keeps.
    pub var_cache_size: usize,
    /// `http_matches_max_memory`: bytes all compiled lists of the configuration may take
    /// (and one `$http_matches` compile), and bytes one pattern may compile to.
    pub(crate) max_memory: usize,
    pub(crate) max_pattern_memory: usize,
    /// Bytes the lists compiled so far in this configuration hold (the file, inline lists).
    pub(crate) compiled_memory: usize,
    /// Something was compiled already: a later `http_matches_max_memory` is refused.
    pub(crate) compiled_any: bool,
    /// `http_matches_max_memory` was given (a second one is a duplicate).
    pub(crate) memory_set: bool,
    /// `http_matches_regex_cache`: bytes of regex results a worker keeps.
    pub regex_cache_size: usize,
    /// Inline lists whose `@name` redirect paths are checked once every server's named
    /// locations are known (postconfiguration).
    pub(crate) named_checks: Vec<NamedCheck>,
    /// `http_matches_epp`'s variables (see `epp`).
    pub(crate) epp: EppVars,
}

/// The variables `http_matches_epp` reads and sets: indexes resolved at load.
#[derive(Default)]
pub(crate) struct EppVars {
    /// Some location uses `http_matches_epp` (its answers need the body filter).
    pub(crate) used: bool,
    /// `$epp_host`, `$epp_port`, `$epp_internal_path`, when some directive declares them.
    pub(crate) host: Option<ngx_uint_t>,
    pub(crate) port: Option<ngx_uint_t>,
    pub(crate) path: Option<ngx_uint_t>,
    /// `$inference_workload_endpoint`.
    pub(crate) endpoint: ngx_uint_t,
    /// `$inference_workload_endpoints` (see `epp::endpoints`).
    pub(crate) endpoints: Option<ngx_uint_t>,
    /// `$content_length`, which the gRPC proxy sends (see `epp::flow::forget`).
    pub(crate) content_length: Option<ngx_uint_t>,
}

impl Default for MainConf {
    fn default() -> Self {
        MainConf {
            file: None,
            file_name: String::new(),
            file_where: String::new(),
            file_warnings: Vec::new(),
            used: false,
            match_key: None,
            http_matches: None,
            http_matches_getter: false,
            var_redirect: 0,
            var_entry: 0,
            var_fallback: None,
            var_work: None,
            var_max_size: NGX_CONF_UNSET_SIZE,
            var_cache_size: NGX_CONF_UNSET_SIZE,
            max_memory: DEFAULT_MAX_MEMORY,
            max_pattern_memory: route_match::DEFAULT_PATTERN_MEMORY,
            compiled_memory: 0,
            compiled_any: false,
            memory_set: false,
            regex_cache_size: NGX_CONF_UNSET_SIZE,
            named_checks: Vec::new(),
            epp: EppVars::default(),
        }
    }
}

/// NGINX's `NGX_CONF_UNSET_SIZE` (a cast of -1 that bindgen does not carry over).
pub(crate) const NGX_CONF_UNSET_SIZE: usize = usize::MAX;

/// Defaults of the http-level directives.
pub(crate) const DEFAULT_VAR_MAX_SIZE: usize = 16 * 1024;
pub(crate) const DEFAULT_VAR_CACHE_SIZE: usize = 32 * 1024 * 1024;
/// `http_matches_regex_budget` unless set: match steps (see route_match::DEFAULT_REGEX_BUDGET).
pub(crate) const DEFAULT_REGEX_BUDGET: ngx_uint_t = route_match::DEFAULT_REGEX_BUDGET as ngx_uint_t;
/// `http_matches_max_memory` unless set: far above NGF's 10,000 routes (a few MiB), low
/// enough that a hostile file cannot take the master past a few hundred MiB.
pub(crate) const DEFAULT_MAX_MEMORY: usize = 128 * 1024 * 1024;
/// `http_matches_regex_cache` unless set.
pub(crate) const DEFAULT_REGEX_CACHE_SIZE: usize = 1024 * 1024;

/// An inline list with `@name` redirect paths, to be checked against the named locations of
/// the server it is in.
pub(crate) struct NamedCheck {
    pub(crate) server: *const ngx_http_core_srv_conf_t,
    /// The location's conf (pool-allocated, alive for the cycle): its list, where it stands,
    /// and its strictness once merged.
    pub(crate) loc: *const LocConf,
}

impl MainConf {
    /// The memory the next compile of this configuration may take: what
    /// `http_matches_max_memory` leaves after the lists compiled so far.
    pub(crate) fn bounds(&self) -> route_match::Bounds {
        route_match::Bounds {
            memory: self.max_memory.saturating_sub(self.compiled_memory),
            pattern: self.max_pattern_memory,
        }
    }
}

impl Drop for MainConf {
    /// An exiting worker leaves the compiled lists (freeing them would copy every heap page
    /// shared with the master), reachable ([`crate::util::leave_reachable`]).
    fn drop(&mut self) {
        if EXITING.load(Ordering::Relaxed) {
            if let Some(file) = self.file.take() {
                crate::util::leave_reachable(&LEFT, file);
            }
        } else if self.file.take().is_some() {
            // The master, after a reload: give the old lists' pages back before the fork.
            crate::prefork::trim();
        }
    }
}

/// Set by `exit_process` in a worker that is about to exit.
pub(crate) static EXITING: AtomicBool = AtomicBool::new(false);

/// The compiled lists an exiting worker leaves unfreed (see `Drop for MainConf`).
static LEFT: AtomicPtr<Arc<CompiledFile>> = AtomicPtr::new(core::ptr::null_mut());

/// Server level state: `http_matches_fallback`.
#[derive(Default)]
pub struct SrvConf {
    /// The server name the directive gives, as written (`None`: no directive here).
    pub(crate) fallback: Option<Vec<u8>>,
    /// Where the directive stands ("file:line"), for the checks of postconfiguration.
    pub(crate) fallback_where: String,
    /// The servers a request with no winner may continue in (one per socket at most, core
    /// server confs resolved in postconfiguration); empty: none.
    pub(crate) fallback_targets: Vec<*const ngx_http_core_srv_conf_t>,
    /// The name, lowercased, and its `ngx_hash_key`, for the lookups.
    pub(crate) fallback_name: Vec<u8>,
    pub(crate) fallback_key: ngx::ffi::ngx_uint_t,
    /// `http_matches_epp_endpoints` (an `upstream` block; see `epp_endpoints`).
    pub(crate) epp_endpoints: Option<Box<EndpointPool>>,
}

/// `http_matches_epp_endpoints`'s block state, built by the directive and its
/// `init_upstream` (see `epp::endpoints`).
#[derive(Default)]
pub(crate) struct EndpointPool {
    /// The block's name, for log lines.
    pub(crate) name: String,
    /// "file:line" of the directive.
    pub(crate) at: String,
    /// The block's `server` addresses, round robin's peers (alive with the cycle).
    pub(crate) peers: Vec<*mut ngx::ffi::ngx_http_upstream_rr_peer_t>,
    /// Address -> index in `peers`: the allowed set.
    pub(crate) index: std::collections::HashMap<std::net::SocketAddr, u32>,
    /// Round robin's per-request init (the fallback, and what every request starts with).
    pub(crate) rr_init_peer: ngx::ffi::ngx_http_upstream_init_peer_pt,
    /// `$inference_workload_endpoints`.
    pub(crate) var: ngx_uint_t,
}

/// Location level state (also `server` and `http` for `http_matches_strict`).
pub struct LocConf {
    /// `http_matches_strict`; `NGX_CONF_UNSET` until set or merged.
    pub strict: ngx_flag_t,
    /// `http_matches` appeared here.
    pub(crate) enabled: bool,
    /// The inline list, compiled at configuration time.
    pub(crate) inline: Option<Arc<MatchList>>,
    /// The inline list is `[]` (the engine compiles no empty list): never a winner.
    pub(crate) inline_empty: bool,
    /// `syntax=` for `$http_matches` values.
    pub(crate) var_syntax: Syntax,
    /// `http_matches_regex_budget`, in match steps (0: no budget); `None` where no level sets
    /// it (then [`DEFAULT_REGEX_BUDGET`]).
    pub regex_budget: Option<ngx_uint_t>,
    /// Malformed entries of the inline list and where the directive stands: reported at merge,
    /// when `http_matches_strict` is known.
    pub(crate) pending: Vec<Warning>,
    pub(crate) pending_where: String,
    /// `http_matches_epp`: the proxy's content handler (inherited by `if` blocks only).
    pub(crate) epp_proxy: ngx::ffi::ngx_http_handler_pt,
    /// "file:line" of this location's own `http_matches_epp` (empty when inherited or none).
    pub(crate) epp_where: String,
    /// The content handler `http_matches_epp` installed, checked at merge as not replaced.
    pub(crate) epp_handler: Option<usize>,
    /// `http_matches_epp grpc://...`: the call speaks the EPP protocol (see `epp::grpc`).
    pub(crate) epp_grpc: bool,
    /// The last `$http_matches` value of this location the worker's cache took (weak).
    pub(crate) var_kept: route_match::var_cache::Kept,
}

impl Default for LocConf {
    fn default() -> Self {
        LocConf {
            strict: NGX_CONF_UNSET as ngx_flag_t,
            enabled: false,
            inline: None,
            inline_empty: false,
            var_syntax: Syntax::Auto,
            regex_budget: None,
            pending: Vec::new(),
            pending_where: String::new(),
            epp_proxy: None,
            epp_where: String::new(),
            epp_handler: None,
            epp_grpc: false,
            var_kept: route_match::var_cache::Kept::default(),
        }
    }
}

/// A conf structure of this module, by the `NGX_HTTP_*_CONF_OFFSET` of its level.
pub(crate) trait Level {
    const OFFSET: usize;
}
impl Level for MainConf {
    const OFFSET: usize = ngx::ffi::NGX_HTTP_MAIN_CONF_OFFSET;
}
impl Level for SrvConf {
    const OFFSET: usize = ngx::ffi::NGX_HTTP_SRV_CONF_OFFSET;
}
impl Level for LocConf {
    const OFFSET: usize = ngx::ffi::NGX_HTTP_LOC_CONF_OFFSET;
}
