//! `$http_matches` values written in the configuration are compiled once per worker and kept,
//! however many a client walks: the README's own pattern (`map` of lists, `set $http_matches
//! $list`) with more lists than the LRU of request values holds (1,024 values, and here a
//! `http_matches_var_cache` too small for even a few) never compiles a list twice.
//! Compiles are counted from the worker's `[info]` compile lines (one per compile), not timed.

mod common;

use common::Nginx;

const LISTS: usize = 2_000;

/// List `k`: entry 0 wants header `x-k: k`, entry 1 takes the rest.
fn list(k: usize) -> String {
    format!(
        r#"[{{"headers":["x-k:Exact:{k}"],"redirectPath":"/t/h{k}"}},{{"any":true,"redirectPath":"/t/a{k}"}}]"#
    )
}

fn compile_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains("compiled a $http_matches value")).collect()
}

#[test]
fn a_map_of_2000_configured_lists_walked_twice_compiles_each_once() {
    let mut map = String::new();
    for k in 0..LISTS {
        map.push_str(&format!("        {k} '{}';\n", list(k)));
    }
    let body = format!(
        "http_matches_var_cache 16k;
         map_hash_max_size 8192;
         map_hash_bucket_size 128;
         map $arg_k $list {{
             default '[{{\"any\":true,\"redirectPath\":\"/t/default\"}}]';
{map}         }}
         server {{
           listen 127.0.0.1:{{PORT}};
           location /t/ {{ internal; return 200 \"$uri entry=$matches_entry\\n\"; }}
           location = /s {{ set $http_matches $list; http_matches; }}
           location = /literal {{ set $http_matches '{lit}'; http_matches; }}
           location = /h {{ set $http_matches $http_x_list; http_matches; }}
         }}",
        lit = list(LISTS + 1)
    );
    let n = Nginx::start("configured-values", &body, &[]);
    for pass in 0..2 {
        for k in 0..LISTS {
            let (headers, want) = if (k + pass) % 2 == 0 {
                (vec![("x-k", k.to_string())], format!("/t/h{k} entry=0\n"))
            } else {
                (vec![("x-k", "no".to_owned())], format!("/t/a{k} entry=1\n"))
            };
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(a, b)| (*a, b.as_str())).collect();
            let r = n.get(&format!("/s?k={k}"), &headers);
            assert_eq!((r.status, r.body.as_str()), (200, want.as_str()), "pass {pass} k {k}");
        }
        let after_pass = compile_lines(&n.error_log()).len();
        assert_eq!(after_pass, LISTS, "compiles after pass {pass}: each list exactly once");
    }
    let log = n.error_log();
    let lines = compile_lines(&log);
    // All of them kept as configured values, none through the LRU (which would say "evicted").
    assert!(lines.iter().all(|l| l.contains("from the configuration")), "{}", lines[0]);
    assert!(
        lines.last().unwrap().contains(&format!("{LISTS} such values")),
        "{}",
        lines[LISTS - 1]
    );
    // Distinct fingerprints: 2,000 distinct values, not one value compiled 2,000 times.
    let mut prints: Vec<&str> =
        lines.iter().filter_map(|l| l.split("fingerprint ").nth(1)?.get(..16)).collect();
    prints.sort_unstable();
    prints.dedup();
    assert_eq!(prints.len(), LISTS);

    // A `set` literal: kept the same way, compiled once for any number of requests.
    for _ in 0..3 {
        let r = n.get("/literal", &[]);
        assert_eq!(r.body, format!("/t/a{} entry=1\n", LISTS + 1));
    }
    assert_eq!(compile_lines(&n.error_log()).len(), LISTS + 1);

    // A value from request data is never taken for a configured one, even when its bytes are
    // a configured list's: it goes through the bounded LRU (its compile line names evictions).
    let from_client = list(7);
    for _ in 0..2 {
        let r = n.get("/h", &[("x-list", &from_client), ("x-k", "7")]);
        assert_eq!(r.body, "/t/h7 entry=0\n");
    }
    let log = n.error_log();
    let lines = compile_lines(&log);
    assert_eq!(lines.len(), LISTS + 2, "the client's value compiled once, into the LRU");
    assert!(lines.last().unwrap().contains(" evicted, the cache holds "), "{}", lines[LISTS + 1]);
    n.finish();
}
