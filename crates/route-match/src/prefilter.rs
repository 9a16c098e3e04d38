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
//! Both sets are kept, prefixes and suffixes, with whether every match starts at the start
//! of the subject (`^` outside multi-line mode, `\A`): the index (`index`) looks an anchored
//! pattern's prefixes up at the start of each subject only, and for the others scans for the
//! set its group's other patterns share least ([`Needed::preferred`]). Literals of one length
//! that differ only in a last (first) ASCII byte, a class at the end, give way to the one
//! literal they all start (end) with.
//!
//! Besides literals: the byte lengths a subject can have if a pattern anchored at both ends
//! (`^...$`, `\A...\z`) is to match it, so that a value of another length is refused without
//! PCRE2 (one longer than the maximum is still tried: PCRE2's `$` also matches before a final
//! newline).
//!
//! The automaton that finds literals in request values ignores ASCII case (for a
//! case-sensitive literal that only lets more values through, never fewer), so a caseless
//! pattern's literals come in one ASCII spelling, lower case.
//!
//! Caseless patterns (`(?i)`): `regex-syntax` spells each letter's case variants out (its
//! simple case folding: `(?i)s` is `[Ssſ]`, `(?i)k` is `[KkK]`, `(?i)µ` is `[µΜμ]`), so the
//! literals are every spelling a match can start with, as UTF-8 bytes. PCRE2 (UTF mode, which
//! is how `pcre2-bounded` compiles; no UCP, which only changes `\d\s\w`) matches a caseless
//! character with every member of its Unicode caseless set: the same simple folding, but from
//! the tables of its own Unicode version. A partner that only PCRE2 knows would be a spelling
//! the literals miss, so caseless literals are kept only when every character in them lies in
//! the blocks of [`FOLD_AGREED`] or is a partner of one that does (U+212A KELVIN SIGN for `k`,
//! U+017F LONG S for `s`, U+212B ANGSTROM SIGN for `å`, U+1E9E for `ß`, U+1FD3 for `ΐ`, ...):
//! a unit test checks, over every character of those blocks, that each of PCRE2's caseless
//! partners is one of `regex-syntax`'s. Any other character (e.g. U+0264, which Unicode 16 gave
//! a capital) leaves the pattern out, as before.

use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{Hir, HirKind, Look};

/// The literals any match of a pattern needs, if they can be known.
pub(crate) type Literals = Option<Needed>;

/// The most literals (ASCII case variants counted apart) extracted from a caseless pattern:
/// `(?i)^eu-west-12[a-c]$` is 576 spellings, 6 once ASCII case is ignored.
const CASELESS_TOTAL: usize = 4096;

/// What every match of a pattern starts with and what it ends with (each a finite set of
/// non-empty literals, when known; at least one is), and whether it starts at the start of
/// the subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Needed {
    /// Every match starts with one of these.
    pub(crate) prefixes: Option<Vec<Vec<u8>>>,
    /// Every match ends with one of these.
    pub(crate) suffixes: Option<Vec<Vec<u8>>>,
    /// Every match starts at the start of the subject (`^` outside multi-line mode, `\A`,
    /// before anything else in every branch): a subject that does not begin with one of the
    /// prefixes cannot match, wherever else it holds them.
    pub(crate) anchored: bool,
}

impl Needed {
    /// The set a scan should look for, given how many patterns of its group (the maximum over
    /// a set's literals) share a literal of each set: the less shared (a literal a group's
    /// patterns have in common, `Mozilla/` or `tenant-`, is in most values and lets them all
    /// through), then the longer shortest literal, then the fewer literals; suffixes on a tie.
    pub(crate) fn preferred(&self, shared: impl Fn(&[Vec<u8>]) -> usize) -> &[Vec<u8>] {
        let key = |lits: &[Vec<u8>]| {
            let shortest = lits.iter().map(Vec::len).min().unwrap_or(0);
            (core::cmp::Reverse(shared(lits)), shortest, core::cmp::Reverse(lits.len()))
        };
        match (&self.prefixes, &self.suffixes) {
            (Some(p), Some(s)) if key(p) > key(s) => p,
            (_, Some(s)) => s,
            (Some(p), None) => p,
            (None, None) => &[],
        }
    }
}

