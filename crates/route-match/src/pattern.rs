//! Regular expressions: PCRE2, compiled once, with bounded work per match.
//!
//! PCRE2 is the dialect njs uses for `new RegExp()` and NGINX uses for `location ~`, so a
//! pattern that worked under `httpmatches.js` means the same here (lookaround, `(?i)`, POSIX
//! classes, `$` before a final newline, ASCII-only `\d\s\w`). Every match attempt runs with a
//! step limit (at most [`MATCH_LIMIT`]), a depth limit and a heap limit for the interpreter
//! (used where JIT is not available), so a catastrophic pattern on hostile input stops after a
//! bounded amount of work; the evaluator treats that as "no match" and reports it.
//!
//! **Work, not time.** PCRE2 does not tell how many steps a match took, only whether it
//! finished within the limit it was given. So an attempt climbs a fixed ladder of limits
//! ([`PROBES`]: 2 steps, 64, then 4x more each time, up to [`MATCH_LIMIT`]), and is charged
//! the sum of the limits it ran with: an upper bound of its work that depends only on the
//! pattern and the subject. Nearly every real attempt finishes within 1 or 2 steps (a JIT step
//! is a backtracking point, not a byte: `^tenant-[0-9]{4}$`, `Chrome/1[0-9]{2}` on a user
//! agent, `x.*y.*z` on 4 KiB take 1) and is charged 2, close to what it used (issue #30: a
//! first probe of 64 charged 64 for each, and a legitimate request of 17,000 one-step attempts
//! was over the budget); only a backtracking-heavy one climbs, and then the probes it wasted
//! are at most a third of its last. The request's budget (`eval`) is a count
//! of these charged steps, so the same request and configuration route the same on any
//! machine under any load.
//!
//! **JIT or interpreter, fixed before the first match.** A pattern compiled in NGINX's master
//! has no JIT code there (`pcre2_bounded::defer_jit`); a worker makes it at the pattern's first
//! match, before that match runs, so every attempt of a pattern in a worker runs on the JIT,
//! the first included, and is charged the same steps as with JIT code made at compile
//! (`tests/deferred_jit.rs`). A JIT step and an interpreter step are not the same unit; a
//! pattern runs on the interpreter only where PCRE2 has no JIT, or where its JIT code does not
//! fit in the worker's allowance (or fails to compile: out of memory), which the module logs.

use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};

use pcre2_bounded::{CompileError, Limits, MatchError, Regex};

use crate::regex_cache::{End, Record};

/// The most backtracking steps one match attempt may take before it is abandoned as "no
/// match". Measured cost of hitting it: see docs/BENCHMARKS.md.
pub const MATCH_LIMIT: u32 = 200_000;
/// The most nested backtracking frames of one attempt (interpreter).
const DEPTH_LIMIT: u32 = 10_000;
/// The most heap, in KiB, one attempt may use for backtracking frames (interpreter; under JIT
/// the JIT stack bounds it).
const HEAP_LIMIT_KIB: u32 = 16 * 1024;

/// The step limits an attempt climbs, in order; it is charged the sum of those it ran.
/// It starts at 2: nearly every real attempt finishes within 1 or 2 JIT steps (see the module
/// documentation), and is charged 2, close to its real use; one that needs 3 to 64 runs a
/// second probe, whose wasted first one cost 2 steps.
pub const PROBES: [u32; 8] = [2, 64, 256, 1024, 4096, 16_384, 65_536, MATCH_LIMIT];

/// Probes run before the per-worker cache is asked: attempts that finish within 64 steps
/// never hash their subject.
const UNCACHED_PROBES: usize = 2;

/// The steps an attempt that goes all the way up the ladder is charged.
pub const ATTEMPT_MAX_CHARGE: u64 = {
    let mut sum = 0u64;
    let mut i = 0;
    while i < PROBES.len() {
        sum += PROBES[i] as u64;
        i += 1;
    }
    sum
};

