//! The regex prefilter: long regex-only lists run only the patterns whose needed literals the
//! request contains (counted attempts), with the outcome of the linear scan.

mod common;

use common::Req;
use proptest::prelude::*;
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

/// A GET request with no regex budget: the linear reference runs up to 10,000 patterns, and a
/// wall-clock budget would make its outcome depend on the machine's speed.
fn get() -> Req {
    Req { budget: Some(None), ..Req::new("GET") }
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
            (get().h("x-version", &format!("v{}.3", last - 3)), last - 3),
            (get().h("x-tenant", &format!("tenant-{}-eu", last - 2)), last - 2),
            (get().h("User-Agent", &format!("Mozilla/5.0 (X11) Build/{} x", last - 1)), last - 1),
            (get().q(&format!("p=/api/v{last}/items")), last),
        ];
        for (r, want) in reqs {
            let (outcome, attempts) = l.evaluate_counting(&r);
            assert_eq!(winner(&outcome), Some(want), "n={n}");
            assert_eq!(outcome, l.evaluate_linear(&r));
            // Substring hits of other entries' literals are few ("v1.3" also holds "v1.")...
            assert!(attempts <= 3, "n={n}, entry {want}: {attempts} attempts");
        }
        // No literal of any entry: no attempt at all.
        let r = get().h("x-version", "w1").h("x-tenant", "nobody");
        assert_eq!(l.evaluate_counting(&r), (Outcome::NoMatch, 0));
    }
}

#[test]
fn entries_without_usable_literals_are_still_run_in_order() {
    // Every tenth entry has a lookahead: never prefiltered, always a candidate.
    let l = list(1000, 10, r"^(?!x)V{i}\\.[0-9]+$");
    let r = get().h("x-version", "V999.1");
    let (outcome, attempts) = l.evaluate_counting(&r);
    assert_eq!(winner(&outcome), Some(999));
    assert_eq!(outcome, l.evaluate_linear(&r));
    assert!((100..=103).contains(&attempts), "{attempts}");
    // One wins where it comes first.
    let r = get().h("x-version", "V19.2");
    assert_eq!(winner(&l.evaluate(&r)), Some(19));
}

#[test]
fn caseless_entries_are_prefiltered_by_every_spelling() {
    // Every tenth entry is caseless: its literals are all the spellings of `v<i>.`.
    let l = list(1000, 10, r"(?i)^V{i}\\.[0-9]+$");
    for (value, want) in [("v999.1", 999), ("V999.1", 999), ("V19.2", 19), ("v19.2", 19)] {
        let r = get().h("x-version", value);
        let (outcome, attempts) = l.evaluate_counting(&r);
        assert_eq!(winner(&outcome), Some(want), "{value}");
        assert_eq!(outcome, l.evaluate_linear(&r), "{value}");
        assert!(attempts <= 3, "{value}: {attempts} attempts");
    }
}

