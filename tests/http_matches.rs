//! `http_matches` in a real NGINX: every carrier (inline, `http_matches_load` + `$match_key`,
//! `$http_matches`) routes the same requests the same way; errors, 404s, args, `nginx -t`
//! texts, and reloads.

mod common;

use common::{Headers, Nginx, Prefix, Resp};

/// The list every carrier serves. Anchors use `(?!.)` rather than `$`, which `set` would read
/// as a variable.
const L: &str = r#"[{"method":"POST","redirectPath":"/t/post"},
 {"headers":["x-exact:Exact:v2"],"redirectPath":"/t/hexact"},
 {"headers":["x-re:RegularExpression:^ab+c(?!.)"],"redirectPath":"/t/hre"},
 {"params":["p=Exact=a b/c"],"redirectPath":"/t/pexact"},
 {"params":["pr=RegularExpression=^v[0-9]+(?!.)"],"redirectPath":"/t/pre"},
 {"method":"GET","headers":["x-and:Exact:1"],"params":["and=Exact=1"],"redirectPath":"/t/and"},
 {"headers":["x-named:Exact:1"],"redirectPath":"@named"}]"#;
/// Entry 1 is malformed: reached only when entry 0 fails.
const BAD: &str = r#"[{"headers":["x-first:Exact:1"],"redirectPath":"/t/first"},
 {"headers":["x:Bogus:1"],"redirectPath":"/t/bad"},{"any":true,"redirectPath":"/t/any"}]"#;
const ANY: &str =
    r#"[{"headers":["x:Exact:1"],"redirectPath":"/t/x"},{"any":true,"redirectPath":"/t/any"}]"#;

const CARRIERS: [&str; 3] = ["inline", "key", "var"];

fn one_line(s: &str) -> String {
    s.replace('\n', "")
}