/// What a pattern needs before it can match, when PCRE2 and `regex-syntax` read it alike.
#[derive(Debug, Default)]
pub(crate) struct Analysis {
    pub(crate) literals: Literals,
    /// The byte lengths of the subjects it can match, when anchored at both ends: (minimum,
    /// maximum if bounded).
    pub(crate) bounds: Option<(usize, Option<usize>)>,
}

/// One scan and one parse of `pattern` (it is compiled once per source, so this runs once).
///
/// `regex-syntax` builds its whole tree of the pattern (every class spelled out as ranges of
/// its Unicode tables: one `\W` is ~26 KB) and the extractor its literal sets, with infallible
/// allocations and no checkpoint inside: the analysis runs only if [`analysis_estimate`] fits
/// in what is left of the compile's memory bound, else the pattern is left out (always run).
pub(crate) fn analyse(pattern: &str) -> Analysis {
    let Some(caseless) = comparable(pattern) else { return Analysis::default() };
    if !alloc_meter::can_build(analysis_estimate(pattern, caseless)) {
        return Analysis::default();
    }
    let Ok(hir) = regex_syntax::ParserBuilder::new().build().parse(pattern) else {
        return Analysis::default();
    };
    // Caseless patterns get no bounds: a case partner in one engine's Unicode tables but not
    // the other's could have another length.
    let bounds = if caseless { None } else { length_bounds(&hir) };
    Analysis { literals: required_literals(hir, caseless), bounds }
}

/// Bytes the analysis may allocate at once per byte of a pattern, its large classes aside:
/// measured with the module's allocator (`tests/parse_estimate.rs`), at most ~560 (`(?i)a`
/// repeated, `.`, `^`, groups), PCRE2's compile of it included.
const ANALYSIS_PER_BYTE: usize = 1024;
/// ... per class spelled out from Unicode's tables: a Perl class (`\w`, `\W`, `\d`, `\D`, `\s`,
/// `\S`) and, in a caseless pattern, a bracketed class (folded, every cased character of its
/// ranges added): measured at most ~53 KB (`(?i)[\w\s]`; `\W` ~26 KB, `\w` ~7 KB).
const ANALYSIS_PER_CLASS: usize = 64 * 1024;
/// ... for the literal sets of the extractor: at most [`CASELESS_TOTAL`] literals of 64 bytes
/// (measured ~480 KB) for a caseless pattern, 64 literals otherwise.
const ANALYSIS_CASELESS: usize = 1 << 20;
const ANALYSIS_BASE: usize = 64 * 1024;

/// An upper bound of the bytes [`analyse`] allocates at its peak for `pattern` (which
/// [`comparable`] accepted, `caseless` as it said): its bytes, its large classes, and the
/// extractor's literal sets.
pub(crate) fn analysis_estimate(pattern: &str, caseless: bool) -> usize {
    let b = pattern.as_bytes();
    let mut classes = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                i += 1;
                if matches!(b.get(i), Some(b'w' | b'W' | b'd' | b'D' | b's' | b'S')) {
                    classes += 1;
                }
            }
            b'[' if caseless => classes += 1,
            _ => {}
        }
        i += 1;
    }
    let extract = if caseless { ANALYSIS_CASELESS } else { ANALYSIS_BASE };
    b.len()
        .saturating_mul(ANALYSIS_PER_BYTE)
        .saturating_add(classes.saturating_mul(ANALYSIS_PER_CLASS))
        .saturating_add(extract)
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
    // `^` outside multi-line mode (and `\A`) is regex-syntax's `Look::Start`: the start of
    // the subject only, as in PCRE2 (the evaluator always matches from offset 0).
    let anchored = hir.properties().look_set_prefix().contains(Look::Start);
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
    let set = |kind: ExtractKind| {
        let prefix = matches!(kind, ExtractKind::Prefix);
        let mut ex = Extractor::new();
        // Caseless: every ASCII case variant counts towards the extractor's total, but
        // they fold into one below.
        let total = if caseless { CASELESS_TOTAL } else { 64 };
        ex.kind(kind).limit_class(16).limit_repeat(8).limit_literal_len(64).limit_total(total);
        let seq = ex.extract(&hir);
        let lits = seq.literals()?;
        if lits.is_empty() || lits.iter().any(|l| l.as_bytes().is_empty()) {
            return None;
        }
        if caseless && !lits.iter().all(|l| fold_agreed(l.as_bytes())) {
            return None;
        }
        // The automaton ignores ASCII case (see `index`): one spelling per ASCII case
        // family; the spellings with non-ASCII partners (ſ, K, ...) stay apart.
        let fold = |l: &[u8]| if caseless { l.to_ascii_lowercase() } else { l.to_vec() };
        let mut out: Vec<Vec<u8>> = lits.iter().map(|l| fold(l.as_bytes())).collect();
        out.sort();
        out.dedup();
        let out = stem(out, prefix);
        (out.len() <= 64).then_some(out)
    };
    let prefixes = set(ExtractKind::Prefix);
    let suffixes = set(ExtractKind::Suffix);
    if prefixes.is_none() && suffixes.is_none() {
        return None;
    }
    Some(Needed { anchored: anchored && prefixes.is_some(), prefixes, suffixes })
}