/// The most bytes (code plus JIT code) one pattern may compile to unless the caller says
/// otherwise ([`crate::Bounds`]).
pub const DEFAULT_PATTERN_MEMORY: usize = 64 * 1024;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A compiled regular expression condition.
pub struct Pattern {
    /// Unique in the process for its life (the per-worker result cache's key).
    id: u64,
    source: Box<str>,
    regex: Regex,
    /// Byte lengths of the subjects it can match, for a pattern anchored at both ends
    /// (see `prefilter::length_bounds`).
    bounds: Option<(usize, Option<usize>)>,
}

/// What stopped a match attempt before it could answer (the match limit, a JIT stack limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternFailure(pub String);

/// What an attempt with a given budget answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Matched(bool),
    GaveUp(MatchError),
    /// The next probe did not fit in what was left of the budget.
    BudgetSpent,
}

impl Record {
    /// What this attempt answers, and is charged, with `remaining` steps: the probes run in
    /// order while each fits.
    pub(crate) fn replay(self, remaining: u64) -> (Verdict, u64) {
        let mut charged = 0u64;
        for probe in PROBES.iter().take(usize::from(self.last) + 1) {
            let next = charged + u64::from(*probe);
            if next > remaining {
                return (Verdict::BudgetSpent, charged);
            }
            charged = next;
        }
        (self.verdict(), charged)
    }

    fn verdict(self) -> Verdict {
        match self.end {
            End::Matched(m) => Verdict::Matched(m),
            End::GaveUp(e) => Verdict::GaveUp(e),
        }
    }
}

impl Pattern {
    /// Compiles `source` (UTF mode, invalid UTF-8 in subjects allowed, JIT when available:
    /// now, or at the first match where JIT is deferred).
    /// The error text is PCRE2's, with the offset in the pattern.
    pub fn new(source: &str) -> Result<Pattern, String> {
        Pattern::analysed(source, usize::MAX).map(|(p, _)| p).map_err(|e| e.to_string())
    }

    /// [`Pattern::new`] within `max_memory` bytes of compiled code, and the literals any match
    /// needs (for the prefilter): one analysis.
    pub(crate) fn analysed(
        source: &str,
        max_memory: usize,
    ) -> Result<(Pattern, crate::prefilter::Literals), CompileError> {
        let regex = Regex::with_max_memory(source, max_memory)?;
        let a = crate::prefilter::analyse(source);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Ok((Pattern { id, source: source.into(), regex, bounds: a.bounds }, a.literals))
    }

    /// The pattern as written in the match list.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Heap bytes this pattern holds besides itself: its text, PCRE2's compiled code and
    /// JIT machine code.
    pub fn memory(&self) -> usize {
        crate::bytes::malloc_size(self.source.len()) + self.regex.memory()
    }

    /// Whether a subject of `len` bytes can match at all: `false` only for a pattern anchored
    /// at both ends whose matches cannot have that length.
    pub fn could_match_len(&self, len: usize) -> bool {
        self.bounds.is_none_or(|(min, max)| len >= min && max.is_none_or(|m| len <= m))
    }

    /// One attempt on `subject` with `remaining` steps of the request's budget: the verdict
    /// and the steps charged (see the module documentation). The first two probes run at
    /// once; only an attempt that needs more than 64 steps asks the per-worker cache
    /// (`regex_cache`), so the common case never hashes the subject.
    pub(crate) fn attempt(&self, subject: &[u8], remaining: u64) -> (Verdict, u64) {
        let mut charged = 0u64;
        for (i, probe) in PROBES.iter().enumerate() {
            if i == UNCACHED_PROBES
                && let Some(record) = crate::regex_cache::get(self.id, subject)
            {
                return record.replay(remaining);
            }
            let next = charged + u64::from(*probe);
            if next > remaining {
                return (Verdict::BudgetSpent, charged);
            }
            charged = next;
            if let Some(end) = self.probe(subject, i) {
                let record = Record { last: i as u8, end };
                if i >= UNCACHED_PROBES {
                    crate::regex_cache::put(self.id, subject, record);
                }
                return (record.verdict(), charged);
            }
        }
        // Not reached: the last probe always decides.
        (Verdict::GaveUp(MatchError::MatchLimit), charged)
    }