fn server() -> Nginx {
    let mut locations = String::new();
    for (name, list) in [("l", L), ("bad", BAD), ("any", ANY)] {
        let list = one_line(list);
        locations.push_str(&format!(
            "location = /inline/{name} {{ http_matches '{list}'; }}\n\
             location = /key/{name} {{ set $match_key {name}; http_matches; }}\n\
             location = /var/{name} {{ set $http_matches '{list}'; http_matches; }}\n"
        ));
    }
    let body = format!(
        "http_matches_load matches.json;
         server {{
           listen 127.0.0.1:{{PORT}};
           error_page 404 /custom404;
           location = /custom404 {{ internal; return 404 \"custom-404\\n\"; }}
           location /t/ {{ internal; return 200 \"uri=$uri args=$args entry=$matches_entry redirect=$matches_redirect\\n\"; }}
           location @named {{ return 200 \"named uri=$uri args=$args entry=$matches_entry\\n\"; }}
           location = /nolist {{ http_matches; }}
           {locations}
         }}"
    );
    let json =
        format!(r#"{{"l":{},"bad":{},"any":{}}}"#, one_line(L), one_line(BAD), one_line(ANY));
    Nginx::start("carriers", &body, &[("matches.json", &json)])
}

/// Checks one request on one carrier. `want`: "404" (the custom error page), "500", or the
/// internal URI that must answer, with the client's query string echoed byte for byte.
fn check(
    n: &Nginx,
    carrier: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    want: &str,
) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let full = format!("/{carrier}/{}", path.trim_start_matches('/'));
    let full = if target.contains('?') { format!("{full}?{query}") } else { full };
    let r: Resp = n.req(method, &full, headers);
    let what = format!("{carrier}: {method} {full} {headers:?}");
    match want {
        "404" => {
            assert_eq!(r.status, 404, "{what}: {r:?}");
            if method != "HEAD" {
                assert_eq!(r.body, "custom-404\n", "{what}: error_page not honoured");
            }
        }
        "500" => assert_eq!(r.status, 500, "{what}: {r:?}"),
        uri => {
            assert_eq!(r.status, 200, "{what}: {r:?}");
            if method != "HEAD" {
                // A named location keeps the request's own URI.
                let want_prefix = if uri.starts_with('@') {
                    format!("named uri=/{carrier}/{path} args={query} ")
                } else {
                    format!("uri={uri} args={query} ")
                };
                assert!(
                    r.body.starts_with(&want_prefix),
                    "{what}: want {want_prefix:?}, got {:?}",
                    r.body
                );
            }
        }
    }
}

#[test]
fn every_carrier_routes_alike() {
    let n = server();
    let rows: &[(&str, &str, Headers, &str)] = &[
        // method, first entry wins even when later entries match too
        ("POST", "l", &[("x-exact", "v2")], "/t/post"),
        // exact header, case-insensitive name, case-sensitive value
        ("GET", "l", &[("x-exact", "v2")], "/t/hexact"),
        ("GET", "l", &[("X-EXACT", "v2")], "/t/hexact"),
        ("GET", "l", &[("x-exact", "V2")], "404"),
        // repeated header lines: any line can match
        ("GET", "l", &[("x-exact", "v1"), ("x-exact", "v2")], "/t/hexact"),
        // comma lists, with and without spaces
        ("GET", "l", &[("x-exact", "v1, v2")], "/t/hexact"),
        ("GET", "l", &[("x-exact", "v1,v2,v3")], "/t/hexact"),
        // regex header: unanchored search over lines and elements
        ("GET", "l", &[("x-re", "abbbc")], "/t/hre"),
        ("GET", "l", &[("x-re", "zz, abc")], "/t/hre"),
        ("GET", "l", &[("x-re", "q"), ("x-re", "abc")], "/t/hre"),
        ("GET", "l", &[("x-re", "abcd")], "404"),
        // first-match order
        ("GET", "l", &[("x-re", "abc"), ("x-exact", "v2")], "/t/hexact"),
        // exact params: decoded (+, %XX), first occurrence, query string passed on untouched
        ("GET", "l?p=a+b%2Fc", &[], "/t/pexact"),
        ("GET", "l?x=%zz&p=a%20b/c&&y=%7e;z", &[], "/t/pexact"),
        ("GET", "l?p=nope&p=a+b/c", &[], "404"),
        ("GET", "l?P=a+b/c", &[], "404"),
        // regex params
        ("GET", "l?pr=v12", &[], "/t/pre"),
        ("GET", "l?pr=v%31%32&pr=x", &[], "/t/pre"),
        ("GET", "l?pr=v12x", &[], "404"),
        // method + header + param together; HEAD is not GET
        ("GET", "l?and=1", &[("x-and", "1")], "/t/and"),
        ("HEAD", "l?and=1", &[("x-and", "1")], "404"),
        ("GET", "l?and=2", &[("x-and", "1")], "404"),
        // named location
        ("GET", "l?q=1", &[("x-named", "1")], "@named"),
        // nothing matches: 404 through error_page
        ("GET", "l", &[], "404"),
        // any
        ("GET", "any", &[], "/t/any"),
        ("GET", "any?z=1", &[("x", "1")], "/t/x"),
        // the winner stops evaluation: the malformed entry after it is never reached...
        ("GET", "bad", &[("x-first", "1")], "/t/first"),
        // ...but reached before any winner it is a 500
        ("GET", "bad", &[], "500"),
    ];
    for carrier in CARRIERS {
        for (method, target, headers, want) in rows {
            check(&n, carrier, method, target, headers, want);
        }
    }
    // One [error] line per 500, naming the list and the entry.
    let log = n.error_log();
    let reason = "entry 1 is invalid: invalid header match \"x:Bogus:1\": unknown match type \
                  \"Bogus\" (expected Exact or RegularExpression)";
    let matches_json = n.prefix.dir.join("conf/matches.json");
    for source in [
        "inline list".to_owned(),
        format!("list \"bad\" of \"{}\"", matches_json.display()),
        "list in $http_matches".to_owned(),
    ] {
        let want = format!("http_matches: {source}: {reason}, client: 127.0.0.1");
        assert_eq!(log.matches(&want).count(), 1, "{want}\n{log}");
        assert!(log.lines().any(|l| l.contains("[error] ") && l.contains(&want)));
    }
    n.finish();
}

#[test]
fn args_reach_the_internal_location_byte_for_byte() {
    let n = server();
    let query = "b=2&a=1&a=3&x=hello+world&y=%7e&2=n&p=a+b/c&z=%zz;w&&e=&%FF=%00";
    for carrier in CARRIERS {
        let r = n.get(&format!("/{carrier}/l?{query}"), &[]);
        assert_eq!(r.status, 200, "{r:?}");
        assert!(
            r.body.starts_with(&format!("uri=/t/pexact args={query} entry=3 redirect=/t/pexact")),
            "{carrier}: {}",
            r.body
        );
    }
    n.finish();
}

#[test]
fn client_matches_header_is_never_a_list() {
    let n = server();
    let list = r#"[{"any":true,"redirectPath":"/t/any"}]"#;
    let r = n.get("/nolist", &[("Matches", list)]);
    assert_eq!(r.status, 500, "{r:?}");
    assert!(
        n.error_log().contains("http_matches: no match list for this request"),
        "{}",
        n.error_log()
    );
    n.finish();
}

#[test]
fn client_header_is_refused_even_when_evaluated_before_us() {
    // Something in the location reads $http_matches before the content phase (here `if`),
    // so NGINX caches the client's header in it; the module must still refuse it.
    let body = r#"
        server {
          listen 127.0.0.1:{PORT};
          location /t/ { internal; return 200 "uri=$uri\n"; }
          location = /set { set $http_matches '[{"any":true,"redirectPath":"/t/set"}]'; http_matches; }
          location = /peek { if ($http_matches) { } http_matches; }
        }"#;
    let n = Nginx::start("peek", body, &[]);
    let list = r#"[{"any":true,"redirectPath":"/t/evil"}]"#;
    let r = n.get("/peek", &[("Matches", list)]);
    assert_eq!(r.status, 500, "{r:?}");
    assert!(
        n.error_log().contains("holds the client's \"Matches\" request header"),
        "{}",
        n.error_log()
    );
    assert_eq!(n.get("/set", &[("Matches", list)]).body, "uri=/t/set\n");
    n.finish();
}

#[test]
fn missing_data_is_a_500_naming_what_is_missing() {
    let body = r#"
        http_matches_load matches.json;
        server {
          listen 127.0.0.1:{PORT};
          location /t/ { internal; return 200 "uri=$uri\n"; }
          location = /unknown { set $match_key nope; http_matches; }
          location = /empty { set $match_key ""; http_matches; }
          location = /noredirect { http_matches '[{"method":"GET"}]'; }
        }"#;
    let n = Nginx::start(
        "missing",
        body,
        &[("matches.json", r#"{"k":[{"any":true,"redirectPath":"/t/k"}]}"#)],
    );
    assert_eq!(n.get("/unknown", &[]).status, 500);
    assert_eq!(n.get("/empty", &[]).status, 500);
    assert_eq!(n.get("/noredirect", &[]).status, 500);
    let log = n.error_log();
    assert!(log.contains("the key \"nope\" ($match_key) is not defined in"), "{log}");
    assert!(
        log.contains(
            "no inline list, $match_key is not set or empty here, and $http_matches is not set here"
        ),
        "{log}"
    );
    assert!(
        log.contains("http_matches: inline list: entry 0 matched but has no redirectPath"),
        "{log}"
    );
    n.finish();
}

#[test]
fn debug_log_names_the_decision() {
    let body = r#"
        error_log logs/debug.log debug;
        server {
          listen 127.0.0.1:{PORT};
          location /t/ { internal; return 200 "uri=$uri\n"; }
          location = /d { http_matches '[{"headers":["v:v2"],"redirectPath":"/t/v2"},{"method":"PUT","redirectPath":"/t/put"}]'; }
        }"#;
    let n = Nginx::start("debug", body, &[]);
    assert_eq!(n.get("/d", &[("v", "v2")]).status, 200);
    assert_eq!(n.get("/d", &[]).status, 404);
    let debug = std::fs::read_to_string(n.prefix.dir.join("logs/debug.log")).unwrap_or_default();
    if common::nginx_has_debug() {
        assert!(
            debug.contains("http_matches: inline list: entry 0 of 2 wins, redirect to \"/t/v2\""),
            "{debug}"
        );
        assert!(
            debug.contains("http_matches: inline list: none of 2 entries matches, 404"),
            "{debug}"
        );
    } else {
        eprintln!("NGINX built without --with-debug: no debug lines to check");
    }
    n.finish();
}

#[test]
fn regex_that_gives_up_is_no_match_with_a_warning() {
    let body = r#"
        server {
          listen 127.0.0.1:{PORT};
          large_client_header_buffers 4 80k;
          location /t/ { internal; return 200 "uri=$uri\n"; }
          location = /re { http_matches '[{"headers":["x:RegularExpression:(a+)+$"],"redirectPath":"/t/slow"},{"any":true,"redirectPath":"/t/any"}]'; }
        }"#;
    let n = Nginx::start("catastrophic", body, &[]);
    let value = "a".repeat(64 * 1024) + "!";
    let started = std::time::Instant::now();
    let r = n.get("/re", &[("x", &value)]);
    eprintln!("catastrophic regex request answered in {:?}", started.elapsed());
    assert_eq!(r.body, "uri=/t/any\n", "{r:?}");
    assert!(n.error_log().contains("[warn]"), "{}", n.error_log());
    assert!(
        n.error_log().contains("regular expression \"(a+)+$\" of entry 0 gave up"),
        "{}",
        n.error_log()
    );
    n.finish();
}

// ---- nginx -t ----------------------------------------------------------------------------

/// Whether a line of `out` is logged at `level` and contains `text` (Debian's NGINX logs
/// `nginx -t` messages to stderr in the error-log format, with a pid after the level).
fn logged(out: &str, level: &str, text: &str) -> bool {
    out.lines().any(|l| l.contains(&format!("[{level}] ")) && l.contains(text))
}

fn config_test(name: &str, http_body: &str, files: &[(&str, &str)]) -> (bool, String, Prefix) {
    let p = Prefix::new(name, http_body, files);
    let (ok, out) = p.test();
    (ok, out, p)
}

/// Line of the first line containing `needle` in the generated nginx.conf (1-based).
fn line_of(p: &Prefix, needle: &str) -> usize {
    let conf = std::fs::read_to_string(p.dir.join("conf/nginx.conf")).unwrap_or_default();
    conf.lines().position(|l| l.contains(needle)).map(|i| i + 1).expect("needle in conf")
}

/// Every size directive reads sizes with NGINX's own parser (`ngx_parse_size`: k and m, no g),
/// so one value means the same thing, or fails the same way, whichever directive it is given to.
#[test]
fn nginx_t_one_size_grammar() {
    let directives = [
        "http_matches_max_memory",
        "http_matches_regex_cache",
        "http_matches_var_max_size",
        "http_matches_var_cache",
    ];
    for (i, d) in directives.iter().enumerate() {
        let (ok, out, _) = config_test(&format!("t-size-ok{i}"), &format!("{d} 64M;"), &[]);
        assert!(ok, "{d} 64M: {out}");
        let (ok, out, _) = config_test(&format!("t-size-g{i}"), &format!("{d} 1g;"), &[]);
        assert!(!ok && logged(&out, "emerg", d), "{d} 1g: {out}");
    }
}

#[test]
fn nginx_t_missing_file() {
    let (ok, out, p) = config_test("t-missing", "http_matches_load nope.json;", &[]);
    assert!(!ok);
    let conf = p.dir.join("conf");
    let want = format!(
        "http_matches: cannot read \"{}/nope.json\": No such file or directory (os error 2) in {}/nginx.conf:{}",
        conf.display(),
        conf.display(),
        line_of(&p, "http_matches_load")
    );
    assert!(logged(&out, "emerg", &want), "want {want}\n{out}");
}

#[test]
fn nginx_t_invalid_json_with_line_and_column() {
    let (ok, out, p) = config_test(
        "t-json",
        "http_matches_load m.json;",
        &[("m.json", "{\"k\": [\n  {\"any\": true},\n]}")],
    );
    assert!(!ok);
    let want = format!(
        "http_matches: invalid \"{}/conf/m.json\": trailing comma at line 3 column 1 in ",
        p.dir.display()
    );
    assert!(logged(&out, "emerg", &want), "{out}");
}

#[test]
fn nginx_t_wrong_top_level_shape() {
    let (ok, out, _) =
        config_test("t-shape", "http_matches_load m.json;", &[("m.json", r#"[{"any":true}]"#)]);
    assert!(!ok);
    assert!(
        out.contains("expected a JSON object of match key -> match list at $ at line 1 column 1"),
        "{out}"
    );
    let (ok, out, _) = config_test(
        "t-shape2",
        "http_matches_load m.json;",
        &[("m.json", r#"{"1_0": {"any":true}}"#)],
    );
    assert!(!ok);
    assert!(
        out.contains(
            "invalid type: map, expected an array of match entries at $[\"1_0\"] at line 1 column 9"
        ),
        "{out}"
    );
}

#[test]
fn nginx_t_bad_regex_warns_by_default_and_fails_when_strict() {
    let json = r#"{"k":[{"headers":["x:RegularExpression:(["],"redirectPath":"/a"}]}"#;
    let (ok, out, p) = config_test("t-regex", "http_matches_load m.json;", &[("m.json", json)]);
    assert!(ok, "{out}");
    let at = format!("{}/conf/nginx.conf:{}", p.dir.display(), line_of(&p, "http_matches_load"));
    assert!(
        logged(
            &out,
            "warn",
            "http_matches: $[\"k\"][0]: invalid regular expression \"([\" in header match \"x:RegularExpression:([\": missing terminating ] for character class at offset 2;"
        ),
        "{out}"
    );
    assert!(
        out.contains(&format!("the entry answers 500 when a request reaches it in {at}")),
        "{out}"
    );

    let (ok, out, _) = config_test(
        "t-regex-strict",
        "http_matches_strict on; http_matches_load m.json;",
        &[("m.json", json)],
    );
    assert!(!ok, "{out}");
    assert!(
        logged(&out, "emerg", "http_matches: $[\"k\"][0]: invalid regular expression \"([\""),
        "{out}"
    );
    assert!(out.contains("(http_matches_strict is on) in "), "{out}");

    // Inline lists follow the strictness of their location.
    let inline = r#"server { listen 127.0.0.1:{PORT}; location / { http_matches_strict on; http_matches '[{"headers":["x:RegularExpression:(["],"redirectPath":"/a"}]'; } }"#;
    let (ok, out, _) = config_test("t-inline-strict", inline, &[]);
    assert!(!ok, "{out}");
    assert!(logged(&out, "emerg", "http_matches: $[0]: invalid regular expression"), "{out}");
}

#[test]
fn nginx_t_inline_json_error_names_file_and_line() {
    let body =
        "server { listen 127.0.0.1:{PORT};\nlocation / {\nhttp_matches '[{\"any\":true},]';\n} }";
    let (ok, out, p) = config_test("t-inline", body, &[]);
    assert!(!ok);
    let want = format!(
        "http_matches: invalid inline match list: trailing comma at line 1 column 15 in {}/conf/nginx.conf:{}",
        p.dir.display(),
        line_of(&p, "http_matches '")
    );
    assert!(logged(&out, "emerg", &want), "want {want}\n{out}");
    let body = "server { listen 127.0.0.1:{PORT}; location / { http_matches '[]' syntax=bogus; } }";
    let (ok, out, _) = config_test("t-syntax", body, &[]);
    assert!(!ok);
    assert!(out.contains("invalid \"syntax=bogus\": use auto, typed or untyped"), "{out}");
    let body = "server { listen 127.0.0.1:{PORT}; location / { http_matches; http_matches; } }";
    let (ok, out, _) = config_test("t-dup", body, &[]);
    assert!(!ok);
    assert!(out.contains("\"http_matches\" directive is duplicate"), "{out}");
}

/// Every directive of the module given twice is refused as NGINX refuses its own: `"NAME"
/// directive is duplicate in FILE:LINE`, the line of the second.
#[test]
fn nginx_t_every_directive_given_twice_is_duplicate_at_its_line() {
    let file = ("matches.json", r#"{"k":[{"any":true,"redirectPath":"/a"}]}"#);
    let cases = [
        ("http", "http_matches_load matches.json"),
        ("location", "http_matches"),
        ("location", "http_matches_strict on"),
        ("server", "http_matches_fallback \"\""),
        ("location", "http_matches_regex_budget 100"),
        ("http", "http_matches_max_memory 64m"),
        ("http", "http_matches_regex_cache 1m"),
        ("http", "http_matches_var_max_size 16k"),
        ("http", "http_matches_var_cache 1m"),
        ("location", "http_matches_epp"),
        ("upstream", "http_matches_epp_endpoints"),
        ("http", "http_matches_reload_report logs/r.report 1"),
    ];
    for (level, d) in cases {
        let twice = format!("{d};\n{d}; # second\n");
        let body = match level {
            "http" => format!("{twice}server {{ listen 127.0.0.1:{{PORT}}; }}"),
            "server" => format!("server {{ listen 127.0.0.1:{{PORT}};\n{twice}}}"),
            "location" => {
                format!("server {{ listen 127.0.0.1:{{PORT}}; location / {{\n{twice}}} }}")
            }
            _ => format!(
                "upstream u {{ server 127.0.0.1:1;\n{twice}}}\nserver {{ listen 127.0.0.1:{{PORT}}; }}"
            ),
        };
        let (ok, out, p) = config_test("t-twice", &body, &[file]);
        let name = d.split(' ').next().unwrap_or_default();
        let want = format!(
            "\"{name}\" directive is duplicate in {}/conf/nginx.conf:{}",
            p.dir.display(),
            line_of(&p, "# second")
        );
        assert!(!ok && logged(&out, "emerg", &want), "{d}: want {want}\n{out}");
    }
}

// ---- reload ------------------------------------------------------------------------------

#[test]
fn reload_switches_routing_without_failing_a_request() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let body = r#"
        http_matches_load matches.json;
        server {
          listen 127.0.0.1:{PORT};
          location /t/ { internal; return 200 "$uri\n"; }
          location = /k { set $match_key k; http_matches; }
        }"#;
    let v1 = r#"{"k":[{"any":true,"redirectPath":"/t/old"}]}"#;
    let v2 = r#"{"k":[{"headers":["x:Exact:1"],"redirectPath":"/t/x"},{"any":true,"redirectPath":"/t/new"}]}"#;
    let n = Arc::new(Nginx::start("reload", body, &[("matches.json", v1)]));
    assert_eq!(n.get("/k", &[]).body, "/t/old\n");

    let stop = Arc::new(AtomicBool::new(false));
    let (old, new) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let client = {
        let (n, stop, old, new) = (n.clone(), stop.clone(), old.clone(), new.clone());
        std::thread::spawn(move || {
            let mut bad = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                match n.raw(b"GET /k HTTP/1.0\r\n\r\n") {
                    Ok(r) if r.status == 200 && r.body == "/t/old\n" => {
                        old.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(r) if r.status == 200 && r.body == "/t/new\n" => {
                        new.fetch_add(1, Ordering::Relaxed);
                    }
                    other => bad.push(format!("{other:?}")),
                }
            }
            bad
        })
    };
    // Synchronised by the client's answers, not by sleeping: the reload starts once the
    // client has had old answers, and the client stops once it has had new ones.
    let wait_for = |counter: &AtomicUsize, what: &str| {
        common::wait_until(format!("20 {what} answers"), || counter.load(Ordering::Relaxed) >= 20);
    };
    wait_for(&old, "old");
    n.prefix.write("matches.json", v2);
    let (ok, out) = n.signal("reload");
    assert!(ok, "{out}");
    common::wait_until("the new routing", || n.get("/k", &[]).body == "/t/new\n");
    wait_for(&new, "new");
    stop.store(true, Ordering::Relaxed);
    let bad = client.join().expect("client thread");
    let (seen_old, seen_new) = (old.load(Ordering::Relaxed), new.load(Ordering::Relaxed));
    eprintln!(
        "during reload: {seen_old} old answers, {seen_new} new answers, {} failures",
        bad.len()
    );
    assert!(bad.is_empty(), "failed requests during reload: {bad:?}");
    assert!(seen_old > 0 && seen_new > 0);
    // An old worker may still take a connection until it has closed its listening socket (it
    // drains after the new one starts): the new list's first entry answers once it has.
    common::wait_until("the old worker to stop answering", || {
        let body = n.get("/k", &[("x", "1")]).body;
        assert!(body == "/t/x\n" || body == "/t/old\n", "{body:?}: neither new nor draining");
        body == "/t/x\n"
    });

    // A broken file is refused by the reload; the running configuration keeps serving.
    n.prefix.write("matches.json", "{\"k\": [}");
    n.hup();
    n.wait_log("[emerg]", 1);
    assert!(n.error_log().contains("http_matches: invalid"), "{}", n.error_log());
    assert_eq!(n.get("/k", &[]).body, "/t/new\n");
    let n = Arc::try_unwrap(n).unwrap_or_else(|_| panic!("nginx still shared"));
    let log = n.error_log();
    assert!(!log.contains("exited on signal"), "{log}");
}

#[test]
fn the_version_is_logged_once_per_load_and_not_by_nginx_t() {
    let p = Prefix::new(
        "version",
        "server { listen 127.0.0.1:{PORT}; location / { return 204; } }",
        &[],
    );
    let (ok, text) = p.test();
    assert!(ok, "{text}");
    assert!(!text.contains("ngx_http_matches_module"), "{text}");
    let n = p.start();
    let want = format!("ngx_http_matches_module {} loaded", env!("CARGO_PKG_VERSION"));
    n.wait_log(&want, 1);
    n.hup();
    n.wait_log(&want, 2);
}

/// `$matches_entry` is the winner's index in decimal at every width: one digit, two (a
/// static of the module below 100) and three (formatted into the request's pool).
#[test]
fn matches_entry_is_the_winners_index_at_every_width() {
    let list: Vec<String> = (0..150)
        .map(|i| format!(r#"{{"headers":["x-n:Exact:{i}"],"redirectPath":"/t/{i}"}}"#))
        .collect();
    let body = r#"http_matches_load matches.json;
        server {
          listen 127.0.0.1:{PORT};
          location /t/ { internal; return 200 "$uri $matches_entry\n"; }
          location = /l { set $match_key k; http_matches; }
        }"#;
    let json = format!(r#"{{"k":[{}]}}"#, list.join(","));
    let n = Nginx::start("entry-width", body, &[("matches.json", &json)]);
    for i in [0, 9, 10, 99, 100, 149] {
        let r = n.get("/l", &[("x-n", &i.to_string())]);
        assert_eq!((r.status, r.body), (200, format!("/t/{i} {i}\n")), "{i}");
    }
}
