//! PCRE2 (8-bit) as route-match needs it: a pattern compiled once (JIT when available), then
//! matched with limits chosen for each call.
//!
//! **Where the JIT code is made.** By default a pattern is JIT-compiled when it is compiled.
//! A process that must not keep JIT code (NGINX's master: see [`defer_jit`]) compiles a
//! pattern without it: its JIT size is measured on a copy that is freed at once (so the
//! per-pattern bound refuses what it refused before, and [`Regex::memory`] is what it was),
//! and the JIT code is made at the pattern's first match in a process that keeps JIT code
//! (an NGINX worker), within the process's JIT allowance ([`set_jit_allowance`]). Every match
//! runs after that decision, so a pattern is matched the same way (JIT or interpreter) from its
//! first match on.
//!
//! The `pcre2` crate has no way to set a match context, so its matches can only be bounded by
//! a `(*LIMIT_MATCH=N)` prefix fixed at compile time; it cannot compile with
//! `PCRE2_MATCH_INVALID_UTF` (so a subject that is not UTF-8 had to be copied first), and it
//! does not tell how much memory a compiled pattern holds. This crate is the thin layer over
//! `pcre2-sys` that does those three things, and nothing else. It is the project's second
//! piece of glue to C (the NGINX module is the first): every `unsafe` block says why it is
//! sound.
//!
//! Dialect: `PCRE2_UTF | PCRE2_MATCH_INVALID_UTF` and PCRE2's defaults otherwise (ASCII `\d\s\w`,
//! `$` also before a final newline), the dialect of njs's `RegExp` on NGINX and of
//! `location ~` with UTF on. A subject that is not valid UTF-8 is matched as it is: an invalid
//! sequence never matches any item of a pattern, but the valid text around it can match.

use core::alloc::Layout;
use core::cell::RefCell;
use core::ffi::c_void;
use core::fmt;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::alloc::{GlobalAlloc, System};
use std::sync::{Mutex, OnceLock};

use alloc_meter as memory;

mod global;
pub use global::Metered;

use pcre2_sys::{
    PCRE2_ERROR_DEPTHLIMIT, PCRE2_ERROR_HEAPLIMIT, PCRE2_ERROR_JIT_STACKLIMIT,
    PCRE2_ERROR_MATCHLIMIT, PCRE2_ERROR_NOMATCH, PCRE2_ERROR_NOMEMORY, PCRE2_INFO_JITSIZE,
    PCRE2_INFO_SIZE, PCRE2_JIT_COMPLETE, PCRE2_MATCH_INVALID_UTF, PCRE2_NO_JIT, PCRE2_UTF,
    pcre2_code_8, pcre2_code_copy_8, pcre2_code_free_8, pcre2_compile_8,
    pcre2_compile_context_create_8, pcre2_compile_context_free_8, pcre2_general_context_8,
    pcre2_general_context_create_8, pcre2_get_error_message_8, pcre2_jit_compile_8,
    pcre2_jit_free_unused_memory_8, pcre2_jit_match_8, pcre2_jit_stack_8, pcre2_jit_stack_assign_8,
    pcre2_jit_stack_create_8, pcre2_match_8, pcre2_match_context_8, pcre2_match_context_create_8,
    pcre2_match_data_8, pcre2_match_data_create_8, pcre2_pattern_info_8, pcre2_set_depth_limit_8,
    pcre2_set_heap_limit_8, pcre2_set_match_limit_8,
};

/// A compiled pattern. Its code is written once more after `Regex::new` at most: by the JIT
/// compile of a deferred pattern, under `init`, before any match reads the JIT state (see
/// [`Regex::jit_state`]); PCRE2 documents compiled code (JIT included) as safe to match from
/// several threads at once, each with its own match data.
pub struct Regex {
    code: NonNull<pcre2_code_8>,
    /// Bytes the compiled pattern holds or will hold: the code plus its JIT machine code (made,
    /// or measured at compile and made at the first match).
    memory: usize,
    /// The JIT code's size: made, or to be made at the first match (0: no JIT for it).
    jit_size: usize,
    /// [`UNDECIDED`] (deferred, no match yet), [`JIT`] or [`INTERPRETER`]. Once decided it
    /// never changes, and the code is never written again.
    state: AtomicU8,
    /// Held while the state is undecided and the code is used: the JIT compile, or a match in
    /// a process that defers JIT (which leaves the state undecided).
    init: Mutex<()>,
    /// Compiled with [`defer_jit`] on and JIT-able: its JIT code, once made, is charged to
    /// the allowance (and given back when it is freed).
    deferred: bool,
    /// The configuration load this deferred pattern was compiled in ([`memory::begin_load`]'s
    /// count; 0 if none), for [`deferred_jit_bytes`].
    load: u32,
}

