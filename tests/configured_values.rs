//! `$http_matches` values written in the configuration are compiled once per worker and kept,
//! however many a client walks: the README's own pattern (`map` of lists, `set $http_matches
//! $list`) and a `map` that defines `$http_matches` itself, each with more lists than the LRU
//! of request values holds (1,024 values, and here a `http_matches_var_cache` too small for
//! even a few), never compile a list twice; what does not fit in `http_matches_max_memory` is
//! reported once and goes through the LRU. Compiles are counted from the worker's `[info]`
//! compile lines (one per compile), not timed.

mod common;

use common::Nginx;

const LISTS: usize = 2_000;

/// List `k` of family `f`: entry 0 wants header `x-k: k`, entry 1 takes the rest.
fn list_of(f: &str, k: usize) -> String {
    format!(
        r#"[{{"headers":["x-k:Exact:{k}"],"redirectPath":"/t/{f}h{k}"}},{{"any":true,"redirectPath":"/t/{f}a{k}"}}]"#
    )
}

fn list(k: usize) -> String {
    list_of("", k)
}

fn compile_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains("compiled a $http_matches value")).collect()
}

fn fingerprint(line: &str) -> Option<&str> {
    line.split("fingerprint ").nth(1)?.get(..16)
}

/// `map $arg_k $var { ... }` of `n` lists of family `f`.
fn map_block(var: &str, f: &str, n: usize) -> String {
    let mut map = String::new();
    for k in 0..n {
        map.push_str(&format!("        {k} '{}';\n", list_of(f, k)));
    }
    format!(
        "map $arg_k ${var} {{
             zz '[{{\"any\":true,\"redirectPath\":\"/t/z$arg_z\"}}]';
             default '[{{\"any\":true,\"redirectPath\":\"/t/default\"}}]';
{map}         }}"
    )
}

/// One request of a walk: list `k` of family `f` at `path`, its header entry or its fallback.
fn ask(n: &Nginx, path: &str, f: &str, k: usize, header: bool) {
    let (value, want) = if header {
        (k.to_string(), format!("/t/{f}h{k} entry=0\n"))
    } else {
        ("no".to_owned(), format!("/t/{f}a{k} entry=1\n"))
    };
    let r = n.get(&format!("{path}?k={k}"), &[("x-k", &value)]);
    assert_eq!((r.status, r.body.as_str()), (200, want.as_str()), "{path} k {k}");
}

