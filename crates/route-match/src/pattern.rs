//! Regular expressions: PCRE2, compiled once, with bounded work per match.
//!
//! PCRE2 is the dialect njs uses for `new RegExp()` and NGINX uses for `location ~`, so a
//! pattern that worked under `httpmatches.js` means the same here (lookaround, `(?i)`, POSIX
//! classes, `$` before a final newline, ASCII-only `\d\s\w`). Every match attempt runs with a
//! step limit (at most [`MATCH_LIMIT`], less when the request's regex budget is nearly spent,
//! see `eval`), a depth limit and a heap limit for the interpreter (used where JIT is not
//! available), so a catastrophic pattern on hostile input stops after a bounded amount of
//! work; the evaluator treats that as "no match" and reports it.

use core::fmt;

use pcre2_bounded::{Limits, Regex};

/// The most backtracking steps one match attempt may take before it is abandoned as "no
/// match". Measured cost of hitting it: see the README.
pub const MATCH_LIMIT: u32 = 200_000;
/// The most nested backtracking frames of one attempt (interpreter).
const DEPTH_LIMIT: u32 = 10_000;
/// The most heap, in KiB, one attempt may use for backtracking frames (interpreter; under JIT
/// the JIT stack bounds it).
const HEAP_LIMIT_KIB: u32 = 16 * 1024;

/// A compiled regular expression condition.
pub struct Pattern {
    source: Box<str>,
    regex: Regex,
    /// Byte lengths of the subjects it can match, for a pattern anchored at both ends
    /// (see `prefilter::length_bounds`).
    bounds: Option<(usize, Option<usize>)>,
}

/// What stopped a match attempt before it could answer (the match limit, a JIT stack limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternFailure(pub String);

impl Pattern {
    /// Compiles `source` (UTF mode, invalid UTF-8 in subjects allowed, JIT when available).
    /// The error text is PCRE2's, with the offset in the pattern.
    pub fn new(source: &str) -> Result<Pattern, String> {
        Pattern::analysed(source).map(|(p, _)| p)
    }

    /// [`Pattern::new`], and the literals any match needs (for the prefilter): one analysis.
    pub(crate) fn analysed(source: &str) -> Result<(Pattern, crate::prefilter::Literals), String> {
        let regex = Regex::new(source).map_err(|e| e.to_string())?;
        let a = crate::prefilter::analyse(source);
        Ok((Pattern { source: source.into(), regex, bounds: a.bounds }, a.literals))
    }

    /// The pattern as written in the match list.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Heap bytes this pattern holds besides itself: its text, PCRE2's compiled code and
    /// JIT machine code.
    pub fn memory(&self) -> usize {
        crate::store::malloc_size(self.source.len()) + self.regex.memory()
    }

    /// Whether a subject of `len` bytes can match at all: `false` only for a pattern anchored
    /// at both ends whose matches cannot have that length.
    pub fn could_match_len(&self, len: usize) -> bool {
        self.bounds.is_none_or(|(min, max)| len >= min && max.is_none_or(|m| len <= m))
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