const UNDECIDED: u8 = 0;
const JIT: u8 = 1;
const INTERPRETER: u8 = 2;

// SAFETY: the code is written only by `Regex::new` and by the deferred JIT compile, which runs
// with `init` held while `state` is UNDECIDED; every other use of the code while UNDECIDED
// also holds `init`, and once `state` is decided (stored with Release, read with Acquire) the
// code is only read. All per-match state lives in the match data and context, which are
// per-thread here. So moving or sharing a `Regex` between threads is sound.
unsafe impl Send for Regex {}
// SAFETY: as above.
unsafe impl Sync for Regex {}

/// Set in a process that must not keep JIT code (see [`defer_jit`]).
static DEFER: AtomicBool = AtomicBool::new(false);
/// Bytes of JIT code deferred patterns may still make in this process ([`set_jit_allowance`]).
static JIT_LEFT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Deferred patterns that stayed on the interpreter, not yet reported ([`take_jit_refusals`]).
static REFUSED: AtomicUsize = AtomicUsize::new(0);

/// `true`: patterns compiled from now on in this process are compiled without JIT code (their
/// JIT size measured on a copy freed at once), and a deferred pattern matched here runs on the
/// interpreter and stays deferred. NGINX's master sets it before a configuration load (its
/// patterns are only matched in the workers), so it never keeps JIT code across reloads;
/// a worker clears it. `false` (the default): patterns are JIT-compiled when they are
/// compiled, and a deferred one at its first match.
pub fn defer_jit(on: bool) {
    DEFER.store(on, Ordering::Relaxed);
}

/// The most bytes of JIT code the deferred patterns of this process may still make: a pattern
/// whose JIT code does not fit stays on the interpreter (its answers are the same, its match
/// limits still bound its work), counted by [`take_jit_refusals`]. `usize::MAX` by default.
/// Patterns JIT-compiled when they are compiled are not charged to it (their compile's
/// [`memory::Scope`] counts them).
pub fn set_jit_allowance(bytes: usize) {
    JIT_LEFT.store(bytes, Ordering::Relaxed);
}

/// What is left of [`set_jit_allowance`]'s bytes.
pub fn jit_allowance() -> usize {
    JIT_LEFT.load(Ordering::Relaxed)
}

/// Deferred patterns that stayed on the interpreter (the JIT allowance was spent, or the JIT
/// compile failed) since the last call.
pub fn take_jit_refusals() -> usize {
    if REFUSED.load(Ordering::Relaxed) == 0 {
        return 0;
    }
    REFUSED.swap(0, Ordering::Relaxed)
}

/// The JIT bytes measured (and counted in [`Regex::memory`]) by the deferred patterns compiled
/// since [`memory::begin_load`] and still alive: what the load's workers will make at most.
pub fn deferred_jit_bytes() -> usize {
    load_deferred(memory::load_number(), |bytes| bytes)
}

/// The deferred JIT bytes of configuration load `load`, changed by `f` if `load` is the
/// current one (a pattern of an earlier load changes nothing: a new load starts at 0).
fn load_deferred(load: u32, f: impl FnOnce(usize) -> usize) -> usize {
    /// (the load the bytes are of, the bytes).
    static DEFERRED: Mutex<(u32, usize)> = Mutex::new((0, 0));
    let mut d = DEFERRED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let now = memory::load_number();
    if d.0 != now {
        *d = (now, 0);
    }
    if load == now {
        d.1 = f(d.1);
    }
    d.1
}

