//! HTTP/2 against a real NGINX (h2c with prior knowledge, curl's nghttp2): HPACK references to
//! one long comma-list value, and `cookie` fields NGINX joins into one line. Each request's
//! work is read from `$http_matches_work` ("attempts/regex steps/units", counted, never timed)
//! and checked against the request's decoded bytes; the budget `[warn]` appears exactly when
//! the budget is spent.

mod common;

use std::process::Command;

use common::{Nginx, nginx_binary};

/// `attempts`, `regex_steps`, `units` from a body "URI work=A/S/U".
fn work(body: &str) -> (u64, u64, u64) {
    let w = body.split("work=").nth(1).unwrap_or_else(|| panic!("no work in {body:?}"));
    let n: Vec<u64> = w.trim().split('/').map(|x| x.parse().expect("a number")).collect();
    (n[0], n[1], n[2])
}

/// One HTTP/2 request with `headers` (each sent as its own field, in order); (body, version).
fn h2(n: &Nginx, path: &str, headers: &[(&str, &str)]) -> (String, String) {
    let mut c = Command::new("curl");
    c.args(["-s", "--http2-prior-knowledge", "-w", "\n%{http_version} %{http_code}"]);
    for (name, value) in headers {
        c.arg("-H").arg(format!("{name}: {value}"));
    }
    c.arg(format!("http://127.0.0.1:{}{path}", n.port()));
    let out = c.output().expect("run curl");
    assert!(out.status.success(), "curl: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, tail) = text.rsplit_once('\n').expect("curl's -w line");
    (body.to_owned(), tail.to_owned())
}

fn has_http2() -> bool {
    let out = Command::new(nginx_binary()).arg("-V").output().expect("nginx -V");
    String::from_utf8_lossy(&out.stderr).contains("--with-http_v2_module")
}

fn budget_warnings(log: &str) -> usize {
    log.lines()
        .filter(|l| l.contains("[warn]") && l.contains("regex budget of the request"))
        .count()
}

#[test]
fn hpack_references_and_joined_cookies_are_bounded_by_the_counted_work() {
    assert!(has_http2(), "the vendored NGINX is built without --with-http_v2_module");
    let comma = r#"[{"headers":["x-v:RegularExpression:^v[0-9]+$"],"redirectPath":"/t/v"},{"any":true,"redirectPath":"/t/any"}]"#;
    let cookie = r#"[{"headers":["cookie:RegularExpression:(^|; )sid=ok-[0-9]+(;|$)"],"redirectPath":"/t/sid"},{"any":true,"redirectPath":"/t/any"}]"#;
    // `http2 on` from NGINX 1.25.1; before, a `listen` parameter (Debian 12's 1.22).
    let (listen_h2, http2_on) =
        if common::nginx_version() >= (1, 25, 1) { ("", "http2 on;") } else { (" http2", "") };
    let body = format!(
        "server {{
           listen 127.0.0.1:{{PORT}}{listen_h2};
           {http2_on}
           large_client_header_buffers 8 16k;
           location /t/ {{ internal; return 200 \"$uri work=$http_matches_work\\n\"; }}
           location = /comma {{ http_matches '{comma}'; }}
           location = /comma-small {{ http_matches_regex_budget 1000; http_matches '{comma}'; }}
           location = /cookie {{ http_matches '{cookie}'; }}
           location = /cookie-small {{ http_matches_regex_budget 100; http_matches '{cookie}'; }}
         }}"
    );
    let n = Nginx::start("http2", &body, &[]);

    // 4,000 bytes of "va,va,...": under HPACK's 4,096-byte table with its name, so nghttp2
    // indexes it and the 6 later fields are references of a few bytes each.
    let va = vec!["va"; 1_333].join(",");
    assert!(va.len() < 4_000);
    let lines: Vec<(&str, &str)> = (0..7).map(|_| ("x-v", va.as_str())).collect();
    let decoded = 7 * (3 + va.len()) as u64;

    let (body, version) = h2(&n, "/comma", &lines);
    assert_eq!(version, "2 200", "{body}");
    assert!(body.starts_with("/t/any "), "{body}");
    let (attempts, steps, units) = work(&body);
    eprintln!("7 HPACK references: {decoded} decoded bytes, work {attempts}/{steps}/{units}");
    // One attempt for the line, a few for its first elements (remembered by address), then
    // the element "va" and the whole line are answered by their bytes: not 7 x 1,334.
    assert!(attempts <= 16, "attempts {attempts} ({body})");
    assert!(steps <= attempts * 64, "steps {steps} for {attempts} attempts");
    assert!(units <= 2 * decoded, "units {units} for {decoded} decoded bytes");
    assert_eq!(budget_warnings(&n.error_log()), 0, "{}", n.error_log());
    // Same request, same work (the regex cache across requests changes CPU, not the count).
    let (again, _) = h2(&n, "/comma", &lines);
    assert_eq!(work(&again), (attempts, steps, units));

    // A budget below the work: the regex conditions give up (the fallback answers), and one
    // [warn] says so with the request's work.
    let (body, _) = h2(&n, "/comma-small", &lines);
    assert!(body.starts_with("/t/any "), "{body}");
    let (_, _, small_units) = work(&body);
    assert!(small_units <= 1000 + 2 * decoded, "{small_units}");
    let log = n.error_log();
    assert_eq!(budget_warnings(&log), 1, "{log}");
    assert!(log.contains("was spent") && log.contains("work of the request: "), "{log}");
    // A matching element still routes while the budget lasts.
    let mut hit = lines.clone();
    hit.insert(0, ("x-v", "zz, v42"));
    let (body, _) = h2(&n, "/comma", &hit);
    assert!(body.starts_with("/t/v "), "{body}");

    // Three references to one 3.9 KB cookie: NGINX joins them with "; " into an 11.7 KB line.
    let crumb = format!("pad={}", "x".repeat(3_890));
    let cookies: Vec<(&str, &str)> = (0..3).map(|_| ("cookie", crumb.as_str())).collect();
    let decoded = 3 * (6 + crumb.len()) as u64;
    let (body, version) = h2(&n, "/cookie", &cookies);
    assert_eq!(version, "2 200", "{body}");
    assert!(body.starts_with("/t/any "), "{body}");
    let (attempts, steps, units) = work(&body);
    eprintln!("3 joined cookies: {decoded} decoded bytes, work {attempts}/{steps}/{units}");
    assert_eq!(attempts, 1, "one joined line, one attempt ({body})");
    assert!(units <= 2 * decoded + steps, "units {units}, steps {steps}, {decoded} bytes");
    assert!(steps > 0, "{body}");
    assert_eq!(budget_warnings(&n.error_log()), 1, "no new warning: {}", n.error_log());
    // The same cookie plus the one that matches: routed by the regex.
    let mut sid = cookies.clone();
    sid.push(("cookie", "sid=ok-17"));
    let (body, _) = h2(&n, "/cookie", &sid);
    assert!(body.starts_with("/t/sid "), "{body}");
    // Under a budget smaller than the units of scanning the joined line: the fallback, and a
    // warning.
    let (body, _) = h2(&n, "/cookie-small", &sid);
    assert!(body.starts_with("/t/any "), "{body}");
    assert_eq!(budget_warnings(&n.error_log()), 2, "{}", n.error_log());
    n.finish();
}
