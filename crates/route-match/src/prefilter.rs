//! What a regex condition needs before it can hold: literals that any match must start (or
//! end) with, so that a request whose value contains none of them skips the condition's entry
//! without running PCRE2 (see `index`).
//!
//! The literals come from the `regex-syntax` parse of the pattern. That is a different
//! parser from PCRE2's, so a pattern is analysed only where the two read it the same way:
//! anything `regex-syntax` refuses (lookaround, backreferences, possessive quantifiers,
//! `\Q..\E`, verbs, ...) is left out, and so are patterns where both parse but could mean
//! different things for literals: an inline `x` flag (whitespace in classes), classes that
//! hold a `[` or a `&&`, `--`, `~~` (set operations in `regex-syntax`, plain characters in
//! PCRE2), the escapes `\v` (a vertical tab in `regex-syntax`, any vertical space in PCRE2),
//! `\<`, `\>`, `\b{..}`, `\B{..}` (word-boundary assertions in `regex-syntax`, characters in
//! PCRE2) and `\p`, `\P` (Unicode tables of versions that need not agree). A pattern without
//! a finite, non-empty set of non-empty literals is left out too. Left out means: always run,
//! as before.
//!
//! Besides literals: the byte lengths a subject can have if a pattern anchored at both ends
//! (`^...$`, `\A...\z`) is to match it, so that a value of another length is refused without
//! PCRE2 (one longer than the maximum is still tried: PCRE2's `$` also matches before a final
//! newline).
//!
//! Caseless patterns (`(?i)`): `regex-syntax` spells each letter's case variants out, so the
//! literals are every spelling a match can start with. The two engines' Unicode case folding
//! need not agree (tables of different Unicode versions), so such literals are kept only when
//! they are all ASCII: an ASCII letter's caseless partners are its other ASCII case in both
//! engines, except `k` and `s`, whose partners U+212A KELVIN SIGN and U+017F LONG S (in PCRE2's
//! UTF mode as in `regex-syntax`) make the literals non-ASCII, and so left out.

use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{Hir, HirKind, Look};

/// The literals any match of a pattern starts (or else ends) with, if they can be known.
pub(crate) type Literals = Option<Vec<Vec<u8>>>;

/// What a pattern needs before it can match, when PCRE2 and `regex-syntax` read it alike.
#[derive(Debug, Default)]
pub(crate) struct Analysis {
    pub(crate) literals: Literals,
    /// The byte lengths of the subjects it can match, when anchored at both ends: (minimum,
    /// maximum if bounded).
    pub(crate) bounds: Option<(usize, Option<usize>)>,
}

/// One scan and one parse of `pattern` (it is compiled once per source, so this runs once).
pub(crate) fn analyse(pattern: &str) -> Analysis {
    let Some(caseless) = comparable(pattern) else { return Analysis::default() };
    let Ok(hir) = regex_syntax::ParserBuilder::new().build().parse(pattern) else {
        return Analysis::default();
    };
    // Caseless patterns get no bounds: a case partner in one engine's Unicode tables but not
    // the other's could have another length.
    let bounds = if caseless { None } else { length_bounds(&hir) };
    Analysis { literals: required_literals(hir, caseless), bounds }
}

fn length_bounds(hir: &Hir) -> Option<(usize, Option<usize>)> {
    let props = hir.properties();
    let anchored = props.look_set_prefix().contains(Look::Start)
        && props.look_set_suffix().contains(Look::End);
    if !anchored {
        return None;
    }
    // `$` (read as the very end by regex-syntax) also matches before a final newline in PCRE2.
    Some((props.minimum_len()?, props.maximum_len().map(|m| m + 1)))
}