/// Why a pattern does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileError {
    /// The pattern is not valid: PCRE2's message and the offset in the pattern.
    Invalid {
        /// PCRE2's text, e.g. "missing terminating ] for character class".
        message: String,
        /// Byte offset in the pattern where PCRE2 stopped.
        offset: usize,
    },
    /// It compiles to more than the bound given to [`Regex::with_max_memory`].
    TooLarge {
        /// Bytes of compiled code (plus JIT code, when it got that far).
        bytes: usize,
        /// The bound.
        max: usize,
    },
    /// PCRE2 could not allocate (the system refused, or the open [`memory::Scope`] is spent).
    NoMemory,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Invalid { message, offset } => write!(f, "{message} at offset {offset}"),
            CompileError::TooLarge { bytes, max } => write!(
                f,
                "it compiles to {bytes} bytes (code and JIT code), more than the {max} bytes \
                 one pattern may take"
            ),
            CompileError::NoMemory => f.write_str("out of memory while compiling it"),
        }
    }
}

/// The bounds of one match call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most times PCRE2 may call its internal match function (interpreter) or take a
    /// backtracking step (JIT): the bound on the work of the call.
    pub match_steps: u32,
    /// The most nested backtracking frames (interpreter) or depth (JIT ignores it).
    pub depth: u32,
    /// The most heap the interpreter may use for backtracking frames, in KiB (JIT uses its
    /// own stack and ignores it).
    pub heap_kib: u32,
}

/// What stopped a match call before it could answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchError {
    /// `Limits::match_steps` was reached.
    MatchLimit,
    /// `Limits::depth` was reached.
    DepthLimit,
    /// `Limits::heap_kib` was reached.
    HeapLimit,
    /// The JIT stack ran out.
    JitStackLimit,
    /// Any other PCRE2 error code (e.g. out of memory).
    Other(i32),
}

impl MatchError {
    fn from_code(rc: i32) -> MatchError {
        match rc {
            PCRE2_ERROR_MATCHLIMIT => MatchError::MatchLimit,
            PCRE2_ERROR_DEPTHLIMIT => MatchError::DepthLimit,
            PCRE2_ERROR_HEAPLIMIT => MatchError::HeapLimit,
            PCRE2_ERROR_JIT_STACKLIMIT => MatchError::JitStackLimit,
            other => MatchError::Other(other),
        }
    }
}

impl fmt::Display for MatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchError::MatchLimit => f.write_str("match limit exceeded"),
            MatchError::DepthLimit => f.write_str("depth limit exceeded"),
            MatchError::HeapLimit => f.write_str("heap limit exceeded"),
            MatchError::JitStackLimit => f.write_str("JIT stack limit exceeded"),
            MatchError::Other(code) => f.write_str(&error_message(*code)),
        }
    }
}

/// PCRE2's text for an error code.
fn error_message(code: i32) -> String {
    let mut buf = [0u8; 256];
    // SAFETY: PCRE2 writes at most `buf.len()` bytes (NUL included) into `buf` and returns
    // the length without the NUL, or a negative code.
    let n = unsafe { pcre2_get_error_message_8(code, buf.as_mut_ptr(), buf.len()) };
    match usize::try_from(n) {
        Ok(n) => String::from_utf8_lossy(&buf[..n.min(buf.len())]).into_owned(),
        Err(_) => format!("PCRE2 error {code}"),
    }
}

impl Regex {
    /// Compiles `pattern`, then JIT-compiles it when this PCRE2 can (else the interpreter
    /// runs it, bounded by the same limits).
    pub fn new(pattern: &str) -> Result<Regex, CompileError> {
        Regex::with_max_memory(pattern, usize::MAX)
    }

