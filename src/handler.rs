//! The content handler of locations with `http_matches`: choose the list (inline, `$match_key`
//! in the loaded file, or a cached `$http_matches` value), evaluate it over the request as
//! NGINX stored it (no copies), act: the internal redirect to the winner keeping `r->args`, 404
//! or `http_matches_fallback` (421 where the target verifies client certificates), or 500 with
//! one `[error]` line.

use core::fmt;
use core::sync::atomic::{AtomicU32, Ordering};
use std::rc::Rc;

use ngx::ffi::{
    NGX_DONE, NGX_HTTP_INTERNAL_SERVER_ERROR, NGX_HTTP_MISDIRECTED_REQUEST, NGX_HTTP_NOT_FOUND,
    NGX_LOG_ERR, NGX_LOG_INFO, NGX_LOG_WARN, ngx_http_core_run_phases, ngx_http_max_module,
    ngx_http_request_t, ngx_http_update_location_config, ngx_int_t, ngx_log_t, ngx_str_t,
    ngx_uint_t,
};
use ngx::http::{
    HttpModuleLocationConf, HttpModuleMainConf, HttpModuleServerConf, NgxHttpCoreModule,
};
use ngx::{ngx_log_debug_mask, ngx_log_error};
use route_match::var_cache::{self as cache, Lookup};
use route_match::{MatchList, Outcome, RequestView};

use crate::state::{DEFAULT_REGEX_BUDGET, LocConf, MainConf};
use crate::util::{escape, header_lines, lines, log, pool_str, var};
use crate::{HttpMatchesModule, guard};

/// Where in the loaded file the last `$match_key` was found (`CompiledFile::get_hinted` checks
/// it, so any value is safe): one word per worker, not a thread-local (`__tls_get_addr`).
static KEY_HINT: AtomicU32 = AtomicU32::new(0);

pub(crate) unsafe extern "C" fn content_handler(r: *mut ngx_http_request_t) -> ngx_int_t {
    // SAFETY: NGINX calls content handlers with a valid request that stays alive (and is not
    // touched by anyone else) for the duration of the call.
    guard::request(r, || unsafe { handle(r) })
}

/// Where the list of this request came from, for log lines.
enum Source<'a> {
    Inline,
    Key { key: &'a [u8], file: &'a str },
    Variable,
}

impl fmt::Display for Source<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Inline => f.write_str("inline list"),
            Source::Key { key, file } => write!(f, "list \"{}\" of \"{file}\"", escape(key, 128)),
            Source::Variable => f.write_str("list in $http_matches"),
        }
    }
}

/// Logs the reason at `[error]` and answers 500.
fn fail(log: *mut ngx_log_t, args: fmt::Arguments<'_>) -> ngx_int_t {
    ngx_log_error!(NGX_LOG_ERR, log, "http_matches: {args}");
    NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t
}

/// # Safety
/// `r` must be a valid request in the content phase of a location with `http_matches`.
unsafe fn handle(r: *mut ngx_http_request_t) -> ngx_int_t {
    // SAFETY: see `content_handler`.
    let req = unsafe { &*r };
    let log = log(req);
    let (Some(lcf), Some(mcf)) =
        (HttpMatchesModule::location_conf(req), HttpMatchesModule::main_conf(req))
    else {
        return fail(log, format_args!("module configuration is missing"));
    };
    if lcf.inline_empty {
        // SAFETY: `r` is valid (see above); nothing borrowed from it is used after this.
        return unsafe { no_winner(r, format_args!("inline list: it is empty")) };
    }
    let mut held = None;
    // SAFETY: `r` is valid (see above).
    let (list, source) = match unsafe { choose(r, lcf, mcf, &mut held) } {
        Ok(chosen) => chosen,
        Err(status) => return status,
    };

    #[cfg(feature = "panic-test")]
    if header_lines(req).any(|(n, _)| n.eq_ignore_ascii_case(b"x-matches-test-panic")) {
        panic!("panic-test: the request asked for a panic");
    }

    // SAFETY: `r` is valid (see above).
    let outcome = match unsafe { evaluate(r, lcf, mcf, list) } {
        Ok(outcome) => outcome,
        Err(status) => return status,
    };
    crate::prefork::report_jit_refusals(log);
    // SAFETY: `r` is valid (see above) and nobody else holds references into it now.
    unsafe { act(r, mcf, list, &source, outcome) }
}

