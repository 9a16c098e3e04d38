//! The master's free heap, taken before each fork of workers, so that the workers' request
//! allocations do not copy shared pages (README's `http_matches_prefork`; figures:
//! docs/BENCHMARKS.md "Master memory across reloads", "NGF-shaped configurations").
//!
//! A worker shares the master's heap copy-on-write; after a load the heap holds many free
//! chunks between live configuration data, and a worker's request allocations land in them,
//! each first write copying a shared page. With `http_matches_prefork on` (the cargo feature
//! `glibc-heap`, glibc >= 2.33: `mallinfo2`, `sbrk`; any other build refuses `on`,
//! [`set_prefork`]), once per load that uses the module, at the first fork after
//! `init_module` (a `pthread_atfork` prepare handler, armed by `init_module`), the free chunks
//! of the main heap are allocated and held, so workers allocate at the top of the heap. That
//! fork is the first worker's on a reload, NGINX's fork into the background at start with
//! `daemon on`. The master frees the chunks at the next load (`preconfiguration`); workers
//! never do. Off by default: with a regex-heavy file the master then grows with every reload.
//!
//! Either way, that fork gives back what the old configuration left free ([`before_fork`]):
//! PCRE2's unused JIT chunks and, on glibc, the heap's free pages (`malloc_trim`).
//!
//! No JIT code in the master (issue #30): a load compiles its patterns without JIT code
//! (`pcre2_bounded::defer_jit`, [`release`]), measuring each one's JIT size on a copy freed at
//! once; a worker JIT-compiles a pattern at its first match ([`init_process`]) within the
//! allowance the load leaves ([`want`], [`arm`]), else the interpreter and a `[warn]`
//! ([`report_jit_refusals`]).
//!
//! A `matches.json` compile runs on the master's own thread, so its holes are taken too: a
//! process that ever started a thread keeps glibc's multi-threaded paths, and so do its
//! workers (about 190 instructions per request).

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Set by `init_module` in the master; taken by the first fork after it.
static ARMED: AtomicBool = AtomicBool::new(false);
/// The configuration being loaded has an `http_matches` or `http_matches_load` directive.
/// A configuration that only loads the module (the Debian package enables it for every
/// NGINX) leaves NGINX's heap alone.
static USED: AtomicBool = AtomicBool::new(false);
/// `http_matches_prefork on` in the configuration being loaded.
static WANTED: AtomicBool = AtomicBool::new(false);
/// The chunks held: a list linked through their first word (0: none).
#[cfg(all(feature = "glibc-heap", target_env = "gnu"))]
static HELD: AtomicUsize = AtomicUsize::new(0);
/// The JIT allowance of the configuration being loaded (see [`want`]), applied by [`arm`].
static JIT_ROOM: AtomicUsize = AtomicUsize::new(usize::MAX);

/// A configuration load begins (in the master, or `nginx -t`): its patterns are compiled
/// without JIT code (see the module documentation), and the chunks held since the last fork
/// are freed (in any other process the list is empty or, in a worker, never freed).
pub(crate) fn release() {
    pcre2_bounded::defer_jit(true);
    USED.store(false, Ordering::Relaxed);
    WANTED.store(false, Ordering::Relaxed);
    #[cfg(all(feature = "glibc-heap", target_env = "gnu"))]
    {
        let mut p = HELD.swap(0, Ordering::Relaxed);
        while p != 0 {
            // SAFETY: every element of the list is a live malloc chunk of at least 8 bytes,
            // aligned, whose first word links the next one; each is freed once.
            unsafe {
                let next = *(p as *const usize);
                free(p as *mut core::ffi::c_void);
                p = next;
            }
        }
    }
}

/// `http_matches_prefork on|off`: NGINX's flag setter; a build without the fill (the
/// `glibc-heap` feature, on glibc) refuses `on` with an `[emerg]`.
pub(crate) unsafe extern "C" fn set_prefork(
    cf: *mut ngx::ffi::ngx_conf_t,
    cmd: *mut ngx::ffi::ngx_command_t,
    conf: *mut core::ffi::c_void,
) -> *mut core::ffi::c_char {
    #[cfg(not(all(feature = "glibc-heap", target_env = "gnu")))]
    {
        // SAFETY: NGINX calls a directive's handler with `cf->args` holding its arguments.
        let args = unsafe { crate::util::conf_args(cf) };
        if args.get(1).is_some_and(|a| a.as_bytes().eq_ignore_ascii_case(b"on")) {
            return c"is not available: the module was built without the cargo feature \"glibc-heap\" (glibc only)"
                .as_ptr()
                .cast_mut();
        }
    }
    // SAFETY: NGINX's own setter, with the arguments NGINX gave this handler.
    unsafe { ngx::ffi::ngx_conf_set_flag_slot(cf, cmd, conf) }
}

/// The configuration being loaded uses the module (a directive handler says so).
pub(crate) fn mark_used() {
    USED.store(true, Ordering::Relaxed);
}

