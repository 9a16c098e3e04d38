//! `$http_matches` values are cached by content, bounded by `http_matches_var_cache`: the
//! README's own pattern (`map` of lists, `set $http_matches $list`) and a `map` that defines
//! `$http_matches` itself, 2,000 lists each, fit the default cache and are compiled once; a
//! client that walks more `map` keys than a small cache holds, or sends one-off lists, costs at
//! most one compile per request (a bounded one) and cannot evict the lists other requests use
//! (quick_cache's S3-FIFO). Compiles are counted from the worker's `[info]` compile lines (one
//! per compile), not timed.

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
        "map_hash_max_size 8192;
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
    // The default cache holds them all: nothing was evicted.
    assert!(lines.iter().all(|l| l.contains(" 0 evicted")), "{}", lines[0]);
    assert!(
        lines.last().unwrap().contains(&format!("the cache holds {} values", 2 * LISTS + 1)),
        "{}",
        lines[2 * LISTS]
    );
    // Distinct fingerprints: 4,001 distinct values (the default too), not one value compiled
    // 4,001 times.
    let mut prints: Vec<&str> = lines.iter().filter_map(|l| fingerprint(l)).collect();
    prints.sort_unstable();
    prints.dedup();
    assert_eq!(prints.len(), 2 * LISTS + 1);

    // A `set` literal: kept the same way, compiled once for any number of requests.
    for _ in 0..3 {
        let r = n.get("/literal", &[]);
        assert_eq!(r.body, format!("/t/a{} entry=1\n", LISTS + 1));
    }
    assert_eq!(compile_lines(&n.error_log()).len(), 2 * LISTS + 2);

    // A client's value with a cached list's bytes is answered by that list's compile (the same
    // bytes compile alike); other bytes are compiled once while they stay in the cache.
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
    assert_eq!(lines.len(), 2 * LISTS + 3, "the client's value compiled once");

    // A map value with a variable in it is made per request: each distinct value is compiled,
    // whether the map defines `$http_matches` or `set` copies it.
    for (path, z) in [("/m", "1"), ("/m", "2"), ("/s", "3")] {
        let r = n.get(&format!("{path}?k=zz&z={z}"), &[]);
        assert_eq!(r.body, format!("/t/z{z} entry=0\n"));
    }
    assert_eq!(compile_lines(&n.error_log()).len(), 2 * LISTS + 6);
    n.finish();
}

/// A compile line's evictions and the bytes the cache then held ("3 evicted, the cache holds 9
/// values, 31000 bytes").
fn figures(line: &str) -> (usize, usize) {
    let num = |s: &str| s.parse().unwrap_or_else(|_| panic!("{line}"));
    let (head, tail) = line.split_once(" evicted, the cache holds ").expect(line);
    let evicted = num(head.rsplit(' ').next().unwrap_or_default());
    let bytes = tail.split(", ").nth(1).and_then(|b| b.split(' ').next()).expect(line);
    (evicted, num(bytes))
}