    /// [`Regex::new`], refusing a pattern whose compiled code plus JIT code is over `max`
    /// bytes (checked before the JIT compile too, on the code alone). Every allocation goes
    /// through the crate's general context, so the open [`memory::Scope`] counts (and bounds)
    /// it; the JIT's executable memory, which PCRE2 maps itself, is counted once it is known.
    /// With [`defer_jit`] on, the JIT code is measured and freed at once, counted all the
    /// same, and made at the first match in a process that keeps JIT code.
    pub fn with_max_memory(pattern: &str, max: usize) -> Result<Regex, CompileError> {
        let (mut code, mut offset) = (0i32, 0usize);
        let general = general_context().ok_or(CompileError::NoMemory)?;
        // SAFETY: `general` is the process's general context (never freed); the result is
        // checked for NULL.
        let Some(context) = NonNull::new(unsafe { pcre2_compile_context_create_8(general) }) else {
            return Err(CompileError::NoMemory);
        };
        // SAFETY: the pattern pointer and length describe a live byte slice (PCRE2 reads it
        // during the call only); the error outputs are valid for writes; `context` is a live
        // compile context, freed right after (the compiled code keeps its own copy of the
        // allocator).
        let raw = unsafe {
            let raw = pcre2_compile_8(
                pattern.as_ptr(),
                pattern.len(),
                PCRE2_UTF | PCRE2_MATCH_INVALID_UTF,
                &mut code,
                &mut offset,
                context.as_ptr(),
            );
            pcre2_compile_context_free_8(context.as_ptr());
            raw
        };
        let Some(code_ptr) = NonNull::new(raw) else {
            if code == PCRE2_ERROR_NOMEMORY || code == COMPILE_ERROR_HEAP_FAILED {
                return Err(CompileError::NoMemory);
            }
            return Err(CompileError::Invalid { message: error_message(code), offset });
        };
        let defer = DEFER.load(Ordering::Relaxed);
        let mut re = Regex {
            code: code_ptr,
            memory: 0,
            jit_size: 0,
            state: AtomicU8::new(INTERPRETER),
            init: Mutex::new(()),
            deferred: false,
            load: 0,
        };
        let size = info_size(code_ptr, PCRE2_INFO_SIZE);
        if size > max {
            return Err(CompileError::TooLarge { bytes: size, max });
        }
        if defer {
            // Measured on a copy (PCRE2 copies the code without its JIT data), freed at once:
            // the same size the JIT compile of the pattern itself would report.
            // SAFETY: `code_ptr` is a valid compiled pattern; the copy is checked for NULL,
            // referenced by nothing else, and freed once, here (its JIT code with it).
            re.jit_size = unsafe {
                let copy = pcre2_code_copy_8(code_ptr.as_ptr());
                let Some(copy) = NonNull::new(copy) else { return Err(CompileError::NoMemory) };
                let jit = pcre2_jit_compile_8(copy.as_ptr(), PCRE2_JIT_COMPLETE) == 0;
                let jit_size = if jit { info_size(copy, PCRE2_INFO_JITSIZE) } else { 0 };
                pcre2_code_free_8(copy.as_ptr());
                jit_size
            };
            if re.jit_size > 0 {
                re.state = AtomicU8::new(UNDECIDED);
                re.deferred = true;
                re.load = memory::load_number();
                load_deferred(re.load, |bytes| bytes.saturating_add(re.jit_size));
            }
        } else {
            // SAFETY: `code_ptr` is a freshly compiled pattern that nothing else references.
            if unsafe { pcre2_jit_compile_8(code_ptr.as_ptr(), PCRE2_JIT_COMPLETE) } == 0 {
                re.state = AtomicU8::new(JIT);
                re.jit_size = info_size(code_ptr, PCRE2_INFO_JITSIZE);
            }
        }
        re.memory = size + re.jit_size;
        // PCRE2 maps the JIT's machine code itself: counted here (made now, or to be made by a
        // worker), and given back in `drop`.
        memory::add(re.jit_size);
        if re.memory > max {
            return Err(CompileError::TooLarge { bytes: re.memory, max });
        }
        Ok(re)
    }

