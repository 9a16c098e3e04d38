//! What a regex condition needs before it can hold: literals that any match must start (or
//! end) with, so that a request whose value contains none of them skips the condition's entry
//! without running PCRE2 (see `index`).
//!
//! The literals come from the `regex-syntax` parse of the pattern. That is a different
//! parser from PCRE2's, so a pattern is analysed only where the two read it the same way:
//! anything `regex-syntax` refuses (lookaround, backreferences, possessive quantifiers,
//! `\Q..\E`, verbs, ...) is left out, and so are patterns where both parse but could mean
//! different things for literals: inline flags with `i` (Unicode case folding of the two
//! engines is not known to agree) or `x` (whitespace in classes), and classes that hold a
//! `[` or a `&&`, `--`, `~~` (set operations in `regex-syntax`, plain characters in PCRE2).
//! A pattern without a finite, non-empty set of non-empty literals is left out too. Left
//! out means: always run, as before.

use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{Hir, HirKind};

/// The literals any match of `pattern` starts (or else ends) with, when they can be known.
pub(crate) fn required_literals(pattern: &str) -> Option<Vec<Vec<u8>>> {
    if !comparable(pattern) {
        return None;
    }
    let hir = regex_syntax::ParserBuilder::new().build().parse(pattern).ok()?;
    // An unanchored search: a leading `X*` (`.*` in `.*Firefox/`) can always match empty,
    // so whether there is a match does not depend on it; the literals after it are needed.
    let hir = match hir.kind() {
        HirKind::Concat(parts) => {
            let skip = parts
                .iter()
                .take_while(|h| matches!(h.kind(), HirKind::Repetition(r) if r.min == 0))
                .count();
            if skip > 0 { Hir::concat(parts[skip..].to_vec()) } else { hir }
        }
        _ => hir,
    };
    // Prefixes or suffixes, whichever are the more selective: the longer shortest literal,
    // then the fewer literals.
    [ExtractKind::Prefix, ExtractKind::Suffix]
        .into_iter()
        .filter_map(|kind| {
            let mut ex = Extractor::new();
            ex.kind(kind).limit_class(16).limit_repeat(8).limit_literal_len(64).limit_total(64);
            let seq = ex.extract(&hir);
            let lits = seq.literals()?;
            if lits.is_empty() || lits.iter().any(|l| l.as_bytes().is_empty()) {
                return None;
            }
            let mut out: Vec<Vec<u8>> = lits.iter().map(|l| l.as_bytes().to_vec()).collect();
            out.sort();
            out.dedup();
            Some(out)
        })
        .max_by_key(|lits| {
            let shortest = lits.iter().map(Vec::len).min().unwrap_or(0);
            (shortest, core::cmp::Reverse(lits.len()))
        })
}

/// Whether PCRE2 and `regex-syntax` read `pattern` alike as far as literals go (see above).
fn comparable(pattern: &str) -> bool {
    let b = pattern.as_bytes();
    let (mut i, mut in_class) = (0, false);
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'[' if in_class => return false,
            b'[' => {
                in_class = true;
                // A `]` right after `[` or `[^` is a member.
                if b.get(i + 1) == Some(&b'^') {
                    i += 1;
                }
                if b.get(i + 1) == Some(&b']') {
                    i += 1;
                }
            }
            b']' if in_class => in_class = false,
            b'&' | b'-' | b'~' if in_class && b.get(i + 1) == Some(&b[i]) => return false,
            b'(' if !in_class && b.get(i + 1) == Some(&b'?') => {
                // Inline flags: (?flags) or (?flags:...).
                let flags =
                    b[i + 2..].iter().take_while(|c| c.is_ascii_alphabetic() || **c == b'-');
                if flags.clone().any(|c| *c == b'i' || *c == b'x') {
                    return false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(p: &str) -> Option<Vec<String>> {
        required_literals(p)
            .map(|v| v.into_iter().map(|l| String::from_utf8_lossy(&l).into_owned()).collect())
    }

    #[test]
    fn literals_of_common_route_patterns() {
        assert_eq!(lits("^v2\\.[0-9]+$").map(|l| l.len()), Some(10)); // v2.0 .. v2.9
        // Possessive: PCRE2's matches are some of regex-syntax's greedy ones, same start.
        assert_eq!(lits("a++b"), Some(vec!["ab".into()]));
        assert_eq!(lits("tenant-(a|b)"), Some(vec!["tenant-a".into(), "tenant-b".into()]));
        let firefox = lits(".*Firefox/[0-9]+").unwrap();
        assert_eq!(firefox.len(), 10);
        assert!(firefox.iter().all(|l| l.starts_with("Firefox/")), "{firefox:?}");
        assert_eq!(lits("^(gold|silver)$"), Some(vec!["gold".into(), "silver".into()]));
        assert_eq!(lits("[0-9]+x").map(|l| l.len()), Some(10));
    }

    #[test]
    fn patterns_that_could_be_read_differently_are_left_out() {
        for p in [
            "(?i)firefox", // case folding
            "(?x) a b",    // extended mode
            "[a[bc]]x",    // a nested class in regex-syntax, `[` and `]x` in PCRE2
            "[a&&b]x",     // an intersection in regex-syntax
            "[a--b]x",     // a difference in regex-syntax
            "(?<=a)b",     // lookbehind: regex-syntax refuses it
            "(a)\\1",      // a backreference
            "\\Qa.b\\E",   // quoting
            ".*",          // no literal
            "a?",          // may match empty
            "\\d+",        // Unicode digits: too many to list
        ] {
            assert_eq!(lits(p), None, "{p}");
        }
    }
}