/// A client that walks more `map` keys than a small cache holds (`set $http_matches $list`), or
/// sends a new list in a header on every request, costs at most one compile per request, each
/// evicting a few values at most, the cache never over its bytes; and the list that every 40th
/// request uses stays compiled (S3-FIFO: a one-off value never leaves the small queue). Before,
/// the header's hot list went through an LRU, which the 39 one-offs between two of its uses
/// emptied: it was compiled on every use.
#[test]
fn a_walk_past_the_cache_cannot_evict_the_hot_list() {
    const N: usize = 400;
    const EVERY: usize = 40;
    const BUDGET: usize = 24 * 1024;
    let body = format!(
        "http_matches_var_cache {BUDGET};
         {set_map}
         server {{
           listen 127.0.0.1:{{PORT}};
           location /t/ {{ internal; return 200 \"$uri entry=$matches_entry\\n\"; }}
           location = /s {{ set $http_matches $list; http_matches; }}
           location = /h {{ set $http_matches $http_x_list; http_matches; }}
         }}",
        set_map = map_block("list", "", N),
    );
    let n = Nginx::start("configured-values-walk", &body, &[]);
    let hot = list_of("hot", 0);
    for path in ["/h", "/s"] {
        let before = compile_lines(&n.error_log()).len();
        for i in 0..N {
            let hot_turn = i % EVERY == 0;
            if path == "/s" {
                // Key 0 is the hot list; keys 1.. are each asked once.
                ask(&n, path, "", if hot_turn { 0 } else { i }, i % 2 == 0);
            } else {
                let (v, want, k) = if hot_turn {
                    (hot.clone(), "/t/hoth0 entry=0\n".to_owned(), "0".to_owned())
                } else {
                    (list_of("c", i), format!("/t/ch{i} entry=0\n"), i.to_string())
                };
                let r = n.get(path, &[("x-list", &v), ("x-k", &k)]);
                assert_eq!((r.status, r.body.as_str()), (200, want.as_str()), "{path} {i}");
            }
        }
        let log = n.error_log();
        let lines = compile_lines(&log)[before..].to_vec();
        let hot_print = fingerprint(lines[0]).unwrap().to_owned();
        let hot_compiles = lines.iter().filter(|l| l.contains(&hot_print)).count();
        let most_evicted = lines.iter().map(|l| figures(l).0).max().unwrap();
        let most_bytes = lines.iter().map(|l| figures(l).1).max().unwrap();
        eprintln!(
            "{path}: {} compiles for {N} requests, the hot list {hot_compiles}, at most \
             {most_evicted} evicted by one compile, at most {most_bytes} bytes held; {}",
            lines.len(),
            lines[lines.len() - 1]
        );
        // One compile per one-off value, at most two for the hot list.
        assert!(lines.len() <= N - N / EVERY + 2, "{path}: {} compiles", lines.len());
        assert!(hot_compiles <= 2, "{path}: the hot list was compiled {hot_compiles} times");
        assert!(most_evicted <= 4, "{path}: one compile evicted {most_evicted} values");
        assert!(most_bytes <= BUDGET, "{path}: the cache held {most_bytes} bytes");
    }
    n.finish();
}

/// A location keeps its last `$http_matches` value only as long as the worker's cache does: in a
/// cache that holds one list (~740 bytes counted), the one-off values between two rounds evict
/// the configured literal, and the next round compiles it again (once: its second request finds
/// it kept), served right every time, the cache never over its bytes. Before (the location held
/// the literal's list itself, past the cache's bound), it was compiled once in all.
#[test]
fn a_configured_literal_evicted_from_the_cache_is_compiled_again_and_served_right() {
    const BUDGET: usize = 2_000;
    let body = format!(
        "http_matches_var_cache {BUDGET};
         server {{
           listen 127.0.0.1:{{PORT}};
           location /t/ {{ internal; return 200 \"$uri entry=$matches_entry\\n\"; }}
           location = /literal {{ set $http_matches '{lit}'; http_matches; }}
           location = /h {{ set $http_matches $http_x_list; http_matches; }}
         }}",
        lit = list_of("lit", 0)
    );
    let n = Nginx::start("configured-literal", &body, &[]);
    for round in 0..3 {
        for _ in 0..2 {
            let r = n.get("/literal", &[("x-k", "0")]);
            assert_eq!((r.status, r.body.as_str()), (200, "/t/lith0 entry=0\n"), "round {round}");
        }
        for k in 10 * round..10 * round + 3 {
            let r = n.get("/h", &[("x-list", &list_of("c", k)), ("x-k", &k.to_string())]);
            let want = format!("/t/ch{k} entry=0\n");
            assert_eq!((r.status, r.body.as_str()), (200, want.as_str()), "{round} {k}");
        }
    }
    let log = n.error_log();
    let lines = compile_lines(&log);
    let literal = fingerprint(lines[0]).unwrap();
    let compiles = lines.iter().filter(|l| l.contains(literal)).count();
    assert!(lines.iter().any(|l| figures(l).0 > 0), "nothing was evicted");
    assert!(lines.iter().all(|l| figures(l).1 <= BUDGET), "over the cache's bytes");
    assert_eq!(compiles, 3, "the literal was compiled {compiles} times in 3 rounds");
    n.finish();
}