/// Literals of one length that differ only in their last byte (their first, for suffixes),
/// an ASCII one (`v2.0` .. `v2.9`, a class at the end), give way to the one literal they all
/// start (end) with: every match still holds it, and one literal is cheaper to look for than
/// ten. (Literals are sorted and distinct.)
fn stem(lits: Vec<Vec<u8>>, prefix: bool) -> Vec<Vec<u8>> {
    let cut = |l: &[u8]| -> Option<Vec<u8>> {
        let (rest, byte) = if prefix {
            let (last, rest) = l.split_last()?;
            (rest, *last)
        } else {
            let (first, rest) = l.split_first()?;
            (rest, *first)
        };
        (byte.is_ascii() && !rest.is_empty()).then(|| rest.to_vec())
    };
    if lits.len() < 2 {
        return lits;
    }
    let Some(first) = cut(&lits[0]) else { return lits };
    let alike = lits.iter().all(|l| l.len() == lits[0].len() && cut(l).as_ref() == Some(&first));
    if alike { vec![first] } else { lits }
}

/// The blocks whose characters' caseless partners in PCRE2 (wherever they lie) are all known
/// to `regex-syntax`, checked by `caseless_sets_agree_with_pcre2`: Basic Latin, Latin-1,
/// Latin Extended-A, Greek and Coptic, Cyrillic and its supplement, whose folds both engines'
/// Unicode versions have had for long; later versions gave partners to characters elsewhere
/// (e.g. Unicode 16: U+A7CB for U+0264).
const FOLD_AGREED: [(char, char); 3] =
    [('\0', '\u{17F}'), ('\u{370}', '\u{3FF}'), ('\u{400}', '\u{52F}')];

