//! Regular expressions: PCRE2, compiled once, with bounded work per match.
//!
//! PCRE2 is the dialect njs uses for `new RegExp()` and NGINX uses for `location ~`, so a
//! pattern that worked under `httpmatches.js` means the same here (lookaround, `(?i)`, POSIX
//! classes, `$` before a final newline, ASCII-only `\d\s\w`). Every pattern is prefixed with
//! `(*LIMIT_MATCH=N)(*LIMIT_DEPTH=N)`, which PCRE2 honours in the interpreter and under JIT, so a
//! catastrophic pattern on hostile input stops after a fixed amount of work; the evaluator
//! treats that as "no match" and reports it.

use core::fmt;
use std::borrow::Cow;

use pcre2::bytes::{Regex, RegexBuilder};

/// The match limit put on every pattern: the most backtracking steps one match attempt may
/// take before it is abandoned as "no match". Measured cost of hitting it: see the README.
pub const MATCH_LIMIT: u32 = 200_000;
const DEPTH_LIMIT: u32 = 10_000;

/// A compiled regular expression condition.
pub struct Pattern {
    source: Box<str>,
    regex: Regex,
}

/// What stopped a match attempt before it could answer (the match limit, a JIT stack limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternFailure(pub String);

impl Pattern {
    /// Compiles `source` (UTF mode, JIT when available). The error text is PCRE2's.
    pub fn new(source: &str) -> Result<Pattern, String> {
        let prefix = format!("(*LIMIT_MATCH={MATCH_LIMIT})(*LIMIT_DEPTH={DEPTH_LIMIT})");
        let regex =
            RegexBuilder::new().utf(true).jit_if_available(true).build(&(prefix.clone() + source));
        let regex = regex.map_err(|e| {
            // "PCRE2: error compiling pattern at offset N: MESSAGE": keep the message, and give
            // the offset in the pattern as written (without our prefix).
            let text = e.to_string();
            let message = text.splitn(3, ": ").nth(2).unwrap_or(&text).to_owned();
            match e.offset() {
                Some(at) => format!("{message} at offset {}", at.saturating_sub(prefix.len())),
                None => message,
            }
        })?;
        Ok(Pattern { source: source.into(), regex })
    }

    /// The pattern as written in the match list.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Unanchored search. Subjects that are not valid UTF-8 are matched as njs saw them: with
    /// each invalid sequence replaced by U+FFFD (this allocates, only for such subjects).
    pub fn is_match(&self, subject: &[u8]) -> Result<bool, PatternFailure> {
        let subject: Cow<'_, [u8]> = match core::str::from_utf8(subject) {
            Ok(_) => Cow::Borrowed(subject),
            Err(_) => Cow::Owned(String::from_utf8_lossy(subject).into_owned().into_bytes()),
        };
        self.regex.is_match(&subject).map_err(|e| PatternFailure(e.to_string()))
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
    fn invalid_utf8_is_data() {
        assert!(m("a.b", b"a\xffb"));
        assert!(m("^\u{fffd}$", b"\xff"));
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
        let started = std::time::Instant::now();
        let r = p.is_match(&subject);
        // The answer is what matters here (bounded work -> an error, never a hang); the time is
        // only printed, speed is checked by the benchmarks.
        eprintln!("catastrophic: {:?} after {:?}", r, started.elapsed());
        assert!(r.is_err(), "{r:?}");
    }
}
