//! One meter for the memory a configuration load (or a `$http_matches` compile) allocates:
//! the Rust allocations of the NGINX module (through its `#[global_allocator]`,
//! `pcre2_bounded::Metered` in `crates/pcre2-bounded/src/global.rs`, which `src/lib.rs` installs
//! and which calls [`add`], [`sub`] and [`rescue`]) and PCRE2's own (through `pcre2-bounded`'s
//! general context, which calls [`fits`], [`add`], [`sub`] and [`note_failure`]).
//!
//! Rust aborts the process when an allocation fails (`handle_alloc_error`), and a global
//! allocator may not unwind. So an allocation failure cannot be turned into an error where it
//! happens; it is turned into one at the next *checkpoint* instead:
//!
//! - While a [`Scope`] is open, every byte allocated on its thread is counted. Going over the
//!   scope's limit never fails a Rust allocation (that would abort); it marks the scope, and
//!   the compiler's next checkpoint ([`Scope::check`]: each entry, each list, each 64 KiB read
//!   of the file) stops the compile with an error. PCRE2's allocations are refused outright
//!   once over the limit (PCRE2 answers "failed to get memory", a plain error).
//! - When `malloc` itself fails (an address-space limit, RLIMIT_AS, or
//!   `vm.overcommit_memory=2`), the allocator calls [`rescue`], which frees a reserve of [`RESERVE`] bytes of address
//!   space, kept for that, marks the thread's scope (and the configuration load, see
//!   [`begin_load`]) as out of memory and tries again: the allocation succeeds and the next
//!   checkpoint fails the compile (or the load). A cgroup memory limit is not one of these:
//!   there `malloc` does not fail, the kernel's OOM killer ends a process instead, and nothing
//!   here can see it coming.
//!
//! What runs between two checkpoints is bounded so that it fits in the reserve: the compile
//! stops at the entry after the one that failed ([`spent`]), and a derived structure built
//! with infallible allocations (the index of a list, the prefilter's automaton) is estimated
//! from its inputs first and built only if the estimate fits ([`can_build`]). Only a failure
//! of more than the reserve between two checkpoints would still abort.
//!
//! The reserve is held only while it can be needed: from [`begin_load`] to [`end_load`] (a
//! configuration load), and while a scope is open (a `$http_matches` compile in a worker). It
//! is address space only (its pages are never touched, so it costs no RSS), and it is given
//! back as the last holder lets go: a worker forked after a load does not inherit it.
//!
//! Safe code only: the reserve is a `Vec` allocated and freed with the meter switched off on
//! the thread ([`unmetered`]: the allocator neither counts nor rescues), so the one `unsafe`
//! piece, the `GlobalAlloc` implementation, stays with the cdylib that registers it.

#![forbid(unsafe_code)]

use core::cell::Cell;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Bytes of address space held back for the allocations between an allocation failure and the
/// compiler's next checkpoint.
pub const RESERVE: usize = 16 << 20;

/// The thread's meter. `Cell`s of plain integers: no destructor, so reading them from the
/// allocator is sound at any point of a thread's life.
struct Meter {
    /// Bytes allocated minus bytes freed on this thread (frees of another thread's memory can
    /// make it negative).
    live: Cell<isize>,
    /// `live` must stay at or below this while a scope is open; `isize::MAX` otherwise.
    limit: Cell<isize>,
    /// `live` went over `limit` in the open scope.
    over: Cell<bool>,
    /// An allocation failed in the open scope (the reserve was used, or PCRE2 got NULL).
    failed: Cell<bool>,
    /// The highest `live` since the open scope opened.
    peak: Cell<isize>,
    /// [`unmetered`] runs on this thread: the allocator neither counts nor rescues.
    off: Cell<bool>,
}

thread_local! {
    static METER: Meter = const {
        Meter {
            live: Cell::new(0),
            limit: Cell::new(isize::MAX),
            over: Cell::new(false),
            failed: Cell::new(false),
            peak: Cell::new(0),
            off: Cell::new(false),
        }
    };
}

/// The reserve: address space only (allocated [`unmetered`], never written). Locked only to
/// put it in or take it out (no allocation, no free, under the lock).
static RESERVE_BLOCK: Mutex<Option<Vec<Page>>> = Mutex::new(None);
/// Open scopes (all threads): each holds the reserve.
static SCOPES: AtomicUsize = AtomicUsize::new(0);
/// A configuration load holds the reserve ([`begin_load`] to [`end_load`]).
static LOAD: AtomicBool = AtomicBool::new(false);
/// An allocation failed since [`begin_load`] (the reserve was used, or there was none).
static LOAD_FAILED: AtomicBool = AtomicBool::new(false);
/// Configuration loads begun in this process (never 0 once one has begun).
static LOAD_NUMBER: AtomicU32 = AtomicU32::new(0);
/// Tests only ([`refuse_reserve`]): the system is taken to refuse the reserve.
static REFUSE_RESERVE: AtomicBool = AtomicBool::new(false);