/// The request's list and where it came from (a `$http_matches` value's entry held in
/// `held`); `Err`: the answer (a 500, logged).
///
/// # Safety
/// `r` must be a valid request of a location with `http_matches`.
unsafe fn choose<'a>(
    r: *mut ngx_http_request_t,
    lcf: &'a LocConf,
    mcf: &'a MainConf,
    held: &'a mut Option<Rc<cache::Entry>>,
) -> Result<(&'a MatchList, Source<'a>), ngx_int_t> {
    // SAFETY: the caller guarantees `r`; the request outlives this call's borrows.
    let req: &'a ngx_http_request_t = unsafe { &*r };
    let log = log(req);
    if let Some(inline) = &lcf.inline {
        return Ok((inline, Source::Inline));
    }
    // SAFETY: as above.
    if let (Some(file), Some(key)) = (&mcf.file, unsafe { match_key(r, mcf) }) {
        let hint = core::cell::Cell::new(KEY_HINT.load(Ordering::Relaxed));
        let found = file.get_hinted(key, &hint);
        KEY_HINT.store(hint.get(), Ordering::Relaxed);
        let Some(list) = found else {
            let (key, file) = (escape(key, 128), &mcf.file_name);
            let what = format_args!("the key \"{key}\" ($match_key) is not defined in \"{file}\"");
            return Err(fail(log, what));
        };
        return Ok((list, Source::Key { key, file: &mcf.file_name }));
    }
    let Some(value) = set_value(req, mcf.http_matches).or_else(|| defined_value(r, mcf)) else {
        let why = cache::no_list(mcf.file.is_some(), mcf.match_key.is_some());
        return Err(fail(log, format_args!("{why}")));
    };
    let entry = match lcf.var_kept.get(value) {
        Some(entry) => entry,
        None => from_variable(req, lcf, mcf, value)?,
    };
    match &held.insert(entry).compiled {
        Ok(compiled) => Ok((&compiled.list, Source::Variable)),
        Err(e) => {
            Err(fail(log, format_args!("invalid $http_matches: {}", escape(e.as_bytes(), 256))))
        }
    }
}

/// The value in this request's slot of variable `index` (stored by `set` or by this module;
/// never a getter's fallback, see `client_value`).
fn set_value(req: &ngx_http_request_t, index: Option<ngx_uint_t>) -> Option<&[u8]> {
    // SAFETY: `index` came from ngx_http_get_variable_index for this configuration, so it is
    // within `r->variables`, which has one slot per indexed variable.
    let slot = unsafe { &*req.variables.add(index?) };
    var::get(slot)
}

/// `$match_key` as NGINX evaluates it (a `set` value, or its definition's, evaluated now).
///
/// # Safety
/// `r` must be a valid request; the value lives as long as it.
unsafe fn match_key<'r>(r: *mut ngx_http_request_t, mcf: &MainConf) -> Option<&'r [u8]> {
    // SAFETY: the caller guarantees `r`.
    let req: &'r ngx_http_request_t = unsafe { &*r };
    let index = mcf.match_key?;
    if let Some(v) = set_value(req, Some(index)) {
        return Some(v);
    }
    // Where `set $http_matches` ran, that is the carrier: evaluating an unset `$match_key`
    // would log "using uninitialized variable" on every request.
    if set_value(req, mcf.http_matches).is_some() {
        return None;
    }
    // SAFETY: `r` is a valid request and `index` an indexed variable of its configuration.
    unsafe { var::evaluated(r, index) }
}

/// The compiled list of a `$http_matches` value from the worker's cache (compiled now when
/// missing); `Err`: refused (a 500, logged).
fn from_variable(
    req: &ngx_http_request_t,
    lcf: &LocConf,
    mcf: &MainConf,
    value: &[u8],
) -> Result<Rc<cache::Entry>, ngx_int_t> {
    let log = log(req);
    // With a definition of its own (`map`), the variable never reads the request header.
    let client = !mcf.http_matches_getter && client_value(req, value);
    if let Some(why) = cache::refusal(value, client, mcf.var_max_size) {
        return Err(fail(log, format_args!("{why}")));
    }
    let bounds = route_match::Bounds { memory: mcf.max_memory, pattern: mcf.max_pattern_memory };
    let (c, lookup) = cache::get(lcf.var_syntax, value, mcf.var_cache_size, bounds);
    log_lookup(log, mcf, value, &c, &lookup);
    if !matches!(lookup, Lookup::Uncached) {
        lcf.var_kept.keep(value, &c);
    }
    Ok(c)
}