fn required_literals(hir: Hir, caseless: bool) -> Literals {
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
            if caseless && lits.iter().any(|l| !l.as_bytes().is_ascii()) {
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

/// Whether PCRE2 and `regex-syntax` read `pattern` alike as far as literals go (see above):
/// `None` if not, else whether an inline flag turns on caseless matching somewhere.
fn comparable(pattern: &str) -> Option<bool> {
    let mut caseless = false;
    let b = pattern.as_bytes();
    let (mut i, mut in_class) = (0, false);
    while i < b.len() {
        match b[i] {
            b'\\' => {
                i += 1;
                match b.get(i) {
                    Some(b'v' | b'<' | b'>' | b'p' | b'P') => return None,
                    Some(b'b' | b'B') if b.get(i + 1) == Some(&b'{') => return None,
                    _ => {}
                }
            }
            b'[' if in_class => return None,
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
            b'&' | b'-' | b'~' if in_class && b.get(i + 1) == Some(&b[i]) => return None,
            b'(' if !in_class && b.get(i + 1) == Some(&b'?') => {
                // Inline flags: (?flags) or (?flags:...).
                let flags =
                    b[i + 2..].iter().take_while(|c| c.is_ascii_alphabetic() || **c == b'-');
                if flags.clone().any(|c| *c == b'x') {
                    return None;
                }
                caseless |= flags.clone().any(|c| *c == b'i');
            }
            _ => {}
        }
        i += 1;
    }
    Some(caseless)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(p: &str) -> Option<Vec<String>> {
        analyse(p)
            .literals
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
    fn caseless_literals_are_every_ascii_spelling() {
        let v = lits("(?i)^v2\\.[0-9]+$").unwrap();
        assert_eq!(v.len(), 20, "{v:?}");
        assert!(v.iter().all(|l| l.starts_with("v2.") || l.starts_with("V2.")), "{v:?}");
        // Only the caseless group is spelled out.
        assert_eq!(
            lits("(?i:ab)-x"),
            Some(vec!["AB-x", "Ab-x", "aB-x", "ab-x"].into_iter().map(String::from).collect())
        );
        // A caseless `k` at the start: the suffixes avoid it.
        let k = lits("(?i)kelvin").unwrap();
        assert_eq!(k.len(), 32, "{k:?}");
        assert!(k.iter().all(|l| l.eq_ignore_ascii_case("elvin")), "{k:?}");
        // Long caseless words are cut to a part every spelling of which is kept.
        let ff = lits("(?i)firefox/").unwrap();
        assert!((16..=64).contains(&ff.len()), "{ff:?}");
        assert!(ff.iter().all(|l| "firefox/".contains(&l.to_ascii_lowercase())), "{ff:?}");
    }

    #[test]
    fn patterns_that_could_be_read_differently_are_left_out() {
        for p in [
            "(?i)kick",  // (?i)k also matches U+212A KELVIN SIGN, at both ends
            "(?i)^best", // (?i)s also matches U+017F LONG S, in prefixes and suffixes
            "(?i)^café", // a non-ASCII letter under (?i)
            "(?x) a b",  // extended mode
            "[a[bc]]x",  // a nested class in regex-syntax, `[` and `]x` in PCRE2
            "[a&&b]x",   // an intersection in regex-syntax
            "[a--b]x",   // a difference in regex-syntax
            "(?<=a)b",   // lookbehind: regex-syntax refuses it
            "(a)\\1",    // a backreference
            "\\Qa.b\\E", // quoting
            ".*",        // no literal
            "a?",        // may match empty
            "\\d+",      // Unicode digits: too many to list
        ] {
            assert_eq!(lits(p), None, "{p}");
        }
    }

    #[test]
    fn length_bounds_of_patterns_anchored_at_both_ends() {
        let length_bounds = |p: &str| analyse(p).bounds;
        assert_eq!(length_bounds("^v[0-9]$"), Some((2, Some(3))));
        assert_eq!(length_bounds("\\A(ab|c)\\z"), Some((1, Some(3))));
        assert_eq!(length_bounds("^a+$"), Some((1, None)));
        for p in ["^ab", "ab$", "(?m)^ab$", "^a$|b", "(?i)^ab$", "^a\\vb$", "^(?=a)a$"] {
            assert_eq!(length_bounds(p), None, "{p}");
        }
    }
}