    /// Whether this call runs the JIT: decided at the first match of a deferred pattern (its
    /// JIT code made if the allowance has room), and fixed from then on. `None`: the state is
    /// undecided and this process defers JIT; the caller matches with the interpreter while
    /// holding the returned guard (so no JIT compile of another thread can write the code
    /// meanwhile).
    fn jit_state(&self) -> Result<bool, std::sync::MutexGuard<'_, ()>> {
        match self.state.load(Ordering::Acquire) {
            JIT => return Ok(true),
            INTERPRETER => return Ok(false),
            _ => {}
        }
        let guard = self.init.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match self.state.load(Ordering::Acquire) {
            JIT => return Ok(true),
            INTERPRETER => return Ok(false),
            _ => {}
        }
        if DEFER.load(Ordering::Relaxed) {
            return Err(guard);
        }
        let jit = self.jit_now();
        self.state.store(if jit { JIT } else { INTERPRETER }, Ordering::Release);
        drop(guard);
        Ok(jit)
    }

    /// The deferred JIT compile, with `init` held and the state undecided: charged to the
    /// allowance before it is made; a refusal or a failed compile leaves the interpreter.
    fn jit_now(&self) -> bool {
        let n = self.jit_size;
        if JIT_LEFT
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| l.checked_sub(n))
            .is_err()
        {
            REFUSED.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        // SAFETY: the state is undecided and `init` is held by the caller, so no other thread
        // uses the code now (see the `Sync` impl); PCRE2 only adds its JIT data to it.
        let ok = unsafe { pcre2_jit_compile_8(self.code.as_ptr(), PCRE2_JIT_COMPLETE) } == 0;
        let made = if ok { info_size(self.code, PCRE2_INFO_JITSIZE) } else { 0 };
        if made == 0 {
            JIT_LEFT.fetch_add(n, Ordering::Relaxed);
            REFUSED.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if made != n {
            // Not seen: the same PCRE2 makes the same code. Charged as made.
            let _ = JIT_LEFT.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| {
                Some(l.saturating_add(n).saturating_sub(made))
            });
        }
        true
    }

    /// Bytes held by the compiled pattern (code and JIT machine code), the JIT code counted
    /// also while it is deferred (it is made at the first match).
    pub fn memory(&self) -> usize {
        self.memory
    }

    /// Bytes of JIT machine code the pattern holds, or will make at its first match
    /// (deferred); 0 if it has none.
    pub fn jit_bytes(&self) -> usize {
        self.jit_size
    }

    /// Whether the pattern's JIT code is made (a deferred pattern: after its first match).
    pub fn is_jit(&self) -> bool {
        self.state.load(Ordering::Acquire) == JIT
    }

    /// Whether the pattern's JIT code is to be made at its first match (nothing matched it yet
    /// in a process that keeps JIT code).
    pub fn is_deferred(&self) -> bool {
        self.state.load(Ordering::Acquire) == UNDECIDED
    }

    /// Unanchored search of `subject` within `limits`. Never copies the subject.
    pub fn is_match(&self, subject: &[u8], limits: Limits) -> Result<bool, MatchError> {
        // Decided before the match (a deferred pattern's JIT code made now): every match of
        // the pattern in this process runs the same way, the first one included.
        let (jit, _undecided) = match self.jit_state() {
            Ok(jit) => (jit, None),
            Err(guard) => (false, Some(guard)),
        };
        match self.run(subject, limits, jit) {
            // Out of JIT stack (a value past what JIT_STACK_MAX holds): the interpreter, bounded
            // by the same match and heap limits, gives the answer JIT off would give.
            Err(MatchError::JitStackLimit) => self.run(subject, limits, false),
            r => r,
        }
    }

    /// One match, on the JIT code (`jit`) or the interpreter.
    fn run(&self, subject: &[u8], limits: Limits, jit: bool) -> Result<bool, MatchError> {
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let Some(s) = scratch.get_or_insert_with(Scratch::new) else {
                return Err(MatchError::Other(pcre2_sys::PCRE2_ERROR_NOMEMORY));
            };
            // SAFETY: `s.context` and `s.data` were created by PCRE2 and are only used by
            // this thread (thread-local); the subject pointer and length describe a live
            // slice; `self.code` is a valid compiled pattern. The setters only store a value.
            let rc = unsafe {
                pcre2_set_match_limit_8(s.context.as_ptr(), limits.match_steps);
                pcre2_set_depth_limit_8(s.context.as_ptr(), limits.depth);
                pcre2_set_heap_limit_8(s.context.as_ptr(), limits.heap_kib);
                // The JIT entry point skips pcre2_match's checks of its arguments, which hold
                // here by construction; PCRE2_NO_JIT keeps pcre2_match off JIT code.
                let run = if jit { pcre2_jit_match_8 } else { pcre2_match_8 };
                let options = if jit { 0 } else { PCRE2_NO_JIT };
                run(
                    self.code.as_ptr(),
                    subject.as_ptr(),
                    subject.len(),
                    0,
                    options,
                    s.data.as_ptr(),
                    s.context.as_ptr(),
                )
            };
            if rc >= 0 {
                Ok(true)
            } else if rc == PCRE2_ERROR_NOMATCH {
                Ok(false)
            } else {
                Err(MatchError::from_code(rc))
            }
        })
    }
}

