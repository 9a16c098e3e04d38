//! What one worker spends is bounded, whatever the requests and values it sees; and what can
//! be checked at load is checked at load.

mod common;

use common::{Nginx, Prefix, rss_kib, worker_pid};

fn logged(out: &str, level: &str, text: &str) -> bool {
    out.lines().any(|l| l.contains(&format!("[{level}] ")) && l.contains(text))
}

/// A `$http_matches` value of about `size` bytes: `regexes` regex entries (distinct patterns,
/// so each costs its own PCRE2 code), exact entries to fill, then `any` to /t/NAME.
fn value(name: &str, size: usize, regexes: usize) -> String {
    let mut entries: Vec<String> = (0..regexes)
        .map(|i| {
            format!(
                r#"{{"headers":["x-h{i}:RegularExpression:^(ab|cd){{8}}{name}[0-9]{{1,3}}$"],"redirectPath":"/t/r{i}"}}"#
            )
        })
        .collect();
    let mut i = 0;
    while entries.iter().map(|e| e.len() + 1).sum::<usize>() + 60 < size {
        entries.push(format!(r#"{{"headers":["x-e{i}:Exact:{name}-{i}"],"redirectPath":"/t/e"}}"#));
        i += 1;
    }
    entries.push(format!(r#"{{"any":true,"redirectPath":"/t/{name}"}}"#));
    format!("[{}]", entries.join(","))
}

/// 10,000 distinct 8 KiB values through one worker (a configuration that builds the list from
/// a request header, so clients choose it: what the README warns against, and the worst case
/// for the cache). The worker's memory stays within the cache's budget plus a margin, and the
/// value that every tenth request uses is compiled once.
#[test]
fn http_matches_cache_is_bounded_in_bytes_and_keeps_the_hot_value() {
    const BUDGET_MIB: u64 = 4;
    const MARGIN_MIB: u64 = 6;
    let body = format!(
        r#"
        http_matches_var_cache {BUDGET_MIB}m;
        http_matches_var_max_size 9k;
        server {{
          listen 127.0.0.1:{{PORT}};
          large_client_header_buffers 4 32k;
          location /t/ {{ internal; return 200 "$uri\n"; }}
          location = /v {{ set $http_matches $http_x_list; http_matches; }}
        }}"#
    );
    let n = Nginx::start("cache-bytes", &body, &[]);
    let hot = value("hot", 8 * 1024, 10);
    let send = |v: &str| n.get("/v", &[("x-list", v)]);
    assert_eq!(send(&hot).body, "/t/hot\n");
    let pid = worker_pid(&n);
    let before = rss_kib(pid);
    for i in 0..10_000 {
        let (v, want) = if i % 10 == 0 {
            (hot.clone(), "/t/hot\n".to_owned())
        } else {
            let name = format!("v{i}");
            (value(&name, 8 * 1024, 10), format!("/t/{name}\n"))
        };
        let r = send(&v);
        assert_eq!((r.status, r.body.as_str()), (200, want.as_str()), "request {i}");
    }
    let after = rss_kib(pid);
    let log = n.error_log();
    let compiled: Vec<&str> =
        log.lines().filter(|l| l.contains("compiled a $http_matches value")).collect();
    // 9,000 cold values + the hot one, each compiled once: none was served from a cache that
    // was emptied, and the hot value never had to be compiled again.
    assert_eq!(compiled.len(), 9_001, "compile lines");
    let hot_print = compiled[0].split("fingerprint ").nth(1).and_then(|s| s.get(..16)).unwrap();
    let hot_compiles = compiled.iter().filter(|l| l.contains(hot_print)).count();
    assert_eq!(hot_compiles, 1, "the hot value was compiled again");
    assert!(compiled.iter().any(|l| !l.contains(" 0 evicted")), "nothing was ever evicted");
    let grew = after.saturating_sub(before);
    eprintln!("worker RSS {before} -> {after} KiB (+{grew} KiB), budget {BUDGET_MIB} MiB");
    assert!(grew < (BUDGET_MIB + MARGIN_MIB) * 1024, "RSS grew {grew} KiB");
    assert!(worker_pid(&n) == pid, "the worker was replaced");
    n.finish();
}

#[test]
fn http_matches_longer_than_the_maximum_is_refused() {
    let body = r#"
        http_matches_var_max_size 1k;
        server {
          listen 127.0.0.1:{PORT};
          large_client_header_buffers 4 32k;
          location /t/ { internal; return 200 "$uri\n"; }
          location = /v { set $http_matches $http_x_list; http_matches; }
        }"#;
    let n = Nginx::start("var-max", body, &[]);
    assert_eq!(n.get("/v", &[("x-list", &value("small", 900, 1))]).body, "/t/small\n");
    let big = value("big", 2000, 1);
    assert_eq!(n.get("/v", &[("x-list", &big)]).status, 500);
    let log = n.error_log();
    assert!(logged(&log, "error", "more than http_matches_var_max_size (1024); refused"), "{log}");
    n.finish();
}

#[test]
fn client_bytes_in_log_lines_are_escaped_and_cut() {
    let body = r#"
        http_matches_load m.json;
        server {
          listen 127.0.0.1:{PORT};
          location = /k { set $match_key $http_x_key; http_matches; }
        }"#;
    let n =
        Nginx::start("escape", body, &[("m.json", r#"{"k":[{"any":true,"redirectPath":"/a"}]}"#)]);
    let key = format!("evil\x1b[31m\\{}", "z".repeat(500));
    let r = n.raw(format!("GET /k HTTP/1.0\r\nx-key: {key}\r\n\r\n").as_bytes()).unwrap();
    assert_eq!(r.status, 500);
    let log = n.error_log();
    let line = log.lines().find(|l| l.contains("is not defined in")).expect("the 500's line");
    assert!(line.contains(r#"the key "evil\x1b[31m\\zz"#), "{line}");
    assert!(line.contains("...(510 bytes)"), "{line}");
    assert!(!line.contains('\x1b'), "{line}");
    n.finish();
}

/// `$match_key` defined by `map` (and `geo`), not only by `set`.
#[test]
fn match_key_from_map_and_geo() {
    let json = r#"{"k":[{"any":true,"redirectPath":"/t/k"}],"k2":[{"any":true,"redirectPath":"/t/k2"}],
        "local":[{"any":true,"redirectPath":"/t/local"}]}"#;
    let body = r#"
        http_matches_load m.json;
        map $http_x_list $match_key { default k; other k2; }
        geo $geo_key { default none; 127.0.0.0/8 local; }
        server {
          listen 127.0.0.1:{PORT};
          location /t/ { internal; return 200 "$uri\n"; }
          location = /m { http_matches; }
          location = /g { set $match_key $geo_key; http_matches; }
        }"#;
    let n = Nginx::start("map-key", body, &[("m.json", json)]);
    assert_eq!(n.get("/m", &[]).body, "/t/k\n");
    assert_eq!(n.get("/m", &[("x-list", "other")]).body, "/t/k2\n");
    assert_eq!(n.get("/m", &[("x-list", "else")]).body, "/t/k\n");
    assert_eq!(n.get("/g", &[]).body, "/t/local\n");
    n.finish();
}

#[test]
fn nginx_t_names_a_missing_named_location() {
    let file = r#"{"k":[{"headers":["x:Exact:1"],"redirectPath":"@nowhere"},{"any":true,"redirectPath":"@here"}]}"#;
    let inline = r#"[{"headers":["y:Exact:1"],"redirectPath":"@elsewhere"},{"any":true,"redirectPath":"@here"}]"#;
    let body = format!(
        r#"
        http_matches_load m.json;
        server {{
          listen 127.0.0.1:{{PORT}};
          location / {{ http_matches '{inline}'; }}
          location @here {{ return 200; }}
        }}
        server {{
          listen 127.0.0.1:{{PORT}};
          server_name other;
          location @elsewhere {{ return 200; }}
        }}"#
    );
    let p = Prefix::new("t-named", &body, &[("m.json", file)]);
    let (ok, out) = p.test();
    assert!(ok, "{out}");
    assert!(
        logged(
            &out,
            "warn",
            r#"$["k"][0]: redirectPath "@nowhere" names a location that no server defines"#
        ),
        "{out}"
    );
    // Named locations are per server: another server's @elsewhere does not count.
    assert!(
        logged(
            &out,
            "warn",
            r#"$[0]: redirectPath "@elsewhere" names a location that this server does not define"#
        ),
        "{out}"
    );
    assert!(!out.contains("@here"), "{out}");

    p.write_conf(&format!("http_matches_strict on;\n{body}"));
    let (ok, out) = p.test();
    assert!(!ok, "{out}");
    assert!(
        logged(&out, "emerg", r#""@nowhere" names a location that no server defines"#),
        "{out}"
    );
}

/// A subrequest through an `http_matches` location (here a mirror) shares its parent's
/// variables; it must not replace what the main request chose.
#[test]
fn a_subrequest_does_not_overwrite_the_main_requests_choice() {
    let body = r#"
        log_format choice "$uri $matches_redirect $matches_entry";
        server {
          listen 127.0.0.1:{PORT};
          access_log logs/choice.log choice;
          location /t/ { internal; return 200 "$uri\n"; }
          location = /main {
            mirror /mirrored;
            http_matches '[{"headers":["x:Exact:1"],"redirectPath":"/t/no"},{"any":true,"redirectPath":"/t/main"}]';
          }
          location = /mirrored {
            http_matches '[{"any":true,"redirectPath":"/t/sub"}]';
          }
        }"#;
    let n = Nginx::start("subrequest", body, &[]);
    assert_eq!(n.get("/main", &[]).body, "/t/main\n");
    let path = n.prefix.dir.join("logs/choice.log");
    let log = common::wait_for("logs/choice.log", || {
        Some(std::fs::read_to_string(&path).unwrap_or_default()).filter(|l| l.ends_with('\n'))
    });
    assert_eq!(log.trim(), "/t/main /t/main 1", "{log}");
    n.finish();
}

/// Issue #46: a `matches.json` of one list of 10,000 NGF-shaped entries (a regex and an exact
/// header, a param, a method each: ~1.35 MB) loads under the default `http_matches_max_memory`
/// (128 MiB) and routes a request to its last entry. Before, the list's estimate (192 bytes
/// per byte of JSON, serde_json's tree) was over the limit: `nginx` refused the file.
#[test]
fn a_list_of_10000_entries_loads_under_the_default_memory() {
    let entries: Vec<String> = (0..10_000)
        .map(|i| {
            format!(
                r#"{{"headers":["x-v:RegularExpression:^v{i}\\.[0-9]+$","x-t:Exact:t{i}"],"params":["q=Exact={i}"],"method":"GET","redirectPath":"/t/p{i}"}}"#
            )
        })
        .collect();
    let json = format!(r#"{{"k":[{}]}}"#, entries.join(","));
    assert!(json.len() > 1_300_000, "{}", json.len());
    let body = r#"
        http_matches_load m.json;
        server {
          listen 127.0.0.1:{PORT};
          location /t/ { internal; return 200 "$uri\n"; }
          location = /m { set $match_key k; http_matches; }
        }"#;
    let n = Nginx::start("ten-thousand", body, &[("m.json", &json)]);
    let r = n.get("/m?q=9999", &[("x-v", "v9999.1"), ("x-t", "t9999")]);
    assert_eq!((r.status, r.body.as_str()), (200, "/t/p9999\n"));
    n.finish();
}