fn reserve() -> MutexGuard<'static, Option<Vec<Page>>> {
    // Nothing can panic while it is held: a poisoned lock is as good as a clean one.
    RESERVE_BLOCK.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` with the meter off on this thread: what it allocates and frees is neither counted
/// nor rescued ([`metered`] is false). For the reserve and the probes of [`can_build`].
pub fn unmetered<T>(f: impl FnOnce() -> T) -> T {
    let was = METER.try_with(|m| m.off.replace(true)).unwrap_or(false);
    let out = f();
    let _ = METER.try_with(|m| m.off.set(was));
    out
}

/// Whether the allocator should count (and rescue) an allocation on this thread now.
pub fn metered() -> bool {
    METER.try_with(|m| !m.off.get()).unwrap_or(true)
}

/// A page: the reserve and the probes are made of them (page-aligned, as a system's large
/// blocks are; the C library handles them as it handled the allocator's before).
#[repr(C, align(4096))]
struct Page([u8; 4096]);

/// `n` bytes of address space (rounded up to pages), asked for at once ([`unmetered`]).
fn probe(n: usize) -> Option<Vec<Page>> {
    unmetered(|| {
        let mut v = Vec::new();
        v.try_reserve_exact(n.div_ceil(4096)).ok().map(|()| v)
    })
}

/// Counts `n` more bytes on this thread; `false` if that goes over the open scope's limit.
pub fn add(n: usize) -> bool {
    let n = isize::try_from(n).unwrap_or(isize::MAX);
    METER
        .try_with(|m| {
            let live = m.live.get().saturating_add(n);
            m.live.set(live);
            if live > m.peak.get() {
                m.peak.set(live);
            }
            if live > m.limit.get() {
                m.over.set(true);
                return false;
            }
            true
        })
        .unwrap_or(true)
}

/// Counts `n` bytes freed.
pub fn sub(n: usize) {
    let n = isize::try_from(n).unwrap_or(isize::MAX);
    let _ = METER.try_with(|m| m.live.set(m.live.get().saturating_sub(n)));
}

/// Whether `n` more bytes would stay within the open scope's limit (for PCRE2, which is told
/// "no" instead of being counted over).
pub fn fits(n: usize) -> bool {
    let n = isize::try_from(n).unwrap_or(isize::MAX);
    METER
        .try_with(|m| {
            // A spent scope gets nothing more: its compile fails at the next checkpoint anyway.
            let ok = !m.failed.get() && m.live.get().saturating_add(n) <= m.limit.get();
            if !ok {
                m.over.set(true);
            }
            ok
        })
        .unwrap_or(true)
}

/// Bytes the open scope of this thread may still allocate (`usize::MAX` outside a scope).
pub fn room() -> usize {
    METER
        .try_with(|m| {
            if m.limit.get() == isize::MAX {
                return usize::MAX;
            }
            usize::try_from(m.limit.get().saturating_sub(m.live.get())).unwrap_or(0)
        })
        .unwrap_or(usize::MAX)
}

/// Whether a structure estimated to need at most `n` bytes, built with infallible
/// allocations (a crate's `Vec` growth), can be built now: `n` fits in what is left of the open
/// scope, and the system gives that much address space (asked for and given back at once,
/// never touched; an address-space limit refuses it here instead of aborting the build). The
/// allocator's reserve is not counted in: it is for what cannot be estimated.
pub fn can_build(n: usize) -> bool {
    if spent() || n > room() {
        return false;
    }
    // Small structures always fit in the reserve; the probe costs a system call.
    if n < 64 * 1024 {
        return true;
    }
    let block = probe(n);
    let ok = block.is_some();
    unmetered(|| drop(block));
    ok
}

/// Whether a growth of `n` bytes the compile cannot go on without (a `Vec` that must take one
/// more element, with its old buffer still held while the new one is filled) may be made now:
/// as [`can_build`], but a growth past what is left of the open scope also marks the scope
/// over its limit, so its next checkpoint reports the limit. The caller then stops.
pub fn may_grow(n: usize) -> bool {
    fits(n) && can_build(n)
}

/// Records that an allocation failed on this thread (and in the configuration load).
pub fn note_failure() {
    LOAD_FAILED.store(true, Ordering::Relaxed);
    let _ = METER.try_with(|m| m.failed.set(true));
}

/// Whether the open scope of this thread is spent (an allocation failed, or the limit was
/// passed): the compile should stop at once, its next checkpoint fails it. `false` outside a
/// scope.
pub fn spent() -> bool {
    METER.try_with(|m| m.failed.get() || m.over.get()).unwrap_or(false)
}

/// A configuration load begins (NGINX's master, or `nginx -t`): the reserve is held until
/// [`end_load`], so that an allocation failure anywhere in the load (not only inside a
/// compile's scope) is rescued and reported by [`end_load`], never an abort. `false` if the
/// system cannot give the reserve now (then the first compile fails at once, see
/// [`Scope::check`]).
pub fn begin_load() -> bool {
    LOAD.store(true, Ordering::Relaxed);
    let _ = LOAD_NUMBER
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| Some(n.wrapping_add(1).max(1)));
    LOAD_FAILED.store(false, Ordering::Relaxed);
    take_reserve()
}

/// The configuration load is over (its last checkpoint): gives the reserve back unless a
/// scope still holds it; `true` if an allocation failed since [`begin_load`] (the load must
/// be refused: it went on with the reserve's memory).
pub fn end_load() -> bool {
    LOAD.store(false, Ordering::Relaxed);
    give_back_if_unheld();
    LOAD_FAILED.swap(false, Ordering::Relaxed)
}

/// The current configuration load's number (0 before the first [`begin_load`]).
pub fn load_number() -> u32 {
    LOAD_NUMBER.load(Ordering::Relaxed)
}

/// Whether the reserve is held now (for tests).
pub fn reserve_held() -> bool {
    reserve().is_some()
}

/// Frees the reserve when nothing holds it: no open scope, no configuration load.
fn give_back_if_unheld() {
    if SCOPES.load(Ordering::Acquire) != 0 || LOAD.load(Ordering::Relaxed) {
        return;
    }
    let block = reserve().take();
    unmetered(|| drop(block));
}

/// For the global allocator, when the system refused an allocation: records the failure and
/// frees the reserve (if held) so that the allocation can be tried again; `true` if there was
/// one. Not to be called while [`metered`] is false (the reserve's own allocations).
pub fn rescue() -> bool {
    note_failure();
    let block = reserve().take();
    let had = block.is_some();
    unmetered(|| drop(block));
    had
}

/// For tests of the callers: while `on`, the reserve is not taken, as if the system refused
/// it (an address-space limit). Process-wide; not for production code.
#[doc(hidden)]
pub fn refuse_reserve(on: bool) {
    REFUSE_RESERVE.store(on, Ordering::Relaxed);
}

/// Takes the reserve if it is not held; `false` if the system cannot give it.
fn take_reserve() -> bool {
    if REFUSE_RESERVE.load(Ordering::Relaxed) {
        return false;
    }
    if reserve_held() {
        return true;
    }
    let Some(block) = probe(RESERVE) else { return false };
    let mut held = reserve();
    // Another thread took one meanwhile: this one is freed, after the lock.
    let extra = if held.is_none() { held.replace(block) } else { Some(block) };
    drop(held);
    unmetered(|| drop(extra));
    true
}

/// Why a scope's work has to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exhausted {
    /// The system refused the reserve when the scope opened: nothing may be compiled in it
    /// (without the reserve, an allocation that fails would abort the process).
    NoReserve,
    /// The system refused an allocation.
    OutOfMemory {
        /// Bytes the scope had allocated when it was found.
        used: usize,
    },
    /// The scope allocated more than its limit.
    Limit {
        /// Bytes the scope had allocated when it was found.
        used: usize,
        /// The scope's limit.
        limit: usize,
    },
}

impl fmt::Display for Exhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exhausted::NoReserve => write!(
                f,
                "out of memory (the system refused the allocator's {} MiB reserve)",
                RESERVE >> 20
            ),
            Exhausted::OutOfMemory { used } => {
                write!(f, "out of memory (the system refused an allocation after {used} bytes)")
            }
            Exhausted::Limit { used, limit } => {
                write!(f, "{used} bytes allocated, more than the limit of {limit} bytes")
            }
        }
    }
}

impl std::error::Error for Exhausted {}

/// A counted stretch of work on one thread (one compile). Not nestable: opening a scope while
/// another is open on the same thread replaces its limit until the inner one is dropped.
pub struct Scope {
    base: isize,
    limit: usize,
    saved: (isize, bool, bool, isize),
    reserve_ok: bool,
}

impl Scope {
    /// Opens a scope that may allocate `limit` bytes (`usize::MAX`: only count). It holds the
    /// reserve until it is dropped. If the system refuses the reserve, the scope is spent from
    /// the start: [`Scope::check`] answers [`Exhausted::NoReserve`], [`spent`] is true (no
    /// estimated structure is built) and PCRE2 gets no memory, so that every compile, whoever
    /// calls it, refuses at its first checkpoint, before it allocates anything large.
    pub fn open(limit: usize) -> Scope {
        Scope::open_keeping(limit, 0)
    }

    /// As [`Scope::open`], but the work may allocate only `limit - keep` bytes: the last
    /// `keep` are left for what the caller makes after the work is stopped (its refusal's
    /// message), so that the refusal too stays within `limit`. [`Scope::limit`] is `limit`,
    /// [`room`] what is left of `limit - keep`.
    pub fn open_keeping(limit: usize, keep: usize) -> Scope {
        SCOPES.fetch_add(1, Ordering::AcqRel);
        let reserve_ok = take_reserve();
        METER.with(|m| {
            let base = m.live.get();
            let saved = (m.limit.get(), m.over.get(), m.failed.get(), m.peak.get());
            m.peak.set(base);
            let l = if limit == usize::MAX { limit } else { limit.saturating_sub(keep) };
            let l = isize::try_from(l).unwrap_or(isize::MAX);
            m.limit.set(base.saturating_add(l));
            m.over.set(false);
            m.failed.set(!reserve_ok);
            Scope { base, limit, saved, reserve_ok }
        })
    }

    /// Bytes allocated (and not freed) since the scope opened.
    pub fn used(&self) -> usize {
        METER.with(|m| usize::try_from(m.live.get().saturating_sub(self.base)).unwrap_or(0))
    }

    /// The most bytes allocated (and not yet freed) at any point since the scope opened: the
    /// compile's peak, temporaries included.
    pub fn peak(&self) -> usize {
        METER.with(|m| usize::try_from(m.peak.get().saturating_sub(self.base)).unwrap_or(0))
    }

    /// The scope's limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// `Err` once an allocation failed or the limit was passed in this scope.
    pub fn check(&self) -> Result<(), Exhausted> {
        let (over, failed) = METER.with(|m| (m.over.get(), m.failed.get()));
        let used = self.used();
        if !self.reserve_ok {
            Err(Exhausted::NoReserve)
        } else if failed {
            Err(Exhausted::OutOfMemory { used })
        } else if over || used > self.limit {
            Err(Exhausted::Limit { used, limit: self.limit })
        } else {
            Ok(())
        }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let (limit, over, failed, peak) = self.saved;
        let _ = METER.try_with(|m| {
            // An enclosing scope's peak includes this one's.
            m.peak.set(m.peak.get().max(peak));
            m.limit.set(limit);
            m.over.set(over);
            m.failed.set(failed);
        });
        SCOPES.fetch_sub(1, Ordering::AcqRel);
        give_back_if_unheld();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_counts_and_stops_at_its_limit() {
        let s = Scope::open(1000);
        assert!(add(600));
        assert_eq!(s.used(), 600);
        sub(100);
        assert!(add(100));
        assert_eq!(s.peak(), 600);
        assert_eq!(s.check(), Ok(()));
        assert!(fits(400));
        assert!(!fits(401));
        // `fits` saying no marks the scope: PCRE2 was refused memory.
        assert_eq!(s.check(), Err(Exhausted::Limit { used: 600, limit: 1000 }));
        sub(600);
        drop(s);
        let s = Scope::open(1000);
        assert!(!add(1001));
        assert!(matches!(s.check(), Err(Exhausted::Limit { used: 1001, .. })));
        sub(1001);
        note_failure();
        assert_eq!(s.check(), Err(Exhausted::OutOfMemory { used: 0 }));
        drop(s);
        let s = Scope::open(1 << 20);
        assert!(add(1000));
        assert_eq!(room(), (1 << 20) - 1000);
        assert!(can_build(1000) && can_build((1 << 20) - 1000) && !can_build(1 << 20));
        sub(1000);
        drop(s);
        // Without the reserve a scope is spent at once, whoever opened it.
        refuse_reserve(true);
        let s = Scope::open(1 << 20);
        assert_eq!(s.check(), Err(Exhausted::NoReserve));
        assert!(spent() && !fits(16) && !can_build(16));
        drop(s);
        refuse_reserve(false);
        let s = Scope::open(1 << 20);
        assert_eq!(s.check(), Ok(()));
        drop(s);
        // A scope that keeps the last bytes for its refusal: the work is stopped before them,
        // the refusal names the whole limit.
        let s = Scope::open_keeping(1000, 200);
        assert_eq!((room(), s.limit()), (800, 1000));
        assert!(!add(801));
        assert_eq!(s.check(), Err(Exhausted::Limit { used: 801, limit: 1000 }));
        sub(801);
        drop(s);
        let s = Scope::open_keeping(usize::MAX, 200);
        assert_eq!(room(), usize::MAX);
        drop(s);
        // Outside a scope nothing is limited.
        assert_eq!(room(), usize::MAX);
        assert!(add(usize::MAX / 4));
        sub(usize::MAX / 4);
    }
}