impl Drop for Regex {
    fn drop(&mut self) {
        memory::sub(self.jit_size);
        if self.load != 0 {
            let n = self.jit_size;
            load_deferred(self.load, |bytes| bytes.saturating_sub(n));
        }
        if self.deferred && *self.state.get_mut() == JIT {
            JIT_LEFT.fetch_add(self.jit_size, Ordering::Relaxed);
        }
        // SAFETY: `self.code` came from pcre2_compile_8 and is freed exactly once, here.
        unsafe { pcre2_code_free_8(self.code.as_ptr()) };
    }
}

/// A size PCRE2 reports about `code` (PCRE2_INFO_SIZE or PCRE2_INFO_JITSIZE); 0 if it cannot.
fn info_size(code: NonNull<pcre2_code_8>, what: u32) -> usize {
    let mut size: usize = 0;
    // SAFETY: for PCRE2_INFO_SIZE and PCRE2_INFO_JITSIZE PCRE2 writes one size_t to the given
    // address; `code` is a valid compiled pattern, not being JIT-compiled by another thread
    // (callers: the compile, which owns it, and the deferred JIT compile, under `init`).
    let rc = unsafe { pcre2_pattern_info_8(code.as_ptr(), what, (&raw mut size).cast()) };
    if rc == 0 { size } else { 0 }
}

/// pcre2_compile's "failed to allocate heap memory" (COMPILE_ERROR_BASE 100 + 21).
const COMPILE_ERROR_HEAP_FAILED: i32 = 121;

/// Gives the JIT's unused executable memory back to the system.
///
/// PCRE2 maps the machine code of JIT-compiled patterns in chunks of its own (`mmap`, outside
/// malloc's heap) and keeps a chunk mapped when the patterns in it are freed, for the next
/// compile. A process that compiles a new set of patterns while the old set is alive (NGINX's
/// master on a reload: the new configuration is loaded before the old one is freed) finds the
/// old chunks only partly reusable, and the kept chunks add up: measured with 4,000 patterns,
/// the master's JIT mappings grew from 5.0 MiB to 6.0 MiB over 110 reloads. Call this once the
/// old patterns are freed; the chunks still holding live code stay.
pub fn free_unused_jit_memory() {
    // SAFETY: PCRE2 takes the JIT allocator's lock and only unmaps chunks that hold no code;
    // a null general context is allowed (the default allocator's memory).
    unsafe { pcre2_jit_free_unused_memory_8(ptr::null_mut()) };
}

/// Bytes in front of each PCRE2 block that record its size (PCRE2's `free` is not told it).
const HEADER: usize = 16;

/// PCRE2's `malloc`: the system's, counted by [`memory`], refused (NULL, which PCRE2 reports
/// as an error) when the open scope's limit would be passed or the system says no.
unsafe extern "C" fn metered_malloc(size: usize, _data: *mut c_void) -> *mut c_void {
    let Some(total) = size.checked_add(HEADER) else { return ptr::null_mut() };
    let Ok(layout) = Layout::from_size_align(total, HEADER) else { return ptr::null_mut() };
    if !memory::fits(total) {
        return ptr::null_mut();
    }
    // SAFETY: the layout has a non-zero size.
    let block = unsafe { System.alloc(layout) };
    if block.is_null() {
        memory::note_failure();
        return ptr::null_mut();
    }
    memory::add(total);
    // SAFETY: the block is at least HEADER bytes and aligned to 16: it holds a usize at its
    // start, and the caller's part starts HEADER bytes in.
    unsafe {
        block.cast::<usize>().write(total);
        block.add(HEADER).cast()
    }
}

/// PCRE2's `free`, for blocks of [`metered_malloc`].
unsafe extern "C" fn metered_free(p: *mut c_void, _data: *mut c_void) {
    if p.is_null() {
        return;
    }
    // SAFETY: `p` came from `metered_malloc`, so the block starts HEADER bytes before it and
    // records its total size there; it is freed with the layout it was allocated with.
    unsafe {
        let block = p.cast::<u8>().sub(HEADER);
        let total = block.cast::<usize>().read();
        System.dealloc(block, Layout::from_size_align_unchecked(total, HEADER));
        memory::sub(total);
    }
}