/// The log lines of a `$http_matches` cache lookup (nothing for a hit).
fn log_lookup(
    log: *mut ngx_log_t,
    mcf: &MainConf,
    value: &[u8],
    c: &cache::Entry,
    lookup: &Lookup,
) {
    if matches!(lookup, Lookup::Hit) {
        return;
    }
    if let Some(line) = lookup.log_line(value, c, mcf.var_cache_size) {
        let level = if line.warn { NGX_LOG_WARN } else { NGX_LOG_INFO };
        ngx_log_error!(level, log, "http_matches: {line}");
    }
    for w in c.compiled.iter().flat_map(|compiled| &compiled.warnings) {
        let w = escape(w.to_string().as_bytes(), 256);
        ngx_log_error!(NGX_LOG_WARN, log, "http_matches: $http_matches {w}");
    }
}

/// Evaluates `list` over the request within what is left of its regex budget, counting the
/// work into `$http_matches_work` when the configuration refers to it.
///
/// # Safety
/// `r` must be a valid request of a location with `http_matches`.
unsafe fn evaluate<'l>(
    r: *mut ngx_http_request_t,
    lcf: &LocConf,
    mcf: &MainConf,
    list: &'l MatchList,
) -> Result<Outcome<'l>, ngx_int_t> {
    // SAFETY: the caller guarantees `r`.
    let req = unsafe { &*r };
    let log = log(req);
    let budget = lcf.regex_budget.unwrap_or(DEFAULT_REGEX_BUDGET) as u64;
    let view = View { r: req, log, budget };
    let Some(index) = mcf.var_work else { return Ok(list.evaluate(&view)) };
    // `Forward`: the counted evaluation instantiated apart, so the common path's inlining is
    // unchanged (with both on `View`, ~290 more instructions per regex request, callgrind).
    let (outcome, work) = list.evaluate_work(&route_match::Forward::new(&view));
    // SAFETY: `r` is valid and `index` is an indexed variable of its configuration.
    unsafe { store_work(r, index, work) }?;
    Ok(outcome)
}

/// Acts on the outcome: the redirect to the winner, no winner (404 or a fallback), or 500.
///
/// # Safety
/// `r` must be a valid request in the content phase, with no outstanding references into it.
unsafe fn act(
    r: *mut ngx_http_request_t,
    mcf: &MainConf,
    list: &MatchList,
    source: &Source<'_>,
    outcome: Outcome<'_>,
) -> ngx_int_t {
    // SAFETY: the caller guarantees `r`.
    let log = log(unsafe { &*r });
    match outcome {
        Outcome::Redirect { entry, path } => {
            ngx_log_debug_mask!(
                DebugMask::Http,
                log,
                "http_matches: {source}: entry {entry} of {} wins, redirect to \"{path}\"",
                list.len()
            );
            // Inline and file lists outlive every request of their cycle; the worker's cache
            // may drop a `$http_matches` list while the request runs: its path is copied.
            let stable = !matches!(source, Source::Variable);
            // SAFETY: the caller guarantees `r`; `path` outlives the request when `stable`.
            unsafe { redirect(r, mcf, path, entry, stable) }
        }
        Outcome::NoMatch => {
            let n = list.len();
            // SAFETY: the caller guarantees `r`; the lists are not used after this.
            unsafe { no_winner(r, format_args!("{source}: none of {n} entries matches")) }
        }
        Outcome::Error(e) => fail(log, format_args!("{source}: {e}")),
    }
}

