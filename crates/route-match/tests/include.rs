//! Shared lists (`{"include": "KEY"}`): a list of includes answers every request exactly as the
//! expanded list does (entry numbers of the expanded list), with one budget across its parts;
//! a bad include fails the file with its position; a shared list is compiled and counted once.

mod common;

use common::{Req, show};
use proptest::prelude::*;
use route_match::{Outcome, Syntax, compile_file, compile_list, flatten};

fn file(json: &str) -> route_match::CompiledFile {
    compile_file(json.as_bytes(), Syntax::Auto).unwrap_or_else(|e| panic!("{json}: {e}"))
}

/// The outcome with its entry number: `3 -> /p`, `404`, `500@3 ...`.
fn full(o: Outcome<'_>) -> String {
    match o {
        Outcome::Redirect { entry, path } => format!("{entry} -> {path}"),
        Outcome::NoMatch => "404".to_owned(),
        Outcome::Error(e) => format!("500 {e}"),
    }
}

#[test]
fn a_list_of_includes_is_its_lists_one_after_the_other() {
    let json = r#"{
        "re": [{"headers":["x:RegularExpression:^a"],"redirectPath":"/re"}],
        "ex": [{"method":"POST","redirectPath":"/post"},{"headers":["y:Exact:1"],"redirectPath":"/y"}],
        "root": [{"any":true,"redirectPath":"/root"}],
        "loc": [{"include":"ex"},{"include":"re"},{"include":"root"}],
        "alias": [{"include":"re"}]
    }"#;
    let f = file(json);
    let loc = f.get(b"loc").unwrap();
    assert!(loc.is_composite());
    assert_eq!(loc.len(), 4);
    let r: Vec<(usize, &str)> = loc.redirects().collect();
    assert_eq!(r, [(0, "/post"), (1, "/y"), (2, "/re"), (3, "/root")]);
    for (req, want) in [
        (Req::new("POST").h("x", "a"), "0 -> /post"),
        (Req::new("GET").h("y", "1").h("x", "a"), "1 -> /y"),
        (Req::new("GET").h("x", "abc"), "2 -> /re"),
        (Req::new("GET").h("x", "b"), "3 -> /root"),
    ] {
        assert_eq!(full(loc.evaluate(&req)), want, "{req:?}");
        assert_eq!(full(loc.evaluate_linear(&req)), want, "{req:?}");
        assert_eq!(full(loc.evaluate_work(&req).0), want, "{req:?}");
    }
    // A list of one include is the list it names (an alias, not a copy).
    let alias = f.get(b"alias").unwrap();
    assert!(!alias.is_composite());
    assert_eq!(full(alias.evaluate(&Req::new("GET").h("x", "a"))), "0 -> /re");
    // Three lists of entries and one of includes.
    assert_eq!(f.distinct(), 4);
}

#[test]
fn errors_are_numbered_in_the_expanded_list() {
    let json = r#"{
        "a": [{"method":"PUT","redirectPath":"/a"},{"method":"GET"}],
        "b": [{"headers":["bad name:Exact:v"],"redirectPath":"/b"}],
        "l": [{"include":"a"},{"include":"b"}],
        "m": [{"include":"b"},{"include":"a"}]
    }"#;
    let f = file(json);
    let l = f.get(b"l").unwrap();
    assert_eq!(full(l.evaluate(&Req::new("GET"))), "500 entry 1 matched but has no redirectPath");
    assert!(full(l.evaluate(&Req::new("POST"))).starts_with("500 entry 2 is invalid"));
    let m = f.get(b"m").unwrap();
    assert!(full(m.evaluate(&Req::new("PUT"))).starts_with("500 entry 0 is invalid"));
    // The warnings are the named lists' own, once.
    assert_eq!(f.warnings.len(), 2, "{:?}", f.warnings);
}