/// The process's PCRE2 general context: PCRE2's memory through [`metered_malloc`].
fn general_context() -> Option<*mut pcre2_general_context_8> {
    struct General(*mut pcre2_general_context_8);
    // SAFETY: a general context is only read after creation (PCRE2 copies its allocator into
    // each context and compiled pattern made from it).
    unsafe impl Send for General {}
    // SAFETY: as above.
    unsafe impl Sync for General {}
    static GENERAL: OnceLock<General> = OnceLock::new();
    let g = GENERAL.get_or_init(|| {
        // SAFETY: both functions have the signatures PCRE2 expects; no user data.
        General(unsafe {
            pcre2_general_context_create_8(
                Some(metered_malloc),
                Some(metered_free),
                ptr::null_mut(),
            )
        })
    });
    (!g.0.is_null()).then_some(g.0)
}

impl fmt::Debug for Regex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Regex")
            .field("memory", &self.memory)
            .field("jit", &self.is_jit())
            .field("deferred", &self.is_deferred())
            .finish()
    }
}

/// One thread's match data (one ovector pair: only "is there a match" is asked) and match
/// context (the limits of the current call). Made on the thread's first match, kept for its
/// life: an NGINX worker is one thread.
struct Scratch {
    data: NonNull<pcre2_match_data_8>,
    context: NonNull<pcre2_match_context_8>,
    stack: NonNull<pcre2_jit_stack_8>,
}

/// The JIT stack of a thread: PCRE2's default (32 KiB on the machine stack) runs out on linear
/// patterns such as `^(?:a|b)*$` over 1-7 KB values. 4 MiB, mapped by PCRE2 and touched only
/// as deep as a match goes, holds such a pattern over every header line NGINX accepts with
/// large_client_header_buffers up to 64k; past it the match reruns on the interpreter.
const JIT_STACK_MAX: usize = 4 * 1024 * 1024;

impl Scratch {
    fn new() -> Option<Scratch> {
        let general = general_context()?;
        // SAFETY: `general` is the process's general context; the results are checked.
        let (data, context, stack) = unsafe {
            (
                pcre2_match_data_create_8(1, general),
                pcre2_match_context_create_8(general),
                pcre2_jit_stack_create_8(32 * 1024, JIT_STACK_MAX, general),
            )
        };
        let s = Scratch {
            data: NonNull::new(data)?,
            context: NonNull::new(context)?,
            stack: NonNull::new(stack)?,
        };
        // SAFETY: both are live and this thread's; no callback, the stack is the user data.
        unsafe { pcre2_jit_stack_assign_8(s.context.as_ptr(), None, s.stack.as_ptr().cast()) };
        Some(s)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // SAFETY: both were created by PCRE2 for this thread and are freed once, here.
        unsafe {
            pcre2_sys::pcre2_match_data_free_8(self.data.as_ptr());
            pcre2_sys::pcre2_match_context_free_8(self.context.as_ptr());
            pcre2_sys::pcre2_jit_stack_free_8(self.stack.as_ptr());
        }
    }
}

