//! `http_matches_reload_report PATH GENERATION;`: for each configuration the master loads, one
//! line `GENERATION took` or `GENERATION refused` in PATH (renamed over it), which
//! `httproute-nginx apply` reads: no client can write it. The model (`ngx_init_cycle`): a
//! cleanup on the new cycle's pool runs on every failure after the directive; `init_module`
//! runs after every step that can fail. So `init_module` writes "took", the cleanup of a cycle
//! never taken "refused", a taken cycle's nothing; `nginx -t` and `nginx -s` write nothing.

use core::ptr::null_mut;
use core::sync::atomic::{AtomicPtr, Ordering};
use std::path::PathBuf;

use ngx::core::{NGX_CONF_ERROR, NGX_CONF_OK, Pool};
use ngx::ffi::{NGX_LOG_ALERT, NGX_PROCESS_SIGNALLER, ngx_conf_t, ngx_str_t};
use ngx::ngx_log_error;

use crate::ConfResult;
use crate::guard::Slot;
use crate::state::MainConf;
use crate::util::text;

/// The report of the configuration being loaded: set by the directive, cleared when the load
/// is taken (`init_module`) or its pool destroyed. The master loads one configuration at a
/// time, on one thread.
static LOADING: AtomicPtr<Report> = AtomicPtr::new(null_mut());

/// The longest GENERATION (a word the generator writes: a number).
const MAX_GENERATION: usize = 64;

/// One configuration load's report (in its cycle's pool; dropped when the pool is destroyed).
struct Report {
    path: PathBuf,
    generation: String,
    /// A master's (or single process's) load: `nginx -t` and `nginx -s` write nothing.
    active: bool,
    taken: bool,
}

impl Report {
    /// Writes `GENERATION VERDICT\n` to a temporary file beside the report, renamed over it.
    /// The temporary file is created new (`O_EXCL`, `O_NOFOLLOW`): whatever stands at its
    /// path (a link planted there, a stale file) is removed, never written through; the
    /// rename replaces a link at the report's path instead of following it.
    fn write(&self, verdict: &str) {
        let tmp = self.path.with_extension(format!("tmp{}", std::process::id()));
        let line = format!("{} {verdict}\n", self.generation);
        let done = create_new(&tmp)
            .or_else(|_| std::fs::remove_file(&tmp).and_then(|()| create_new(&tmp)))
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()))
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = done {
            let _ = std::fs::remove_file(&tmp);
            // SAFETY: `ngx_cycle` is the running cycle (the old one during a reload), whose
            // log is valid for as long as the master runs.
            let log = unsafe { (*ngx::ffi::ngx_cycle).log };
            ngx_log_error!(
                NGX_LOG_ALERT,
                log,
                "http_matches_reload_report: \"{}\": {e}: the reload of generation {} {verdict}, \
                 and apply cannot know it",
                self.path.display(),
                self.generation
            );
        }
    }
}

/// A new file at `path`, which must not exist (a link there is not followed).
fn create_new(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let nofollow = ngx::ffi::O_NOFOLLOW as i32;
    std::fs::OpenOptions::new().write(true).create_new(true).custom_flags(nofollow).open(path)
}

impl Drop for Report {
    fn drop(&mut self) {
        let this: *mut Report = self;
        let _ = LOADING.compare_exchange(this, null_mut(), Ordering::SeqCst, Ordering::SeqCst);
        if self.active && !self.taken {
            // Called by NGINX's pool cleanup: nothing may unwind out of it.
            let _ =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.write("refused")));
        }
    }
}

/// `http_matches_reload_report PATH GENERATION` (http level, once).
pub(crate) static RELOAD_REPORT: Slot<MainConf> =
    Slot { given: |_| !LOADING.load(Ordering::SeqCst).is_null(), set: reload_report };

fn reload_report(cf: *mut ngx_conf_t, _: &mut MainConf, args: &[ngx_str_t]) -> ConfResult {
    let (Some(path), Some(generation)) = (args.get(1), args.get(2)) else {
        return NGX_CONF_ERROR;
    };
    let generation = generation.as_bytes();
    if generation.is_empty()
        || generation.len() > MAX_GENERATION
        || !generation.iter().all(|b| b.is_ascii_graphic())
    {
        return c"takes a GENERATION of 1-64 printable characters without spaces"
            .as_ptr()
            .cast_mut();
    }
    let mut name = *path;
    // SAFETY: resolves `name` against the prefix (`-p`), allocating the result in the
    // cycle pool; `name` points at the argument, alive here.
    if unsafe { ngx::ffi::ngx_conf_full_name((*cf).cycle, &mut name, 0) }
        != ngx::ffi::NGX_OK as ngx::ffi::ngx_int_t
    {
        return NGX_CONF_ERROR;
    }
    let path = PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
        name.as_bytes(),
    ));
    // SAFETY: NGINX sets both while it reads its command line, before any configuration.
    let active = unsafe {
        ngx::ffi::ngx_test_config == 0
            && ngx::ffi::ngx_process != NGX_PROCESS_SIGNALLER as ngx::ffi::ngx_uint_t
    };
    let report = Report { path, generation: text(generation).into_owned(), active, taken: false };
    // SAFETY: `cf->pool` is the new cycle's pool: `allocate` registers a cleanup that
    // drops the report when that pool is destroyed (a failed load, or the cycle's end).
    let p = unsafe { Pool::from_ngx_pool((*cf).pool).allocate(report) };
    if p.is_null() {
        return NGX_CONF_ERROR;
    }
    LOADING.store(p, Ordering::SeqCst);
    NGX_CONF_OK
}

/// This load is taken: called at the end of the module's `init_module` (NGINX calls
/// `init_module` only after every step of a load that can fail).
pub(crate) fn taken() {
    let p = LOADING.swap(null_mut(), Ordering::SeqCst);
    if !p.is_null() {
        // SAFETY: `p` is the report of the cycle being loaded (set by the directive of this
        // load and cleared by its drop): alive in that cycle's pool.
        let report = unsafe { &mut *p };
        report.taken = true;
        if report.active {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| report.write("took")));
        }
    }
}
