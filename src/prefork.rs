//! The master's free heap, taken before each fork of workers, so that the workers' request
//! allocations do not copy shared pages.
//!
//! A worker shares the master's heap copy-on-write. After a configuration load the main heap
//! holds many free chunks between live configuration data (NGINX frees its temporary pool and
//! the old cycle's after every module hook has run). A worker's request allocations (pools,
//! header and proxy buffers) are then served from those chunks, best fit first, a different
//! one as the freed buffers merge with their neighbours: each first write to such a chunk
//! copies the shared page it lies on. Measured with NGF-shaped configurations (3,000 routes,
//! every route once): +4 MiB private per worker in NGINX alone with `proxy_pass`, over the
//! first pass of traffic, and more for bigger configurations.
//!
//! So, once per configuration load that uses the module (an `http_matches` or
//! `http_matches_load` directive; merely loading it changes nothing), right before the master forks its first process (a
//! `pthread_atfork` prepare handler, armed by `init_module`), the free chunks of the main heap
//! are allocated and held: their pages stay shared (only a chunk header and a link are
//! written, in the master), and the workers' allocations come from fresh memory at the top of
//! the heap, which they reuse request after request. What is held is memory the master already
//! had (or had given back with `malloc_trim`: then only the header's page). The master frees
//! the chunks when it loads the next configuration (`preconfiguration`), so they serve that
//! parse, and nothing accumulates over reloads; workers never free them. glibc only; elsewhere
//! nothing.
//!
//! The holes a `matches.json` compile leaves (its parse tree and other temporaries, freed
//! between the compiled store and NGINX's configuration data) are taken the same way, so the
//! compile runs on the master's own thread. It once ran on a thread of its own (a malloc
//! arena apart), but a process that has ever started a thread stays in glibc's
//! multi-threaded mode, and so do the workers forked from it: every `recv`, `writev` and
//! `epoll_wait` then goes through the cancellation wrappers and every `malloc`/`free` takes
//! the arena lock, about 190 instructions per request more (callgrind, 3 rules), for nothing.

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Set by `init_module` in the master; taken by the first fork after it.
static ARMED: AtomicBool = AtomicBool::new(false);
/// The configuration being loaded has an `http_matches` or `http_matches_load` directive.
/// A configuration that only loads the module (the Debian package enables it for every
/// NGINX) leaves NGINX's heap alone.
static USED: AtomicBool = AtomicBool::new(false);
/// The chunks held: a list linked through their first word (0: none).
static HELD: AtomicUsize = AtomicUsize::new(0);

/// Frees the chunks held since the last fork (in the master, as a configuration load
/// begins; in any other process the list is empty or, in a worker, never freed).
pub(crate) fn release() {
    USED.store(false, Ordering::Relaxed);
    let mut p = HELD.swap(0, Ordering::Relaxed);
    while p != 0 {
        // SAFETY: every element of the list is a live malloc chunk of at least 8 bytes,
        // aligned, whose first word links the next one; each is freed once.
        unsafe {
            let next = *(p as *const usize);
            #[cfg(target_env = "gnu")]
            free(p as *mut core::ffi::c_void);
            p = next;
        }
    }
}

/// The configuration being loaded uses the module (a directive handler says so).
pub(crate) fn mark_used() {
    USED.store(true, Ordering::Relaxed);
}

/// Arms the fill for the next fork (in the master, after a configuration load that uses the
/// module).
pub(crate) fn arm() {
    #[cfg(target_env = "gnu")]
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

#[cfg(target_env = "gnu")]
unsafe extern "C" {
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> core::ffi::c_int;
    fn malloc(size: usize) -> *mut core::ffi::c_void;
    fn free(p: *mut core::ffi::c_void);
    fn sbrk(increment: isize) -> *mut core::ffi::c_void;
    fn mallinfo() -> MallInfo;
}

/// glibc's `struct mallinfo` (int fields; only `keepcost`, the top chunk's size, is read).
#[cfg(target_env = "gnu")]
#[repr(C)]
struct MallInfo {
    arena: core::ffi::c_int,
    ordblks: core::ffi::c_int,
    smblks: core::ffi::c_int,
    hblks: core::ffi::c_int,
    hblkhd: core::ffi::c_int,
    usmblks: core::ffi::c_int,
    fsmblks: core::ffi::c_int,
    uordblks: core::ffi::c_int,
    fordblks: core::ffi::c_int,
    keepcost: core::ffi::c_int,
}

#[cfg(target_env = "gnu")]
unsafe extern "C" fn before_fork() {
    if ARMED.swap(false, Ordering::Relaxed) {
        // Nothing may unwind out of a fork handler; a failed fill only costs memory.
        let _ = std::panic::catch_unwind(|| {
            // SAFETY: see `fill`; runs in the forking (main) thread, before fork takes
            // malloc's locks.
            unsafe { fill() }
        });
    }
}

/// The most bytes taken: a bound in case the heap is not what is expected.
#[cfg(target_env = "gnu")]
const MAX_TAKEN: usize = 1 << 30;

/// Allocates every free chunk of the main heap below its top chunk, largest sizes first,
/// and holds them (in [`HELD`]); stops at a size as soon as an allocation comes from the top
/// chunk.
///
/// # Safety
/// Must run on the main thread (whose allocations come from the main heap); the chunks it
/// takes are never freed.
#[cfg(target_env = "gnu")]
unsafe fn fill() {
    // SAFETY: sbrk(0) only reads the break; mallinfo only reads malloc's statistics.
    let (brk, info) = unsafe { (sbrk(0) as usize, mallinfo()) };
    let (Ok(top), Ok(free_bytes)) =
        (usize::try_from(info.keepcost), usize::try_from(info.fordblks))
    else {
        return;
    };
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