/// The configuration being loaded asks for the fill (`http_matches_prefork on`), and
/// `http_matches_max_memory` leaves `left` bytes after its compiled lists. Those lists count
/// their patterns' JIT code, not made yet (`pcre2_bounded::deferred_jit_bytes`): a worker may
/// make that and what is left, no more.
pub(crate) fn want(on: bool, left: usize) {
    WANTED.store(on, Ordering::Relaxed);
    JIT_ROOM.store(left.saturating_add(pcre2_bounded::deferred_jit_bytes()), Ordering::Relaxed);
}

/// `init_process`: a worker (or a cache process) keeps the JIT code it makes, so patterns
/// compiled here (`$http_matches` values) are JIT-compiled when compiled, counted in their
/// compile's bound, and the configuration's at their first match, within the allowance.
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

/// Arms the next fork's handler (in the master, after a configuration load that uses the
/// module): it gives back the memory the old configuration left free, and runs the fill if
/// asked for. The load's JIT allowance becomes the one its workers inherit (here, not at
/// [`want`]: a load refused after postconfiguration must not change the running one's).
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

#[cfg(all(feature = "glibc-heap", target_env = "gnu"))]
unsafe extern "C" {
    fn malloc(size: usize) -> *mut core::ffi::c_void;
    fn free(p: *mut core::ffi::c_void);
    fn sbrk(increment: isize) -> *mut core::ffi::c_void;
    fn mallinfo2() -> MallInfo2;
}

/// glibc's `struct mallinfo2` (glibc >= 2.33: `size_t` fields; `mallinfo`'s `int` fields
/// overflow past 2 GiB): `arena`, `ordblks`, `smblks`, `hblks`, `hblkhd`, `usmblks`,
/// `fsmblks`, `uordblks`, `fordblks` (`[8]`) and `keepcost` (`[9]`, the top chunk's size).
#[cfg(all(feature = "glibc-heap", target_env = "gnu"))]
#[repr(C)]
struct MallInfo2([usize; 10]);

/// The first fork after a load: NGINX's master has freed the old configuration by now (at the
/// end of `ngx_init_cycle`, before it starts the new workers), so what the old compiled lists
/// held is free here, and not before. It is given back: PCRE2's JIT chunks that hold no code
/// (the one left by the load's JIT-size measurements; NGINX's own `pcre_jit` code is not
/// touched), and, unless the fill takes them, the free pages of the heap (`malloc_trim`).
unsafe extern "C" fn before_fork() {
    if ARMED.swap(false, Ordering::Relaxed) {
        // Nothing may unwind out of a fork handler; a failed fill only costs memory.
        let _ = std::panic::catch_unwind(|| {
            pcre2_bounded::free_unused_jit_memory();
            #[cfg(all(feature = "glibc-heap", target_env = "gnu"))]
            if WANTED.load(Ordering::Relaxed) {
                // SAFETY: see `fill`; runs in the forking (main) thread, before fork takes
                // malloc's locks.
                unsafe { fill() };
                return;
            }
            crate::state::release_free_memory();
        });
    }
}

/// The most bytes taken: a bound in case the heap is not what is expected.
#[cfg(all(feature = "glibc-heap", target_env = "gnu"))]
const MAX_TAKEN: usize = 1 << 30;

/// Allocates every free chunk of the main heap below its top chunk, largest sizes first,
/// and holds them (in [`HELD`]); stops at a size as soon as an allocation comes from the top
/// chunk.
///
/// # Safety
/// Must run on the main thread (whose allocations come from the main heap); the chunks it
/// takes are never freed.
#[cfg(all(feature = "glibc-heap", target_env = "gnu"))]
unsafe fn fill() {
    // SAFETY: sbrk(0) only reads the break; mallinfo2 only reads malloc's statistics.
    let (brk, info) = unsafe { (sbrk(0) as usize, mallinfo2()) };
    let (top, free_bytes) = (info.0[9], info.0[8]);
    // Never more than the free memory the heap reports (the top chunk excluded).
    let limit = free_bytes.saturating_sub(top).min(MAX_TAKEN);
    // Chunks at or above this address come from the top chunk (or a heap grown past it).
    let boundary = brk.saturating_sub(top);
    let mut taken = 0usize;
    // Below glibc's mmap threshold (128 KiB by default), down to its smallest chunks.
    let mut size = 64 * 1024;
    while size >= 16 && taken < limit {
        // SAFETY: plain malloc; the result is checked.
        let p = unsafe { malloc(size - 8) };
        if p.is_null() {
            return;
        }
        if (p as usize) >= boundary {
            // From the top: every free chunk of this size is taken; give it back.
            // SAFETY: `p` came from malloc just now.
            unsafe { free(p) };
            size /= 2;
        } else {
            // SAFETY: `p` is a fresh chunk of at least 8 bytes, aligned for a usize.
            unsafe { *(p as *mut usize) = HELD.load(Ordering::Relaxed) };
            HELD.store(p as usize, Ordering::Relaxed);
            taken += size;
        }
    }
}