    /// Runs probe `i`; `None` when it hit its step limit and a larger probe follows.
    fn probe(&self, subject: &[u8], i: usize) -> Option<End> {
        let steps = PROBES.get(i).copied().unwrap_or(MATCH_LIMIT);
        let limits = Limits { match_steps: steps, depth: DEPTH_LIMIT, heap_kib: HEAP_LIMIT_KIB };
        match self.regex.is_match(subject, limits) {
            Ok(m) => Some(End::Matched(m)),
            Err(MatchError::MatchLimit) if i + 1 < PROBES.len() => None,
            Err(e) => Some(End::GaveUp(e)),
        }
    }

    /// Unanchored search, at most [`MATCH_LIMIT`] steps.
    pub fn is_match(&self, subject: &[u8]) -> Result<bool, PatternFailure> {
        self.is_match_within(subject, MATCH_LIMIT)
    }

    /// Unanchored search, at most `steps` (capped at [`MATCH_LIMIT`]) backtracking steps.
    /// The subject is matched in place, never copied: a sequence that is not valid UTF-8
    /// matches no item of the pattern, the valid text around it matches as usual.
    pub fn is_match_within(&self, subject: &[u8], steps: u32) -> Result<bool, PatternFailure> {
        let limits = Limits {
            match_steps: steps.clamp(1, MATCH_LIMIT),
            depth: DEPTH_LIMIT,
            heap_kib: HEAP_LIMIT_KIB,
        };
        self.regex.is_match(subject, limits).map_err(|e| PatternFailure(e.to_string()))
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Pattern").field(&self.source).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &[u8]) -> bool {
        Pattern::new(p).unwrap().is_match(s).unwrap()
    }

    #[test]
    fn pcre2_dialect_as_in_njs() {
        // `$` matches before a final newline (PCRE), unlike ECMAScript.
        assert!(m("^v1$", b"v1\n"));
        // Inline flags and lookaround are PCRE2 features that njs users rely on.
        assert!(m("(?i)^ABC$", b"abc"));
        assert!(m("^(?!internal).*", b"public"));
        assert!(!m("^(?!internal)", b"internal-x"));
        assert!(m("[[:alpha:]]+", b"abc"));
        // ASCII classes: no UCP, so \s does not match NBSP.
        assert!(!m(r"^\s$", "\u{a0}".as_bytes()));
        // Unanchored search.
        assert!(m("Header-[a-z]{1}", b"xx Header-a yy"));
    }

    #[test]
    fn invalid_utf8_is_data_matched_in_place() {
        // Never an error; the invalid byte matches nothing, the text around it matches.
        assert!(!m("a.b", b"a\xffb"));
        assert!(m("^a", b"a\xff\xfe"));
        assert!(m("b$", b"\xc3b"));
        assert!(m("^v[0-9]+", b"v12\xff"));
        assert!(!m("^\u{fffd}$", b"\xff"));
    }

    #[test]
    fn compile_error_text_is_pcre2s() {
        let e = Pattern::new("([").unwrap_err();
        assert_eq!(e, "missing terminating ] for character class at offset 2");
        let e = Pattern::new("a)").unwrap_err();
        assert_eq!(e, "unmatched closing parenthesis at offset 1");
    }

    #[test]
    fn catastrophic_pattern_is_bounded() {
        let p = Pattern::new("(a+)+$").unwrap();
        let mut subject = vec![b'a'; 64 * 1024];
        subject.push(b'!');
        let r = p.is_match(&subject);
        // The answer is what matters here (bounded work -> an error, never a hang); speed is
        // checked by the benchmarks.
        assert_eq!(r, Err(PatternFailure("match limit exceeded".to_owned())));
        // A smaller step allowance gives up on a subject the full one completes.
        let short = b"aaaaaaaaaa!";
        assert_eq!(p.is_match(short), Ok(false));
        assert!(p.is_match_within(short, 50).is_err());
    }

    #[test]
    fn memory_grows_with_the_compiled_code() {
        let small = Pattern::new("^v1$").unwrap();
        let big = Pattern::new("(ab|cd){300}").unwrap();
        assert!(big.memory() > 10 * small.memory(), "{} vs {}", big.memory(), small.memory());
    }
}