fn in_agreed_block(c: char) -> bool {
    FOLD_AGREED.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// Whether every character of a caseless literal (UTF-8; `false` if not) is in
/// [`FOLD_AGREED`] or a case partner of one that is: a character whose caseless partners in
/// PCRE2 `regex-syntax` spells out too, so that the literals hold every spelling PCRE2 matches.
fn fold_agreed(literal: &[u8]) -> bool {
    let Ok(text) = core::str::from_utf8(literal) else { return false };
    text.chars().all(|c| in_agreed_block(c) || caseless_set(c).into_iter().any(in_agreed_block))
}

/// `c` and its simple case folding partners, as `regex-syntax` knows them.
fn caseless_set(c: char) -> Vec<char> {
    let mut class =
        regex_syntax::hir::ClassUnicode::new([regex_syntax::hir::ClassUnicodeRange::new(c, c)]);
    class.case_fold_simple();
    class.iter().flat_map(|r| r.start()..=r.end()).collect()
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
                    // `\x{17F}`, `\o{..}`, `\N{U+..}`, ...: the braces belong to the escape.
                    Some(b'x' | b'o' | b'N' | b'g' | b'k') if b.get(i + 1) == Some(&b'{') => {
                        match b[i..].iter().position(|&c| c == b'}') {
                            Some(end) => i += end,
                            None => return None,
                        }
                    }
                    _ => {}
                }
            }
            // A quantifier's braces hold digits and a comma and nothing else to both engines
            // alike: regex-syntax also reads `a{ 2}` or `a{2, 3}` as quantifiers (it skips
            // whitespace there), where PCRE2 before 10.43 reads them as literal text.
            b'{' if !in_class => {
                let body = b[i + 1..].iter().take_while(|&&c| c != b'}');
                if body.clone().any(|c| !c.is_ascii_digit() && *c != b',') {
                    return None;
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

    /// The set a scan would look for (no other pattern sharing its literals).
    fn lits(p: &str) -> Option<Vec<String>> {
        analyse(p).literals.map(|n| {
            n.preferred(|_| 0).iter().map(|l| String::from_utf8_lossy(l).into_owned()).collect()
        })
    }

    #[test]
    fn literals_of_common_route_patterns() {
        // v2.0 .. v2.9: the one literal they all start with.
        assert_eq!(lits("^v2\\.[0-9]+$"), Some(vec!["v2.".into()]));
        // Possessive: PCRE2's matches are some of regex-syntax's greedy ones, same start.
        assert_eq!(lits("a++b"), Some(vec!["ab".into()]));
        // Its prefixes give way to `tenant-`; its suffixes stay two, and longer.
        assert_eq!(lits("tenant-(a|b)"), Some(vec!["tenant-a".into(), "tenant-b".into()]));
        let n = analyse("tenant-(a|b)").literals.unwrap();
        assert_eq!(n.prefixes, Some(vec![b"tenant-".to_vec()]));
        assert_eq!(lits(".*Firefox/[0-9]+"), Some(vec!["Firefox/".into()]));
        assert_eq!(lits("^(gold|silver)$"), Some(vec!["gold".into(), "silver".into()]));
        // 0x .. 9x: the one literal they all end with.
        assert_eq!(lits("[0-9]+x"), Some(vec!["x".into()]));
    }

    #[test]
    fn caseless_literals_are_every_ascii_spelling() {
        // One ASCII spelling (the automaton ignores ASCII case).
        assert_eq!(lits("(?i)^V2\\.[0-9]+$"), Some(vec!["v2.".into()]));
        assert_eq!(lits("(?i:ab)-x"), Some(vec!["ab-x".into()]));
        // A caseless `k`: its Kelvin sign spelling too.
        assert_eq!(lits("(?i)kelvin"), Some(vec!["kelvin".into(), "\u{212A}elvin".into()]));
        // Whole caseless words, not cut short by their ASCII case variants.
        assert_eq!(lits("(?i)firefox/"), Some(vec!["firefox/".into()]));
    }

    /// The premise of caseless literals: for every character of [`FOLD_AGREED`], PCRE2 (as
    /// `pcre2-bounded` compiles, UTF mode) matches `(?i)c` only with characters `regex-syntax`
    /// folds it with. Checked one by one against every character either
    /// engine could pair it with: all that have a partner in `regex-syntax`, and (one scan
    /// of a subject holding every other character) none of the rest.
    #[test]
    fn caseless_sets_agree_with_pcre2() {
        use pcre2_bounded::{Limits, Regex};
        let wide = Limits { match_steps: u32::MAX, depth: u32::MAX, heap_kib: u32::MAX };
        let all = (0..=0x10FFFFu32).filter_map(char::from_u32);
        let block: Vec<char> = all.clone().filter(|&c| in_agreed_block(c)).collect();
        let partnered: Vec<char> = all.clone().filter(|&c| caseless_set(c).len() > 1).collect();
        let mut candidates = partnered.clone();
        candidates.extend(&block);
        candidates.sort_unstable();
        candidates.dedup();
        let mut buf = [0u8; 4];
        for &c in &block {
            let re = Regex::new(&format!("(?i)^\\x{{{:x}}}$", c as u32)).unwrap();
            let pcre2: Vec<char> = candidates
                .iter()
                .copied()
                .filter(|d| re.is_match(d.encode_utf8(&mut buf).as_bytes(), wide).unwrap())
                .collect();
            // A partner only `regex-syntax` knows (U+0390 and U+1FD3, paired by Unicode 15)
            // only adds a spelling; one only PCRE2 knows would be missed.
            let ours = caseless_set(c);
            assert!(
                pcre2.iter().all(|d| ours.contains(d)),
                "U+{:04X}: {pcre2:?} {ours:?}",
                c as u32
            );
        }
        // No character outside the candidates is a caseless partner of one in the blocks.
        let rest: String = all.filter(|c| candidates.binary_search(c).is_err()).collect();
        let class: String = block
            .iter()
            .filter(|c| !c.is_control() || **c == '\t')
            .map(|c| format!("\\x{{{:x}}}", *c as u32))
            .collect();
        let re = Regex::new(&format!("(?i)[{class}]")).unwrap();
        assert!(!re.is_match(rest.as_bytes(), wide).unwrap());
        // The letters the issue names, as regex-syntax spells them.
        assert_eq!(caseless_set('s'), ['S', 's', '\u{17F}']);
        assert_eq!(caseless_set('k'), ['K', 'k', '\u{212A}']);
        assert_eq!(caseless_set('\u{E5}'), ['\u{C5}', '\u{E5}', '\u{212B}']);
        assert_eq!(caseless_set('\u{B5}'), ['\u{B5}', '\u{39C}', '\u{3BC}']);
    }

    #[test]
    fn caseless_literals_hold_every_utf8_spelling() {
        // `(?i)s` and `(?i)k`: the long s and the Kelvin sign, as UTF-8 bytes.
        let v = lits("(?i)^ks$").unwrap();
        assert_eq!(v, ["ks", "k\u{17F}", "\u{212A}s", "\u{212A}\u{17F}"], "{v:?}");
        // The whole literal of each region, every spelling of its `s`.
        let v = lits("(?i)^eu-west-17[a-c]$").unwrap();
        assert_eq!(v.len(), 6, "{v:?}");
        assert!(v.contains(&"eu-we\u{17F}t-17c".to_owned()), "{v:?}");
        assert!(v.contains(&"eu-west-17a".to_owned()), "{v:?}");
        // Non-ASCII letters with partners elsewhere: µ (U+00B5, U+039C, U+03BC) and å (U+00C5,
        // U+212B).
        let v = lits("(?i)^µå").unwrap();
        assert_eq!(v.len(), 9, "{v:?}");
        assert!(v.contains(&"\u{3BC}\u{212B}".to_owned()), "{v:?}");
    }

    #[test]
    fn patterns_that_could_be_read_differently_are_left_out() {
        for p in [
            "(?i)^ɤx",   // U+0264: Unicode 16 gave it a capital; the engines may differ
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
    fn patterns_anchored_at_the_start_are_marked() {
        let anchored = |p: &str| analyse(p).literals.map(|n| n.anchored);
        for p in ["^v2\\.", "\\Av2", "(?i)^eu-west-1[a-c]$", "^(a|b)c", "^tenant-1(-[a-z]+)?$"] {
            assert_eq!(anchored(p), Some(true), "{p}");
        }
        // Multi-line `^` (after any newline), a branch without `^`, no `^`, `^` after a
        // repetition that may match empty.
        for p in ["(?m)^v2", "^a|b", "v2\\.", "x*^ab", ".*Build/7"] {
            assert_ne!(anchored(p), Some(true), "{p}");
        }
    }

    #[test]
    fn the_less_shared_set_is_preferred() {
        let n = analyse("Mozilla/.*Build/7\\b").literals.unwrap();
        let lit = |l: &[Vec<u8>]| String::from_utf8_lossy(&l[0]).into_owned();
        // Alone, the longer literal; when other patterns share it, the other end.
        assert_eq!(lit(n.preferred(|_| 1)), "Mozilla/");
        assert_eq!(lit(n.preferred(|l| if l[0] == b"Mozilla/" { 2 } else { 1 })), "Build/7");
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