/// No entry wins: 404, or, when the current server has `http_matches_fallback`, the request
/// continues in the target server. `what` (the list, why no winner) begins the debug line.
///
/// # Safety
/// `r` must be a valid request in the content phase, with no outstanding references into it.
unsafe fn no_winner(r: *mut ngx_http_request_t, what: fmt::Arguments<'_>) -> ngx_int_t {
    // SAFETY: the caller guarantees `r`.
    let log = log(unsafe { &*r });
    // SAFETY: the caller guarantees `r`; `r->srv_conf` is its current server's confs.
    let scf = HttpMatchesModule::server_conf(unsafe { &*r });
    match scf.filter(|s| !s.fallback_targets.is_empty()) {
        None => {
            ngx_log_debug_mask!(DebugMask::Http, log, "http_matches: {what}, 404");
            NGX_HTTP_NOT_FOUND as ngx_int_t
        }
        Some(s) => {
            // Escaped only where a line is written (the macros check the level first).
            let (name, at) =
                (|| escape(s.fallback.as_deref().unwrap_or_default(), 256), &s.fallback_where);
            ngx_log_debug_mask!(
                DebugMask::Http,
                log,
                "http_matches: {what}, falls back to the server \"{}\" (http_matches_fallback \
                 in {at})",
                name()
            );
            // SAFETY: the caller guarantees `r`; `s` is its current server's conf.
            let target = unsafe { crate::fallback::socket_server(r, s) };
            // Only a target the configuration check saw: every walk is a path of its graph,
            // acyclic and at most 128 servers long, whatever the lookup finds.
            if !s.fallback_targets.contains(&target) {
                return fail(
                    log,
                    format_args!(
                        "http_matches_fallback: \"{}\" (in {at}) resolves on this socket to a \
                         server the configuration check did not",
                        name()
                    ),
                );
            }
            // SAFETY: the caller guarantees `r`; `target` is one of the configuration's.
            if unsafe { crate::fallback::verifies_clients(r, target) } {
                ngx_log_error!(
                    NGX_LOG_INFO,
                    log,
                    "http_matches_fallback: \"{}\" (in {at}) reaches a server that verifies \
                     client certificates (ssl_verify_client), which this connection was not \
                     negotiated for: 421",
                    name()
                );
                return NGX_HTTP_MISDIRECTED_REQUEST as ngx_int_t;
            }
            // SAFETY: the caller guarantees `r`.
            if let Err(rc) = unsafe { count_fallback(r) } {
                return rc;
            }
            // SAFETY: the caller guarantees `r`; `target` is a core server conf of this
            // request's configuration (one of those resolved in postconfiguration).
            unsafe { fall_back(r, target) }
        }
    }
}

/// `$matches_fallback`, one more: the servers the main request fell back through. It survives
/// fallbacks and redirects (`r->variables` is kept), so a server-level check that runs again
/// in the target (the generator's TLS check of listener isolation) can tell.
///
/// # Safety
/// `r` must be a valid request with no outstanding references into it.
unsafe fn count_fallback(r: *mut ngx_http_request_t) -> Result<(), ngx_int_t> {
    // SAFETY: the caller guarantees `r`; the copy lives in its pool, as long as the request.
    unsafe {
        let index = HttpMatchesModule::main_conf(&*r).and_then(|m| m.var_fallback);
        let Some(index) = index.filter(|_| core::ptr::eq((*r).main, r)) else { return Ok(()) };
        let before = set_value(&*r, Some(index))
            .and_then(|v| core::str::from_utf8(v).ok()?.parse::<usize>().ok())
            .unwrap_or(0);
        store(r, index, number((*r).pool, before.saturating_add(1)))
    }
}

/// `http_matches_fallback`: the request continues in `target` as if it had received it
/// (ngx_http_internal_redirect, then ngx_http_handler from the server rewrite phase), but the
/// main request is not made internal and `r->uri_changes` is not spent (the load bounds walks).
///
/// # Safety
/// `r` must be a valid request in the content phase, with no outstanding references into it;
/// `target` a non-null core server conf of the request's configuration.
unsafe fn fall_back(
    r: *mut ngx_http_request_t,
    target: *const ngx::ffi::ngx_http_core_srv_conf_t,
) -> ngx_int_t {
    // SAFETY: see the function's contract. The target's `ctx` holds its server and location
    // conf arrays, alive with the configuration; `r->ctx` has `ngx_http_max_module` slots;
    // `r->main` is the main request (alive at least as long as `r`); the core module's main
    // conf is the same in every server. This is ngx_http_internal_redirect and the internal
    // branch of ngx_http_handler, field by field (NGINX 1.22 to 1.28).
    unsafe {
        let log = (*(*r).connection).log;
        let target = &*target;
        let Some(cmcf) = NgxHttpCoreModule::main_conf(&*r) else {
            return fail(log, format_args!("core module configuration is missing"));
        };
        // From the server rewrite phase: the target's server-level `return`, `rewrite`, `if`
        // apply (a check that must not run twice reads `$matches_fallback`).
        let server_rewrite = cmcf.phase_engine.server_rewrite_index as ngx_int_t;
        (*r).srv_conf = (*target.ctx).srv_conf;
        (*r).loc_conf = (*target.ctx).loc_conf;
        core::ptr::write_bytes((*r).ctx, 0, ngx_http_max_module);
        ngx_http_update_location_config(r);
        #[cfg(ngx_feature = "http_cache")]
        {
            (*r).cache = core::ptr::null_mut();
        }
        (*r).set_add_uri_to_alias(0);
        let main = (*r).main;
        (*main).set_count((*main).count() + 1);
        // A fallback is the client's request: the target's `internal` locations stay out of
        // reach even after an internal redirect here (`try_files ... @name`, `error_page`). A
        // subrequest's URI is the configuration's: it stays internal.
        if core::ptr::eq((*r).main, r) {
            (*r).set_internal(0);
        }
        // ngx_http_handler from here.
        (*log).action = core::ptr::null_mut();
        (*r).phase_handler = server_rewrite;
        (*r).set_valid_location(1);
        #[cfg(ngx_feature = "http_gzip")]
        {
            (*r).set_gzip_tested(0);
            (*r).set_gzip_ok(0);
            (*r).set_gzip_vary(0);
        }
        (*r).write_event_handler = Some(ngx_http_core_run_phases);
        ngx_http_core_run_phases(r);
    }
    NGX_DONE as ngx_int_t
}