#[test]
fn caseless_letters_with_non_ascii_partners_are_prefiltered_by_every_spelling() {
    // PCRE2 (UTF mode) matches U+212A KELVIN SIGN for (?i)k, U+017F LONG S for (?i)s, U+212B
    // ANGSTROM SIGN for (?i)å, U+039C and U+03BC for (?i)µ: the literals hold those spellings
    // as UTF-8, so such patterns are prefiltered, and still match every spelling.
    let mut json: Vec<String> = [
        "(?i)^kelvin$",
        "(?i)^best$",
        "(?i)^other$",
        "(?i)^ångström-µs$",
        "(?i)^eu-west-[0-9]+[a-c]$",
    ]
    .iter()
    .enumerate()
    .map(|(i, p)| format!(r#"{{"headers":["x:RegularExpression:{p}"],"redirectPath":"/{i}"}}"#))
    .collect();
    json.extend((0..4).map(|i| format!(r#"{{"headers":["y:Exact:{i}"],"redirectPath":"/f{i}"}}"#)));
    let l = compile_list(format!("[{}]", json.join(",")).as_bytes(), Syntax::Auto).unwrap().list;
    assert!(l.is_indexed());
    for (value, want) in [
        ("\u{212A}elvin", 0),
        ("KELVIN", 0),
        ("kelvi\u{1E44}", 99), // not a partner of n
        ("be\u{17F}t", 1),
        ("BE\u{17F}T", 1),
        ("OTHER", 2),
        ("\u{212B}NGSTR\u{D6}M-\u{39C}\u{17F}", 3),
        ("\u{E5}ngstr\u{F6}m-\u{3BC}s", 3),
        ("Eu-We\u{17F}t-12C", 4),
        ("eu-west-12d", 99),
    ] {
        let r = get().h("x", value);
        let (outcome, attempts) = l.evaluate_counting(&r);
        assert_eq!(winner(&outcome), (want != 99).then_some(want), "{value:?}");
        assert_eq!(outcome, l.evaluate_linear(&r), "{value:?}");
        // Only the entry whose literals the value holds runs (or none).
        assert!(attempts <= 1, "{value:?}: {attempts} attempts");
    }
}

#[test]
fn two_hundred_caseless_regions_run_one_pattern() {
    // The issue's case: 200 `(?i)^eu-west-N[a-c]$` entries, the winner last.
    let entries: Vec<String> = (0..200)
        .map(|i| {
            format!(
                r#"{{"headers":["x-region:RegularExpression:(?i)^eu-west-{i}[a-c]$"],"redirectPath":"/r{i}"}}"#
            )
        })
        .collect();
    let l = compile_list(format!("[{}]", entries.join(",")).as_bytes(), Syntax::Auto).unwrap().list;
    for (value, want) in
        [("EU-WEST-199C", Some(199)), ("eu-we\u{17F}t-7a", Some(7)), ("eu-west-7d", None)]
    {
        let r = get().h("x-region", value);
        let (outcome, attempts) = l.evaluate_counting(&r);
        assert_eq!(winner(&outcome), want, "{value}");
        assert_eq!(outcome, l.evaluate_linear(&r), "{value}");
        assert!(attempts <= 2, "{value}: {attempts} attempts");
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
        (get().h("x-id", "0123abcd-ef01"), Some(0), 1),
        (get().h("x-id", "0123abcd-ef0123"), None, 0),
        // One byte over (13 + a newline PCRE2 allows) is still tried.
        (get().h("x-id", "0123abcd-ef012"), None, 1),
        (get().h("x-id", "0123abcd-ef0"), None, 0),
        (get().h("x-v", "v12"), Some(1), 1),
        // PCRE2's `$` matches before a final newline: that length is still tried.
        (get().h("x-v", "v12\n"), Some(1), 1),
        // Too long for entry 1, not anchored at the end for entry 2: only that one runs.
        (get().h("x-v", "w123456"), Some(2), 1),
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
        let r = get().h("x", value);
        let outcome = l.evaluate(&r);
        assert_eq!(winner(&outcome), Some(want), "{value:?}");
        assert_eq!(outcome, l.evaluate_linear(&r), "{value:?}");
    }
}

/// Caseless patterns whose literals hold letters with partners outside ASCII, and values
/// spelled with those partners.
const CASELESS: [&str; 8] = [
    "(?i)^ks",
    "(?i)sk$",
    "(?i)a[sk]b",
    "(?i)^µå",
    "(?i:kelvin)-s",
    "(?i)ſt",
    "(?i)ss|kk",
    "(?i)^(?:ab|sk)c",
];
const SPELLINGS: [&str; 12] = [
    "ks",
    "KS",
    "\u{212A}\u{17F}",
    "sk",
    "S\u{212A}",
    "aSb",
    "a\u{212A}b",
    "\u{B5}\u{212B}",
    "\u{39C}\u{C5}",
    "kelvin-s",
    "\u{212A}ELVIN-s",
    "\u{17F}T",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// Prefiltered (indexed) and linear evaluation agree on caseless lists (no regex budget:
    /// see `get`).
    #[test]
    fn caseless_prefilter_agrees_with_linear_scan(
        pats in proptest::collection::vec(0..CASELESS.len(), 8..24),
        values in proptest::collection::vec((0..SPELLINGS.len(), 0..SPELLINGS.len(), any::<bool>()), 1..6),
    ) {
        let entries: Vec<String> = pats
            .iter()
            .enumerate()
            .map(|(i, p)| format!(r#"{{"headers":["x:RegularExpression:{}"],"redirectPath":"/r{i}"}}"#, CASELESS[*p]))
            .collect();
        let json = format!("[{}]", entries.join(","));
        let list = compile_list(json.as_bytes(), Syntax::Auto).unwrap().list;
        prop_assert!(list.is_indexed());
        for (a, b, upper) in values {
            let mut v = format!("{}{}", SPELLINGS[a], SPELLINGS[b]);
            if upper {
                v = v.to_uppercase();
            }
            let r = get().h("x", &v);
            prop_assert_eq!(list.evaluate(&r), list.evaluate_linear(&r), "{} {:?}", json, v);
        }
    }
}

#[test]
fn anchored_patterns_are_looked_up_at_the_start_of_each_subject() {
    // Tenants, versions and caseless regions, anchored at the start: a value holding a
    // literal anywhere but at its start (or at the start of a comma element) runs nothing.
    let entries: Vec<String> = (0..300)
        .map(|i| {
            let cond = match i % 3 {
                0 => format!(r"x-tenant:RegularExpression:^tenant-{i}(-[a-z]+)?$"),
                1 => format!(r"x-version:RegularExpression:^v{i}\\.[0-9]+$"),
                _ => format!(r"x-region:RegularExpression:(?i)^eu-west-{i}[a-c]$"),
            };
            format!(r#"{{"headers":["{cond}"],"redirectPath":"/r{i}"}}"#)
        })
        .collect();
    let l = compile_list(format!("[{}]", entries.join(",")).as_bytes(), Syntax::Auto).unwrap().list;
    assert!(l.is_indexed());
    let cases = [
        (get().h("x-tenant", "tenant-42"), Some(42), 1..=1),
        (get().h("X-Tenant", "tenant-42-eu"), Some(42), 1..=1),
        // `tenant-4` and `tenant-42` hold too, as literals: both run, the second matches.
        (get().h("x-tenant", "tenant-420"), None, 1..=3),
        (get().h("x-tenant", "my-tenant-42"), None, 0..=0),
        // A comma element starts with it: `line_holds` matches the element.
        (get().h("x-tenant", "other, tenant-42"), Some(42), 1..=2),
        (get().h("x-tenant", "other,\ttenant-42-x ,y"), Some(42), 1..=2),
        // The second line of a repeated header.
        (get().h("x-tenant", "nobody").h("x-tenant", "tenant-42"), Some(42), 1..=1),
        (get().h("x-version", "v43.7"), Some(43), 1..=1),
        (get().h("x-version", "xv43.7"), None, 0..=0),
        (get().h("x-region", "EU-WEST-299C"), Some(299), 1..=1),
        (get().h("x-region", "eu-we\u{17F}t-44b"), Some(44), 1..=1),
        (get().h("x-region", "eu-west-44d"), None, 0..=0),
        (get().h("x-region", " eu-west-44a"), None, 0..=0),
    ];
    for (r, want, attempts) in cases {
        let (outcome, n) = l.evaluate_counting(&r);
        assert_eq!(winner(&outcome), want, "{:?}", r.headers);
        assert_eq!(outcome, l.evaluate_linear(&r), "{:?}", r.headers);
        assert!(attempts.contains(&n), "{:?}: {n} attempts", r.headers);
    }
}

#[test]
fn a_literal_the_list_shares_is_not_the_one_looked_for() {
    // `Mozilla/` is the longer literal of entries 2 and 7, but all the user-agent entries
    // share it: their `Build/N` is looked for instead, so a browser's value runs none.
    let entries: Vec<String> = (0..50)
        .map(|i| {
            format!(
                r#"{{"headers":["user-agent:RegularExpression:Mozilla/.*Build/{i}\\b"],"redirectPath":"/r{i}"}}"#
            )
        })
        .collect();
    let l = compile_list(format!("[{}]", entries.join(",")).as_bytes(), Syntax::Auto).unwrap().list;
    let r = get().h("user-agent", "Mozilla/5.0 (X11; Linux) Build/x");
    assert_eq!(l.evaluate_counting(&r), (Outcome::NoMatch, 0));
    // `Build/99999` holds `Build/9` (entry 9 runs) and no other entry's.
    let r = get().h("user-agent", "Mozilla/5.0 (X11; Linux) Build/99999 x");
    assert_eq!(l.evaluate_counting(&r), (Outcome::NoMatch, 1));
    let r = get().h("user-agent", "Mozilla/5.0 (X11; Linux) Build/7 x");
    let (outcome, attempts) = l.evaluate_counting(&r);
    assert_eq!(winner(&outcome), Some(7));
    assert_eq!(attempts, 1);
}

/// Patterns anchored at the start or not, case-sensitive or not, and value fragments that
/// hold their literals at the start, in the middle, after commas and spaces.
const ANCHORED: [&str; 10] = [
    "^ab",
    "^ab$",
    "\\Aab",
    "(?i)^ab",
    "(?i)^sk[a-c]$",
    "^a(b|c)d",
    "(?m)^ab",
    "^(?:ab|x)c",
    "ab",
    "^v1\\.[0-9]+",
];
const FRAGMENTS: [&str; 14] =
    ["ab", "AB", "abd", "acd", "x", "c", ",", ", ", " ", "\t", "\u{17F}k", "SKb", "v1.2", "\n"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// Prefiltered (indexed) and linear evaluation agree on lists of anchored patterns, for
    /// values with comma elements and repeated lines.
    #[test]
    fn anchored_prefilter_agrees_with_linear_scan(
        pats in proptest::collection::vec(0..ANCHORED.len(), 8..24),
        lines in proptest::collection::vec(proptest::collection::vec(0..FRAGMENTS.len(), 1..6), 1..4),
    ) {
        let entries: Vec<String> = pats
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let p = ANCHORED[*p].replace('\\', "\\\\");
                format!(r#"{{"headers":["x:RegularExpression:{p}"],"redirectPath":"/r{i}"}}"#)
            })
            .collect();
        let json = format!("[{}]", entries.join(","));
        let list = compile_list(json.as_bytes(), Syntax::Auto).unwrap().list;
        prop_assert!(list.is_indexed());
        let mut r = get();
        for line in &lines {
            let v: String = line.iter().map(|f| FRAGMENTS[*f]).collect();
            r = r.h("x", &v);
        }
        prop_assert_eq!(list.evaluate(&r), list.evaluate_linear(&r), "{} {:?}", json, r.headers);
    }
}

#[test]
fn values_holding_many_literals_let_every_one_through() {
    // More literals found in one request than the evaluator keeps in its short list: anchored
    // ones in comma elements, scanned ones in one value.
    let entries: Vec<String> = (0..200)
        .map(|i| {
            let cond = if i % 2 == 0 {
                format!(r"x-tenant:RegularExpression:^tenant-{i}$")
            } else {
                format!(r"x-tag:RegularExpression:tag{i}z")
            };
            format!(r#"{{"headers":["{cond}"],"redirectPath":"/r{i}"}}"#)
        })
        .collect();
    let l = compile_list(format!("[{}]", entries.join(",")).as_bytes(), Syntax::Auto).unwrap().list;
    let tenants: Vec<String> = (100..200).step_by(2).map(|i| format!("tenant-{i}")).collect();
    let tags: String = (101..200).step_by(2).map(|i| format!("tag{i}z ")).collect();
    for r in [
        get().h("x-tenant", &tenants.join(", ")),
        get().h("x-tenant", &tenants.join(",")).h("x-tag", &tags),
        get().h("x-tag", &tags),
        get().h("x-tag", &tags).h("x-tenant", "tenant-198"),
    ] {
        let (outcome, attempts) = l.evaluate_counting(&r);
        assert_eq!(outcome, l.evaluate_linear(&r));
        assert!(winner(&outcome).is_some_and(|w| (100..=101).contains(&w)), "{outcome:?}");
        // `tenant-10` .. `tenant-18` are literals the elements start with too: those five
        // entries run, on the line and each of its (up to 50) elements.
        assert!(attempts <= 6 * 51, "{attempts}");
    }
    // The last literals found still count: only the last tenant and tag are real.
    let r = get().h("x-tenant", &format!("{}, tenant-198", vec!["nobody"; 40].join(", ")));
    assert_eq!(winner(&l.evaluate(&r)), Some(198));
}
