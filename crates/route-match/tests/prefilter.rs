//! The regex prefilter: long regex-only lists run only the patterns whose needed literals the
//! request contains (counted attempts), with the outcome of the linear scan.

mod common;

use common::Req;
use route_match::{Outcome, Syntax, compile_list};

/// `n` entries keyed by version, tenant, user agent and a path-like param, in turn; every
/// `every`-th one is `odd` instead (`{i}` stands for the entry's number).
fn list(n: usize, every: usize, odd: &str) -> route_match::MatchList {
    let entries: Vec<String> = (0..n)
        .map(|i| {
            let cond = if every > 0 && i % every == every - 1 {
                format!(
                    r#""headers":["x-version:RegularExpression:{}"]"#,
                    odd.replace("{i}", &i.to_string())
                )
            } else {
                match i % 4 {
                    0 => format!(r#""headers":["x-version:RegularExpression:^v{i}\\.[0-9]+$"]"#),
                    1 => format!(
                        r#""headers":["x-tenant:RegularExpression:^tenant-{i}(-[a-z]+)?$"]"#
                    ),
                    2 => format!(
                        r#""headers":["user-agent:RegularExpression:Mozilla/.*Build/{i}\\b"]"#
                    ),
                    _ => format!(r#""params":["p=RegularExpression=^/api/v{i}/"]"#),
                }
            };
            format!(r#"{{{cond},"redirectPath":"/r{i}"}}"#)
        })
        .collect();
    compile_list(format!("[{}]", entries.join(",")).as_bytes(), Syntax::Auto).unwrap().list
}

fn winner(o: &Outcome<'_>) -> Option<usize> {
    match o {
        Outcome::Redirect { entry, .. } => Some(*entry),
        _ => None,
    }
}

#[test]
fn only_the_patterns_whose_literals_occur_are_run() {
    for n in [100, 1000, 10_000] {
        let l = list(n, 0, "");
        let last = n - 1;
        let reqs = [
            (Req::new("GET").h("x-version", &format!("v{}.3", last - 3)), last - 3),
            (Req::new("GET").h("x-tenant", &format!("tenant-{}-eu", last - 2)), last - 2),
            (
                Req::new("GET").h("User-Agent", &format!("Mozilla/5.0 (X11) Build/{} x", last - 1)),
                last - 1,
            ),
            (Req::new("GET").q(&format!("p=/api/v{last}/items")), last),
        ];
        for (r, want) in reqs {
            let (outcome, attempts) = l.evaluate_counting(&r);
            assert_eq!(winner(&outcome), Some(want), "n={n}");
            assert_eq!(outcome, l.evaluate_linear(&r));
            // Substring hits of other entries' literals are few ("v1.3" also holds "v1.")...
            assert!(attempts <= 3, "n={n}, entry {want}: {attempts} attempts");
        }
        // No literal of any entry: no attempt at all.
        let r = Req::new("GET").h("x-version", "w1").h("x-tenant", "nobody");
        assert_eq!(l.evaluate_counting(&r), (Outcome::NoMatch, 0));
    }
}

#[test]
fn entries_without_usable_literals_are_still_run_in_order() {
    // Every tenth entry has a lookahead: never prefiltered, always a candidate.
    let l = list(1000, 10, r"^(?!x)V{i}\\.[0-9]+$");
    let r = Req::new("GET").h("x-version", "V999.1");
    let (outcome, attempts) = l.evaluate_counting(&r);
    assert_eq!(winner(&outcome), Some(999));
    assert_eq!(outcome, l.evaluate_linear(&r));
    assert!((100..=103).contains(&attempts), "{attempts}");
    // One wins where it comes first.
    let r = Req::new("GET").h("x-version", "V19.2");
    assert_eq!(winner(&l.evaluate(&r)), Some(19));
}

#[test]
fn caseless_entries_are_prefiltered_by_every_spelling() {
    // Every tenth entry is caseless: its literals are all the spellings of `v<i>.`.
    let l = list(1000, 10, r"(?i)^V{i}\\.[0-9]+$");
    for (value, want) in [("v999.1", 999), ("V999.1", 999), ("V19.2", 19), ("v19.2", 19)] {
        let r = Req::new("GET").h("x-version", value);
        let (outcome, attempts) = l.evaluate_counting(&r);
        assert_eq!(winner(&outcome), Some(want), "{value}");
        assert_eq!(outcome, l.evaluate_linear(&r), "{value}");
        assert!(attempts <= 3, "{value}: {attempts} attempts");
    }
}

#[test]
fn caseless_letters_with_non_ascii_partners_are_not_prefiltered() {
    // PCRE2 (UTF mode) matches U+212A KELVIN SIGN for (?i)k and U+017F LONG S for (?i)s: such
    // patterns must still run, and match.
    let l = compile_list(
        r#"[{"headers":["x:RegularExpression:(?i)^kelvin$"],"redirectPath":"/k"},
            {"headers":["x:RegularExpression:(?i)^best$"],"redirectPath":"/s"},
            {"headers":["x:RegularExpression:(?i)^other$"],"redirectPath":"/o"}]"#
            .as_bytes(),
        Syntax::Auto,
    )
    .unwrap()
    .list;
    for (value, want) in [("\u{212A}elvin", 0), ("KELVIN", 0), ("be\u{17F}t", 1), ("OTHER", 2)] {
        let r = Req::new("GET").h("x", value);
        let outcome = l.evaluate(&r);
        assert_eq!(winner(&outcome), Some(want), "{value:?}");
        assert_eq!(outcome, l.evaluate_linear(&r), "{value:?}");
    }
}

#[test]
fn anchored_patterns_refuse_values_of_other_lengths_without_an_attempt() {
    // UUID-like ids and two-digit versions: no literal a scan could use, but fixed lengths.
    let l = compile_list(
        br#"[{"headers":["x-id:RegularExpression:^[0-9a-f]{8}-[0-9a-f]{4}$"],"redirectPath":"/id"},
            {"headers":["x-v:RegularExpression:^v[0-9]{2}$"],"redirectPath":"/v"},
            {"headers":["x-v:RegularExpression:^w[0-9]{2}"],"redirectPath":"/w"}]"#,
        Syntax::Auto,
    )
    .unwrap()
    .list;
    let cases = [
        (Req::new("GET").h("x-id", "0123abcd-ef01"), Some(0), 1),
        (Req::new("GET").h("x-id", "0123abcd-ef0123"), None, 0),
        // One byte over (13 + a newline PCRE2 allows) is still tried.
        (Req::new("GET").h("x-id", "0123abcd-ef012"), None, 1),
        (Req::new("GET").h("x-id", "0123abcd-ef0"), None, 0),
        (Req::new("GET").h("x-v", "v12"), Some(1), 1),
        // PCRE2's `$` matches before a final newline: that length is still tried.
        (Req::new("GET").h("x-v", "v12\n"), Some(1), 1),
        // Too long for entry 1, not anchored at the end for entry 2: only that one runs.
        (Req::new("GET").h("x-v", "w123456"), Some(2), 1),
    ];
    for (r, want, attempts) in cases {
        let (outcome, n) = l.evaluate_counting(&r);
        assert_eq!(winner(&outcome), want);
        assert_eq!(outcome, l.evaluate_linear(&r));
        assert_eq!(n, attempts, "{want:?}");
    }
}

#[test]
fn escapes_the_two_parsers_read_differently_still_match() {
    // regex-syntax reads `\<` and `\b{start}` as assertions and `\v` as a vertical tab;
    // PCRE2 reads `<`, `\b` then `{start}`, and any vertical space. Filed by regex-syntax's
    // literals (or bounded by its lengths), these entries would be skipped. Six more entries
    // make the list long enough to be indexed.
    let fillers: String = (0..6)
        .map(|i| format!(r#",{{"headers":["y:RegularExpression:^f{i}"],"redirectPath":"/f{i}"}}"#))
        .collect();
    let json = format!(
        r#"[{{"headers":["x:RegularExpression:x\\<y"],"redirectPath":"/lt"}},
            {{"headers":["x:RegularExpression:^a\\vb$"],"redirectPath":"/v"}},
            {{"headers":["x:RegularExpression:a\\b{{start}}"],"redirectPath":"/b"}}{fillers}]"#
    );
    let l = compile_list(json.as_bytes(), Syntax::Auto).unwrap().list;
    assert_eq!(l.len(), 9);
    for (value, want) in [("x<y", 0), ("a\nb", 1), ("a\u{2028}b", 1), ("a{start}", 2)] {
        let r = Req::new("GET").h("x", value);
        let outcome = l.evaluate(&r);
        assert_eq!(winner(&outcome), Some(want), "{value:?}");
        assert_eq!(outcome, l.evaluate_linear(&r), "{value:?}");
    }
}