/// Stores `$matches_redirect` / `$matches_entry`, then redirects keeping `r->args`.
///
/// # Safety
/// `r` must be a valid request in the content phase, with no outstanding references into it.
/// Unless `stable`, `path` may die before the request and is copied into its pool.
unsafe fn redirect(
    r: *mut ngx_http_request_t,
    mcf: &MainConf,
    path: &str,
    entry: usize,
    stable: bool,
) -> ngx_int_t {
    // SAFETY: the caller guarantees `r`; the pool outlives the request, so the copies stay
    // valid for the URI and the variables; a stable `path` outlives it too. NGINX treats
    // `r->uri` data as read-only.
    unsafe {
        let uri = if stable {
            Some(ngx_str_t { len: path.len(), data: path.as_ptr().cast_mut() })
        } else {
            pool_str((*r).pool, path.as_bytes())
        };
        let Some(uri) = uri else { return fail(log(&*r), format_args!("out of memory")) };
        // A subrequest (SSI, mirror, auth_request) shares its parent's `r->variables`: only
        // the main request records its choice.
        if core::ptr::eq((*r).main, r) {
            let stored = store(r, mcf.var_redirect, Some(uri))
                .and_then(|()| store(r, mcf.var_entry, number((*r).pool, entry)));
            if let Err(rc) = stored {
                return rc;
            }
        }
        crate::util::redirect_keeping_args(r, uri)
    }
}

/// Stores `$http_matches_work` ("attempts/regex steps/units", `route_match::Work`), main
/// request only.
///
/// # Safety
/// `r` must be a valid request with no outstanding references into it, and `index` an indexed
/// variable of its configuration.
unsafe fn store_work(
    r: *mut ngx_http_request_t,
    index: ngx_uint_t,
    work: route_match::Work,
) -> Result<(), ngx_int_t> {
    // SAFETY: the caller guarantees `r`; the copy lives in its pool.
    unsafe {
        if !core::ptr::eq((*r).main, r) {
            return Ok(());
        }
        let text = format!("{}/{}/{}", work.attempts, work.regex_steps, work.units);
        store(r, index, pool_str((*r).pool, text.as_bytes()))
    }
}

/// The decimal text of `n` for a variable: below 10,000 a static of the module (NGINX only reads
/// it), else a copy in `pool`; `None`: out of memory.
///
/// # Safety
/// `pool` must be a live NGINX pool.
#[inline]
unsafe fn number(pool: *mut ngx::ffi::ngx_pool_t, n: usize) -> Option<ngx_str_t> {
    match route_match::small_decimal(n) {
        // Inline, without the copy's frame (issue #46: the call cost ~30 instructions).
        Some(d) => Some(ngx_str_t { len: d.len(), data: d.as_ptr().cast_mut() }),
        // SAFETY: the caller's `pool`.
        None => unsafe { number_copy(pool, n) },
    }
}

/// [`number`] from 10,000 on: the digits copied into `pool`.
///
/// # Safety
/// `pool` must be a live NGINX pool.
#[cold]
#[inline(never)]
unsafe fn number_copy(pool: *mut ngx::ffi::ngx_pool_t, n: usize) -> Option<ngx_str_t> {
    // SAFETY: the caller's `pool`; the digits are copied into it.
    unsafe { pool_str(pool, route_match::decimal(n, &mut [0; 20])) }
}

/// Sets an indexed variable for the rest of the request (`r->variables` survives redirects);
/// `None` (out of memory): a 500, logged.
///
/// # Safety
/// `index` must be an indexed variable of this configuration and `value` live as long as `r`.
unsafe fn store(
    r: *mut ngx_http_request_t,
    index: ngx_uint_t,
    value: Option<ngx_str_t>,
) -> Result<(), ngx_int_t> {
    // SAFETY: see the function's contract.
    unsafe {
        let Some(v) = value else { return Err(fail(log(&*r), format_args!("out of memory"))) };
        var::set(&mut *(*r).variables.add(index), v.data, v.len);
    }
    Ok(())
}

