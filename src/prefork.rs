//! What the first fork after a load gives back, and the workers' JIT code. At that fork (the
//! first worker's on a reload, the daemon's at start: a `pthread_atfork` handler) the old
//! configuration's free memory is given back ([`before_fork`]: PCRE2's unused JIT chunks,
//! glibc's free heap pages), not copied into every worker. No JIT code in the master: a load
//! compiles without it ([`release`]), measuring its size; a worker JIT-compiles a pattern at its
//! first match ([`init_process`]) within the allowance the load leaves ([`want`], [`arm`]), else
//! the interpreter and a `[warn]` ([`report_jit_refusals`]).

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Set by `init_module` in the master; taken by the first fork after it.
static ARMED: AtomicBool = AtomicBool::new(false);
/// The configuration being loaded uses the module (one that only loads it, as the Debian
/// package does for every NGINX, leaves NGINX's heap alone).
static USED: AtomicBool = AtomicBool::new(false);
/// The JIT allowance of the configuration being loaded (see [`want`]), applied by [`arm`].
static JIT_ROOM: AtomicUsize = AtomicUsize::new(usize::MAX);

/// A configuration load begins (in the master, or `nginx -t`): its patterns are compiled
/// without JIT code (see the module documentation).
pub(crate) fn release() {
    pcre2_bounded::defer_jit(true);
    USED.store(false, Ordering::Relaxed);
}

/// The configuration being loaded `used` the module, and `http_matches_max_memory` leaves
/// `left` bytes after its compiled lists. Those lists count their patterns' JIT code, not made
/// yet (`pcre2_bounded::deferred_jit_bytes`): a worker may make that and what is left, no more.
pub(crate) fn want(left: usize, used: bool) {
    USED.store(used, Ordering::Relaxed);
    JIT_ROOM.store(left.saturating_add(pcre2_bounded::deferred_jit_bytes()), Ordering::Relaxed);
}

/// `init_process`: a worker (or cache process) keeps the JIT code it makes (`$http_matches`
/// values' at compile, counted in its bound; the configuration's at first match, within the
/// allowance).
pub(crate) unsafe extern "C" fn init_process(
    _cycle: *mut ngx::ffi::ngx_cycle_t,
) -> ngx::ffi::ngx_int_t {
    pcre2_bounded::defer_jit(false);
    ngx::ffi::NGX_OK as ngx::ffi::ngx_int_t
}

/// After a request's evaluation: a `[warn]` for the configuration's patterns that stayed on
/// the interpreter in this worker since the last one (the JIT allowance was spent, or the JIT
/// compile failed). Nothing to do, one atomic read, on every other request.
pub(crate) fn report_jit_refusals(log: *mut ngx::ffi::ngx_log_t) {
    let n = pcre2_bounded::take_jit_refusals();
    if n > 0 {
        ngx::ngx_log_error!(
            ngx::ffi::NGX_LOG_WARN,
            log,
            "http_matches: {} regular expression{} of the configuration stay{} on PCRE2's \
             interpreter in this worker: {} JIT code would pass what http_matches_max_memory \
             leaves ({} bytes left), or the JIT compile failed; the answers are the same and \
             the match limits still bound the work",
            n,
            if n == 1 { "" } else { "s" },
            if n == 1 { "s" } else { "" },
            if n == 1 { "its" } else { "their" },
            pcre2_bounded::jit_allowance()
        );
    }
}

/// Arms the next fork's handler (the master, after a load that uses the module), and makes
/// the load's JIT allowance the workers' (not at [`want`]: a refused load changes nothing).
pub(crate) fn arm() {
    pcre2_bounded::set_jit_allowance(JIT_ROOM.load(Ordering::Relaxed));
    if USED.load(Ordering::Relaxed) {
        static REGISTER: std::sync::Once = std::sync::Once::new();
        REGISTER.call_once(|| {
            // SAFETY: registers a handler with no state; glibc unregisters handlers of a shared
            // object when it is unloaded (pthread_atfork passes the object's handle).
            unsafe { pthread_atfork(Some(before_fork), None, None) };
        });
        ARMED.store(true, Ordering::Relaxed);
    }
}

unsafe extern "C" {
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> core::ffi::c_int;
}

/// The first fork after a load: the old configuration is freed by now (end of
/// `ngx_init_cycle`), so its memory is given back: PCRE2's JIT chunks that hold no code (not
/// NGINX's own `pcre_jit` code), and the heap's free pages (`malloc_trim`).
unsafe extern "C" fn before_fork() {
    if ARMED.swap(false, Ordering::Relaxed) {
        // Nothing may unwind out of a fork handler; a failure here only costs memory.
        let _ = std::panic::catch_unwind(|| {
            pcre2_bounded::free_unused_jit_memory();
            trim();
        });
    }
}

#[cfg(target_env = "gnu")]
unsafe extern "C" {
    fn malloc_trim(pad: usize) -> core::ffi::c_int;
}

/// Gives the heap's free pages back to the system (glibc's `malloc_trim`; elsewhere nothing).
pub(crate) fn trim() {
    // SAFETY: glibc's malloc_trim only returns free heap pages to the system; it does not
    // touch memory that is in use.
    #[cfg(target_env = "gnu")]
    unsafe {
        malloc_trim(0);
    }
}