#[test]
fn a_map_of_2000_configured_lists_walked_twice_compiles_each_once() {
    let body = format!(
        "http_matches_var_cache 16k;
         map_hash_max_size 8192;
         map_hash_bucket_size 128;
         {set_map}
         {direct_map}
         server {{
           listen 127.0.0.1:{{PORT}};
           location /t/ {{ internal; return 200 \"$uri entry=$matches_entry\\n\"; }}
           location = /s {{ set $http_matches $list; http_matches; }}
           location = /m {{ http_matches; }}
           location = /literal {{ set $http_matches '{lit}'; http_matches; }}
           location = /h {{ set $http_matches $http_x_list; http_matches; }}
         }}",
        set_map = map_block("list", "", LISTS),
        direct_map = map_block("http_matches", "m", LISTS),
        lit = list(LISTS + 1)
    );
    let n = Nginx::start("configured-values", &body, &[]);
    // `set $http_matches $list` (a copy of the map's value), then the map that defines
    // `$http_matches` itself: each walked twice, each list compiled exactly once.
    for (form, path, f) in [(0, "/s", ""), (1, "/m", "m")] {
        for pass in 0..2 {
            for k in 0..LISTS {
                ask(&n, path, f, k, (k + pass) % 2 == 0);
            }
            let compiles = compile_lines(&n.error_log()).len();
            assert_eq!(compiles, (form + 1) * LISTS, "{path}, pass {pass}: each list once");
        }
    }
    // Where a `map` defines `$http_matches`, a client's `Matches:` header is never the list.
    let evil = r#"[{"any":true,"redirectPath":"/t/evil"}]"#;
    let r = n.get("/m?k=none", &[("Matches", evil)]);
    assert_eq!((r.status, r.body.as_str()), (200, "/t/default entry=0\n"));
    let log = n.error_log();
    let lines = compile_lines(&log);
    // All of them kept as configured values, none through the LRU (which would say "evicted").
    assert!(lines.iter().all(|l| l.contains("from the configuration")), "{}", lines[0]);
    assert!(
        lines.last().unwrap().contains(&format!("{} such values", 2 * LISTS + 1)),
        "{}",
        lines[2 * LISTS]
    );
    // Distinct fingerprints: 4,001 distinct values (the default too), not one value compiled
    // 4,001 times.
    let mut prints: Vec<&str> = lines.iter().filter_map(|l| fingerprint(l)).collect();
    prints.sort_unstable();
    prints.dedup();
    assert_eq!(prints.len(), 2 * LISTS + 1);
    assert!(!log.contains("does not fit"), "everything fits in the default max_memory");

    // A `set` literal: kept the same way, compiled once for any number of requests.
    for _ in 0..3 {
        let r = n.get("/literal", &[]);
        assert_eq!(r.body, format!("/t/a{} entry=1\n", LISTS + 1));
    }
    assert_eq!(compile_lines(&n.error_log()).len(), 2 * LISTS + 2);

    // Request data never enters the kept set. A client's value with a kept list's bytes is
    // answered by that list's compile (the same bytes compile alike: nothing is compiled or
    // kept for it); other bytes go through the bounded LRU (their compile line names
    // evictions), compiled once while they stay in it.
    for _ in 0..2 {
        let r = n.get("/h", &[("x-list", &list(7)), ("x-k", "7")]);
        assert_eq!(r.body, "/t/h7 entry=0\n");
    }
    assert_eq!(compile_lines(&n.error_log()).len(), 2 * LISTS + 2);
    let from_client = list_of("c", 7);
    for _ in 0..2 {
        let r = n.get("/h", &[("x-list", &from_client), ("x-k", "7")]);
        assert_eq!(r.body, "/t/ch7 entry=0\n");
    }
    let log = n.error_log();
    let lines = compile_lines(&log);
    assert_eq!(lines.len(), 2 * LISTS + 3, "the client's value compiled once, into the LRU");
    let last = lines.last().unwrap();
    assert!(
        last.contains(" evicted, the cache holds ") && !last.contains("configuration"),
        "{last}"
    );

    // A map value with a variable in it is made per request (in the request's pool): it is
    // request data, never kept, whether the map defines `$http_matches` or `set` copies it.
    for (path, z) in [("/m", "1"), ("/m", "2"), ("/s", "3")] {
        let r = n.get(&format!("{path}?k=zz&z={z}"), &[]);
        assert_eq!(r.body, format!("/t/z{z} entry=0\n"));
    }
    let log = n.error_log();
    let lines = compile_lines(&log);
    assert_eq!(lines.len(), 2 * LISTS + 6);
    for l in &lines[2 * LISTS + 3..] {
        assert!(l.contains(" evicted, the cache holds ") && !l.contains("configuration"), "{l}");
    }
    n.finish();
}

/// Configured values past what `http_matches_max_memory` leaves: those that fit are kept and
/// never compiled again; the first that does not is reported once (`[warn]`), and it and the
/// rest go through the LRU (here too small to hold them, so each is compiled on each walk),
/// every answer right.
#[test]
fn configured_values_past_max_memory_are_reported_once_and_go_through_the_lru() {
    const N: usize = 300;
    let body = format!(
        "http_matches_var_cache 16k;
         http_matches_max_memory 64k;
         {direct_map}
         server {{
           listen 127.0.0.1:{{PORT}};
           location /t/ {{ internal; return 200 \"$uri entry=$matches_entry\\n\"; }}
           location = /m {{ http_matches; }}
         }}",
        direct_map = map_block("http_matches", "m", N),
    );
    let n = Nginx::start("configured-values-memory", &body, &[]);
    for k in 0..N {
        ask(&n, "/m", "m", k, k % 3 == 0);
    }
    let log = n.error_log();
    let first = compile_lines(&log).len();
    let kept: Vec<&str> = compile_lines(&log)
        .into_iter()
        .filter(|l| l.contains("from the configuration"))
        .filter_map(fingerprint)
        .collect();
    assert_eq!(first, N, "pass 1: each list compiled once");
    assert!(kept.len() > 10 && kept.len() < N, "{} of {N} kept under 64k", kept.len());
    let warns: Vec<&str> = log.lines().filter(|l| l.contains("does not fit in what")).collect();
    assert_eq!(warns.len(), 1, "one [warn] per worker: {warns:?}");
    assert!(warns[0].contains("[warn]"), "{}", warns[0]);
    assert!(warns[0].contains(&format!("{} configured values kept", kept.len())), "{}", warns[0]);

    for k in 0..N {
        ask(&n, "/m", "m", k, k % 3 == 1);
    }
    let log = n.error_log();
    let lines = compile_lines(&log);
    let second: Vec<&str> = lines[first..].to_vec();
    // Only the values that were not kept are compiled again, each once, through the LRU.
    assert_eq!(second.len(), N - kept.len(), "pass 2 compiles only what was not kept");
    for l in &second {
        assert!(l.contains(" evicted, the cache holds "), "{l}");
        let print = fingerprint(l).unwrap();
        assert!(!kept.contains(&print), "a kept value compiled again: {l}");
    }
    assert_eq!(log.lines().filter(|l| l.contains("does not fit in what")).count(), 1);
    n.finish();
}

/// The work of `$http_matches_work` ("attempts/steps/units") of one answer, from its body.
fn units(body: &str) -> u64 {
    let work = body.split_whitespace().nth(1).unwrap_or_default();
    work.rsplit('/').next().and_then(|u| u.parse().ok()).unwrap_or_else(|| panic!("{body}"))
}

/// The search for a configured original of a `$http_matches` value (before it is compiled)
/// looks at a constant number of the request's variable slots, charged to its work (one unit
/// a slot: `$http_matches_work`), however many variables the request evaluated: 600 `set`s
/// before `set $http_matches $http_x_list` cost what none do. The window moves on from one
/// search to the next, so a configured original in a slot past it (`$list`, indexed after the
/// 600) is still found within a few compiles, and from then on first (its slot is learned).
/// Before, the search walked every evaluated variable.
#[test]
fn the_search_for_a_configured_original_is_constant_work() {
    const SETS: usize = 600;
    let sets: String = (0..SETS).map(|i| format!("set $v{i} v{i}; ")).collect();
    let body = format!(
        "{set_map}
         server {{
           listen 127.0.0.1:{{PORT}};
           location /t/ {{ internal; return 200 \"$uri $http_matches_work\\n\"; }}
           location = /few {{ set $http_matches $http_x_list; http_matches; }}
           location = /many {{ {sets} set $http_matches $http_x_list; http_matches; }}
           location = /s {{ {sets} set $http_matches $list; http_matches; }}
         }}",
        set_map = map_block("list", "", 100),
    );
    let n = Nginx::start("configured-values-search", &body, &[]);
    // A client's value: compiled (a search), then a hit (none). The difference is the search.
    let charge = |path: &str, i: usize| {
        let list = format!(r#"[{{"any":true,"redirectPath":"/t/c{i}"}}]"#);
        let first = n.get(path, &[("x-list", &list)]);
        let again = n.get(path, &[("x-list", &list)]);
        assert_eq!(first.body.split(' ').next(), Some(format!("/t/c{i}").as_str()));
        units(&first.body) - units(&again.body)
    };
    let few: Vec<u64> = (0..4).map(|i| charge("/few", i)).collect();
    let many: Vec<u64> = (4..8).map(|i| charge("/many", i)).collect();
    eprintln!("search charged: /few {few:?}, /many ({SETS} variables set) {many:?}");
    for c in few.iter().chain(&many) {
        assert!(*c > 0 && *c <= 8 + 32, "a search looked at {c} slots");
    }
    assert_eq!(few, many, "the work does not depend on the variables the request evaluated");
    // `$list`'s slot lies past the first windows: its values go through the LRU until a
    // search reaches it, then are kept, found by the learned slot at once.
    let mut kept_at = None;
    for k in 0..40 {
        let r = n.get(&format!("/s?k={k}"), &[("x-k", &k.to_string())]);
        assert!(r.body.starts_with(&format!("/t/h{k} ")), "k {k}: {}", r.body);
        let log = n.error_log();
        let last = *compile_lines(&log).last().unwrap();
        if last.contains("from the configuration") {
            kept_at.get_or_insert(k);
        } else {
            assert!(kept_at.is_none(), "k {k}, after the original was found: {last}");
        }
    }
    let kept_at = kept_at.expect("the original was never found");
    assert!(kept_at < (SETS + 200) / 32 + 2, "found after {kept_at} searches");
    let log = n.error_log();
    let last = *compile_lines(&log).last().unwrap();
    assert!(last.contains("; 1 variables looked at"), "{last}");
    n.finish();
}