/// `$http_matches` as its own definition (a `map`) gives it; `None` without one (NGINX would
/// read the `Matches:` header).
fn defined_value<'r>(r: *mut ngx_http_request_t, mcf: &MainConf) -> Option<&'r [u8]> {
    if !mcf.http_matches_getter {
        return None;
    }
    // SAFETY: `r` is the valid request being handled and the index an indexed variable of its
    // configuration.
    unsafe { var::evaluated(r, mcf.http_matches?) }
}

/// Whether `value` is what a client sent as `Matches:` (`$http_matches` where no `set` ran).
fn client_value(req: &ngx_http_request_t, value: &[u8]) -> bool {
    // The name's length first: the other lines cost no slice (issue #46).
    let matches = || {
        // SAFETY: a request is allocated zeroed and NGINX initializes its header list before
        // reading the first header line; its elements live in the request's pool.
        unsafe { lines(&req.headers_in.headers) }
            .filter(|h| h.key.len == 7 && h.key.as_bytes().eq_ignore_ascii_case(b"matches"))
            .map(|h| h.value.as_bytes())
    };
    cache::is_client_value(matches, value)
}

/// The request as the engine sees it: borrowed NGINX memory, no copies.
struct View<'r> {
    r: &'r ngx_http_request_t,
    log: *mut ngx_log_t,
    /// `http_matches_regex_budget` (0: off).
    budget: u64,
}

impl RequestView for View<'_> {
    fn method(&self) -> &[u8] {
        self.r.method_name.as_bytes()
    }
    fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        header_lines(self.r)
    }
    fn query(&self) -> &[u8] {
        self.r.args.as_bytes()
    }
    fn path(&self) -> &[u8] {
        self.r.uri.as_bytes()
    }
    fn regex_failed(&self, entry: usize, pattern: &str, why: &str) {
        ngx_log_error!(
            NGX_LOG_WARN,
            self.log,
            "http_matches: regular expression \"{}\" of entry {entry} gave up ({why}); \
             counted as no match",
            escape(pattern.as_bytes(), 128)
        );
    }
    /// One budget per request: what its earlier evaluations (redirects, fallbacks) charged is
    /// spent. Asked only by a list with regexes.
    fn regex_budget(&self) -> Option<u64> {
        // SAFETY: the request is valid while it is evaluated; the cell is null or a live u64
        // of its pool.
        let charged = || unsafe { charged_cell(self.r, false).as_ref().copied().unwrap_or(0) };
        (self.budget > 0).then(|| self.budget.saturating_sub(charged()))
    }
    fn regex_charged(&self, units: u64) {
        if self.budget == 0 || units == 0 {
            return;
        }
        // SAFETY: as above; null: out of memory, not counted.
        if let Some(cell) = unsafe { charged_cell(self.r, true).as_mut() } {
            *cell = cell.saturating_add(units);
        }
    }
}

/// The (empty) handler that tags the pool cleanup entry holding the request's charged units.
unsafe extern "C" fn charged_tag(_data: *mut core::ffi::c_void) {}

/// The units the request's evaluations charged so far, in its pool (shared by subrequests,
/// untouched when a fallback or redirect clears module contexts; realip's idiom).
///
/// # Safety
/// `r` must be a valid request.
unsafe fn charged_cell(r: &ngx_http_request_t, create: bool) -> *mut u64 {
    // SAFETY: the pool's cleanup list is NGINX's, each entry alive with the pool; the entry
    // tagged by `charged_tag` was made below with room for one u64.
    unsafe {
        let pool = r.pool;
        let mut c = (*pool).cleanup;
        while !c.is_null() {
            if (*c).handler.map(|f| f as *const () as usize)
                == Some(charged_tag as *const () as usize)
            {
                return (*c).data.cast();
            }
            c = (*c).next;
        }
        if !create {
            return core::ptr::null_mut();
        }
        let c = ngx::ffi::ngx_pool_cleanup_add(pool, core::mem::size_of::<u64>());
        if c.is_null() {
            return core::ptr::null_mut();
        }
        (*c).handler = Some(charged_tag);
        let cell = (*c).data.cast::<u64>();
        cell.write(0);
        cell
    }
}