thread_local! {
    /// `None` inside: not made yet; `Some(None)`: PCRE2 could not allocate it.
    static SCRATCH: RefCell<Option<Option<Scratch>>> = const { RefCell::new(None) };
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDE: Limits =
        Limits { match_steps: 10_000_000, depth: 10_000_000, heap_kib: 20_000_000 };

    fn m(p: &str, s: &[u8]) -> bool {
        Regex::new(p).unwrap().is_match(s, WIDE).unwrap()
    }

    #[test]
    fn matches_and_misses() {
        assert!(m("b+c", b"abbbcd"));
        assert!(!m("^b", b"abc"));
        assert!(m("(?i)^ABC$", b"abc"));
        assert!(m("^v1$", b"v1\n"));
        assert!(m("", b""));
    }

    #[test]
    fn invalid_utf8_is_matched_in_place() {
        // Valid text around an invalid byte still matches; the invalid byte matches nothing.
        assert!(m("^a", b"a\xff"));
        assert!(m("b$", b"\xffb"));
        assert!(!m("a.b", b"a\xffb"));
        assert!(!m("\\xff", b"\xff"));
        assert!(m("é", "café".as_bytes()));
    }

    #[test]
    fn compile_errors_say_where() {
        let e = Regex::new("([").unwrap_err();
        assert_eq!(e.to_string(), "missing terminating ] for character class at offset 2");
    }

    #[test]
    fn a_pattern_over_its_bound_is_refused() {
        let e = Regex::with_max_memory("(?:ab|cd){3000}N", 16 * 1024).unwrap_err();
        assert!(matches!(e, CompileError::TooLarge { max: 16384, .. }), "{e:?}");
        assert!(Regex::with_max_memory("^v[0-9]+$", 16 * 1024).is_ok());
    }

    #[test]
    fn pcre2_memory_is_counted_and_bounded_by_the_scope() {
        let s = memory::Scope::open(usize::MAX);
        let re = Regex::new("(?:ab|cd){300}").unwrap();
        assert!(s.used() >= re.memory() / 2, "{} counted for {}", s.used(), re.memory());
        drop(re);
        assert!(s.used() < 1024, "{} left after the free", s.used());
        drop(s);
        let s = memory::Scope::open(2000);
        assert_eq!(Regex::new("(?:ab|cd){300}").unwrap_err(), CompileError::NoMemory);
        assert!(matches!(s.check(), Err(memory::Exhausted::Limit { .. })));
    }

    #[test]
    fn memory_is_counted() {
        let small = Regex::new("a").unwrap();
        let big = Regex::new("(ab|cd){300}").unwrap();
        assert!(small.memory() > 0);
        assert!(big.memory() > small.memory() + 2000, "{} vs {}", big.memory(), small.memory());
    }

    #[test]
    fn each_call_has_its_own_limit() {
        let re = Regex::new("^(a+)+$").unwrap();
        let mut s = vec![b'a'; 24];
        s.push(b'!');
        let tight = Limits { match_steps: 1_000, ..WIDE };
        assert_eq!(re.is_match(&s, tight), Err(MatchError::MatchLimit));
        // The same pattern and thread, a larger limit: the short subject completes.
        assert_eq!(re.is_match(b"aaaa!", WIDE), Ok(false));
        assert_eq!(re.is_match(b"aaaa", tight), Ok(true));
    }
    /// Linear patterns (work proportional to the value) on values up to 64 KiB (NGINX's header
    /// lines are bounded by large_client_header_buffers, 8k by default) and past: the JIT answers
    /// as the interpreter does (no JIT stack exhaustion counted as no match).
    #[test]
    fn jit_and_interpreter_agree_on_long_values() {
        let patterns = [
            "^(?:a|b)*$",
            "^([a-z0-9-]+\\.)*example\\.com$",
            "^(?:[^,]+,?)*$",
            "(x|y)+z",
            "^(?:\\w+\\s?)+$",
        ];
        // Past the JIT stack: the rerun on the interpreter answers.
        let re = Regex::new("^(?:a|b)*$").unwrap();
        let huge = vec![b'a'; 512 * 1024];
        assert_eq!(re.run(&huge, WIDE, true), Err(MatchError::JitStackLimit));
        assert_eq!(re.is_match(&huge, WIDE), Ok(true));
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for p in patterns {
            let re = Regex::new(p).unwrap();
            assert!(re.is_jit(), "{p}: no JIT here");
            for len in [0usize, 1, 100, 1_000, 4_000, 7_000, 8_192, 16_384, 65_536] {
                for _ in 0..4 {
                    let s: Vec<u8> = (0..len)
                        .map(|_| {
                            seed ^= seed << 13;
                            seed ^= seed >> 7;
                            seed ^= seed << 17;
                            b"ab.-x,y z"[(seed % 9) as usize]
                        })
                        .collect();
                    let tail: &[&[u8]] = &[b"", b"a", b".example.com", b"z", b"!"];
                    for t in tail {
                        let mut v = s.clone();
                        v.extend_from_slice(t);
                        let fill = vec![b"ab"[len % 2]; len];
                        for v in [&v, &fill] {
                            let (j, i) = (re.is_match(v, WIDE), re.run(v, WIDE, false));
                            assert_eq!(j, i, "{p} on {} bytes", v.len());
                            // The stack itself holds it (no rerun) up to 64 KiB.
                            assert_eq!(re.run(v, WIDE, true), i, "{p} JIT, {} bytes", v.len());
                        }
                    }
                }
            }
        }
    }
}