/// (JSON of a file, what the error says, its line) for each way an include can be wrong.
#[test]
fn a_bad_include_fails_the_file_with_its_position_and_path() {
    for (json, says, line) in [
        (
            "{\"a\": [{\"any\":true,\"redirectPath\":\"/a\"}],\n \"l\": [{\"include\":\"nope\"}]}",
            r#"$["l"][0].include: unknown key "nope""#,
            2,
        ),
        (
            "{\"a\": [{\"any\":true,\"redirectPath\":\"/a\"}],\n\"b\": [{\"include\":\"a\"}, {\"include\":\"a\"}],\n\"l\": [{\"include\":\"b\"}]}",
            r#"$["l"][0].include: the list $["b"] has includes of its own"#,
            3,
        ),
        (
            "{\"l\": [{\"include\":\"l\"}]}",
            r#"$["l"][0].include: the list $["l"] has includes of its own"#,
            1,
        ),
        (
            "{\"a\": [{\"any\":true,\"redirectPath\":\"/a\"}],\n\"l\": [{\"include\":\"a\"},\n {\"any\":true,\"redirectPath\":\"/b\"}]}",
            r#"$["l"][1]: a list with includes holds only includes"#,
            3,
        ),
        (
            "{\"a\": [{\"any\":true,\"redirectPath\":\"/a\"}],\n\"l\": [{\"include\":\"a\",\"redirectPath\":\"/x\"}]}",
            r#"$["l"][0]: an include element has one field"#,
            2,
        ),
        (
            "{\"a\": [{\"any\":true,\"redirectPath\":\"/a\"}],\n\"l\": [{\"include\":7}]}",
            r#"$["l"][0].include must be a string"#,
            2,
        ),
    ] {
        let e = compile_file(json.as_bytes(), Syntax::Auto).unwrap_err();
        assert!(e.message().starts_with(says), "{json}: {e}");
        assert_eq!(e.line(), line, "{json}: {e}");
        assert!(e.column() > 0, "{json}: {e}");
        // From a file as the module reads it (streamed), the same.
        let dir = std::env::temp_dir().join(format!("rm-include-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("matches.json");
        std::fs::write(&path, json).unwrap();
        let e = route_match::compile_file_at(&path, Syntax::Auto).unwrap_err();
        assert!(e.to_string().starts_with(says), "{json}: {e}");
        assert!(e.to_string().contains(&format!(" at line {line} column ")), "{json}: {e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
    // An include names a list of a file: an inline list (or a `$http_matches` value) has none.
    let e = compile_list(br#"[{"include":"a"}]"#, Syntax::Auto).unwrap_err();
    assert!(e.message().starts_with("$[0]: an include is only for the lists of"), "{e}");
    assert_eq!(e.line(), 1);
}

/// A long key an include names is cut in the message (as every key in messages is: 64
/// bytes and how many more), from the parse and from `flatten`: a 100 KB unknown key wrote a
/// 100 KB message before.
#[test]
fn an_include_of_a_long_unknown_key_is_cut_in_the_message() {
    let long = "n".repeat(100_000);
    let json =
        format!(r#"{{"a":[{{"any":true,"redirectPath":"/a"}}],"l":[{{"include":"{long}"}}]}}"#);
    let e = compile_file(json.as_bytes(), Syntax::Auto).unwrap_err();
    let shown = format!(r#"unknown key "{}"...+99936 bytes"#, "n".repeat(64));
    assert!(e.message().contains(&shown), "{}", &e.message()[..200.min(e.message().len())]);
    assert!(e.message().len() < 300, "{} bytes", e.message().len());
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let e = flatten(value.as_object().unwrap()).unwrap_err();
    assert!(e.contains(&shown) && e.len() < 300, "{} bytes", e.len());
}

#[test]
fn a_shared_list_is_compiled_and_counted_once() {
    // A list of 40 regex entries, named by n lists of includes (as every location of a
    // server names the server's regex routes).
    let big: Vec<String> = (0..40)
        .map(|i| {
            format!(
                r#"{{"headers":["x-{i}:RegularExpression:^v{i}[0-9]+$"],"redirectPath":"/r{i}"}}"#
            )
        })
        .collect();
    let with = |n: usize| {
        let mut keys = vec![format!(r#""re":[{}]"#, big.join(","))];
        for i in 0..n {
            keys.push(format!(r#""e{i}":[{{"method":"M{i}","redirectPath":"/m{i}"}}]"#));
            keys.push(format!(r#""l{i}":[{{"include":"e{i}"}},{{"include":"re"}}]"#));
        }
        file(&format!("{{{}}}", keys.join(",")))
    };
    let copies = |n: usize| {
        let mut keys = Vec::new();
        for i in 0..n {
            let own = format!(r#"{{"method":"M{i}","redirectPath":"/m{i}"}}"#);
            keys.push(format!(r#""l{i}":[{own},{}]"#, big.join(",")));
        }
        file(&format!("{{{}}}", keys.join(",")))
    };
    let (one, many) = (with(1).memory(), with(201).memory());
    // Each further location costs its own entry, key and two parts: well under 1 KiB.
    let per_location = (many - one) / 200;
    assert!(per_location < 1024, "{one} -> {many}: {per_location} bytes per location");
    // Copied, each location holds the 40 entries again (and their index).
    let copied = (copies(201).memory() - copies(1).memory()) / 200;
    assert!(copied > 4 * per_location, "shared {per_location} vs copied {copied}");
    // One pattern set: the regexes are compiled once however often they are included.
    let f = with(201);
    let l = f.get(b"l7").unwrap();
    assert_eq!(full(l.evaluate(&Req::new("GET").h("x-3", "v35"))), "4 -> /r3");
}

#[test]
fn the_budget_and_the_memo_are_one_across_the_parts() {
    // The same catastrophic pattern in every part: the budget spent in the first part holds
    // for the others (a budget per part would give each part a fresh one).
    let part = |i: usize| {
        format!(
            r#""p{i}":[{{"headers":["x:RegularExpression:^(a|aa)+$"],"redirectPath":"/p{i}"}}]"#
        )
    };
    let mut keys: Vec<String> = (0..20).map(part).collect();
    keys.push(r#""any":[{"any":true,"redirectPath":"/any"}]"#.to_owned());
    let includes: Vec<String> = (0..20)
        .map(|i| format!(r#"{{"include":"p{i}"}}"#))
        .chain([r#"{"include":"any"}"#.to_owned()])
        .collect();
    keys.push(format!(r#""l":[{}]"#, includes.join(",")));
    let f = file(&format!("{{{}}}", keys.join(",")));
    let l = f.get(b"l").unwrap();
    // One attempt per distinct (pattern, subject) for the whole list: the memo is shared.
    let easy = Req::new("GET").h("x", "aab");
    let (o, work) = l.evaluate_work(&easy);
    assert_eq!(full(o), "20 -> /any");
    assert_eq!(work.attempts, 1, "{work:?}");
    // A subject that spends the budget: every later part's regex fails without an attempt.
    let line = format!("{}b", "a".repeat(4000));
    let hostile = Req::new("GET").h("x", &line).h("x", &format!("{line}c"));
    let (o, work) = l.evaluate_work(&hostile);
    assert_eq!(full(o), "20 -> /any");
    assert!(work.units <= route_match::DEFAULT_REGEX_BUDGET + 64 * 1024, "{work:?}");
    let failures = hostile.regex_failures.borrow();
    assert_eq!(failures.len(), 1, "one report per evaluation: {failures:?}");
    // The same work as the expanded list, evaluated as one list.
    let flat = flatten(&serde_json::from_str(&format!("{{{}}}", keys.join(","))).unwrap()).unwrap();
    let flat = compile_list(flat["l"].to_string().as_bytes(), Syntax::Auto).unwrap().list;
    let hostile2 = Req::new("GET").h("x", &line).h("x", &format!("{line}c"));
    let (fo, fwork) = flat.evaluate_work(&hostile2);
    assert_eq!(full(fo), "20 -> /any");
    assert_eq!((work.attempts, work.regex_steps), (fwork.attempts, fwork.regex_steps));
    assert_eq!(
        failures[0].split(' ').next(),
        hostile2.regex_failures.borrow()[0].split(' ').next()
    );
}

// ---- property: a list of includes is the expanded list, for any lists and requests ----

fn entry() -> impl Strategy<Value = String> {
    let cond = prop_oneof![
        (0..3u8, 0..3u8).prop_map(|(n, v)| format!(r#""headers":["h{n}:Exact:v{v}"]"#)),
        (0..3u8, 0..3u8)
            .prop_map(|(n, v)| format!(r#""headers":["h{n}:RegularExpression:^v{v}"]"#)),
        (0..3u8, 0..3u8).prop_map(|(n, v)| format!(r#""params":["q{n}=Exact=v{v}"]"#)),
        (0..3u8).prop_map(|v| format!(r#""params":["q0=RegularExpression=v{v}$"]"#)),
        prop::sample::select(vec!["GET", "POST"]).prop_map(|m| format!(r#""method":"{m}""#)),
        Just(r#""any":true"#.to_owned()),
        Just(r#""headers":["bad name:Exact:v"]"#.to_owned()),
    ];
    (cond, 0..20u8, any::<bool>()).prop_map(|(c, r, redirect)| {
        if redirect { format!(r#"{{{c},"redirectPath":"/r{r}"}}"#) } else { format!("{{{c}}}") }
    })
}

fn request() -> impl Strategy<Value = Req> {
    (
        prop::sample::select(vec!["GET", "POST", "PUT"]),
        prop::collection::vec((0..3u8, 0..4u8), 0..4),
        prop::collection::vec((0..3u8, 0..4u8), 0..3),
    )
        .prop_map(|(m, hs, qs)| {
            let q: Vec<String> = qs.iter().map(|(n, v)| format!("q{n}=v{v}")).collect();
            hs.iter().fold(Req::new(m).q(&q.join("&")), |r, (n, v)| {
                r.h(&format!("h{n}"), &format!("v{v}"))
            })
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("INCLUDE_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(64)))]

    /// Lists of entries (some long enough to be indexed) and lists of includes of them: each
    /// list answers every request as its expansion compiled as one list does (evaluate,
    /// linear, and counted), entry numbers included.
    #[test]
    fn includes_evaluate_as_their_expansion(
        lists in prop::collection::vec(prop::collection::vec(entry(), 1..12), 1..5),
        includes in prop::collection::vec(prop::collection::vec(0..5usize, 1..5), 1..4),
        requests in prop::collection::vec(request(), 1..8),
    ) {
        let mut keys: Vec<String> =
            lists.iter().enumerate().map(|(i, l)| format!(r#""k{i}":[{}]"#, l.join(","))).collect();
        for (i, inc) in includes.iter().enumerate() {
            let items: Vec<String> =
                inc.iter().map(|t| format!(r#"{{"include":"k{}"}}"#, t % lists.len())).collect();
            keys.push(format!(r#""c{i}":[{}]"#, items.join(",")));
        }
        let json = format!("{{{}}}", keys.join(","));
        let f = file(&json);
        let flat = flatten(&serde_json::from_str(&json).unwrap()).unwrap();
        for (key, list) in &flat {
            let alone = compile_list(list.to_string().as_bytes(), Syntax::Typed).unwrap().list;
            let got = f.get(key.as_bytes()).unwrap();
            prop_assert_eq!(got.len(), alone.len());
            prop_assert_eq!(got.redirects().collect::<Vec<_>>(), alone.redirects().collect::<Vec<_>>());
            for req in &requests {
                let want = full(alone.evaluate_linear(req));
                prop_assert_eq!(full(got.evaluate(req)), want.clone(), "{} {:?}", key, req);
                prop_assert_eq!(full(got.evaluate_linear(req)), want.clone(), "{} {:?}", key, req);
                prop_assert_eq!(full(got.evaluate_work(req).0), want, "{} {:?}", key, req);
            }
        }
        let _ = show(Outcome::NoMatch);
    }
}
