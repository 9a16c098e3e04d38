//! Panic containment: with a module built `--features panic-test` (NGX_MATCHES_PANIC_MODULE,
//! set by scripts/test.sh), a panic inside the handler answers 500 with an [alert] line, and
//! the same worker goes on serving; one in init_upstream fails `nginx -t` with an [emerg]. Ignored by default, so a run without that module reports
//! the test as ignored rather than passed; scripts/test.sh runs it with `--ignored`, and it
//! fails when asked to run without the module.

mod common;

use common::{Nginx, Prefix};

#[test]
#[ignore = "needs NGX_MATCHES_PANIC_MODULE, a module built --features panic-test (scripts/test.sh runs it)"]
fn a_panic_is_a_500_and_the_worker_lives() {
    let module = std::env::var_os("NGX_MATCHES_PANIC_MODULE").expect(
        "NGX_MATCHES_PANIC_MODULE: the path of a module built --features panic-test \
         (see scripts/test.sh)",
    );
    // The harness reads the module path from this variable.
    // SAFETY: this test binary holds one test, so no other thread reads or writes the
    // environment while it is changed.
    unsafe { std::env::set_var("NGX_MATCHES_MODULE", &module) };
    let body = r#"
        server {
          listen 127.0.0.1:{PORT};
          location /t/ { internal; return 200 "ok\n"; }
          location = /p { http_matches '[{"any":true,"redirectPath":"/t/x"}]'; }
          location = /epp {
            set $epp_internal_path /t/epp; set $epp_host h; set $epp_port 1;
            http_matches_epp http://127.0.0.1:1;
          }
        }"#;
    // A panic in a configuration callback (init_upstream) fails `nginx -t` with an [emerg]
    // naming the configuration's file:line.
    let upstream = "upstream panic_test { http_matches_epp_endpoints; server 127.0.0.1:1; }";
    let (ok, out) = Prefix::new("panic-conf", upstream, &[]).test();
    assert!(!ok, "{out}");
    let emerg = "[emerg] http_matches: internal error (panic: panic-test: init_upstream of the \
                 upstream named panic_test, at src/epp/endpoints.rs:";
    let line = out.lines().find(|l| l.contains(emerg)).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains(") in ") && line.contains("nginx.conf:"), "{line}");
    let p = Prefix::new("panic", body, &[]);
    let n: Nginx = p.start();
    assert_eq!(n.get("/p", &[]).body, "ok\n");
    let pid_before = worker_pids(&n);
    for _ in 0..3 {
        let r = n.get("/p", &[("X-Matches-Test-Panic", "1")]);
        assert_eq!(r.status, 500, "{r:?}");
    }
    assert_eq!(n.get("/p", &[]).body, "ok\n");
    // http_matches_epp: a panic in the callback that resumes the request after the call
    // (nothing refuses port 1 faster: the call fails, then the panic).
    let r = n.get("/epp", &[("X-Matches-Test-Panic", "1")]);
    assert_eq!(r.status, 500, "{r:?}");
    assert_eq!(n.get("/epp", &[]).body, "ok\n");
    assert_eq!(worker_pids(&n), pid_before, "the worker was replaced");
    let log = n.error_log();
    assert_eq!(log.matches("[alert]").count(), 4, "{log}");
    assert!(
        log.contains(
            "http_matches: internal error (panic: panic-test: the request asked for a panic \
             after the endpoint picker call, at src/epp/flow.rs:"
        ),
        "{log}"
    );
    assert!(
        log.contains(
            "http_matches: internal error (panic: panic-test: the request asked for a panic, \
             at src/handler.rs:"
        ),
        "{log}"
    );
    // Logged once, through NGINX: not also by Rust's default hook (NGINX points stderr at the
    // error log).
    assert!(!log.contains("panicked at"), "{log}");
    assert!(!log.contains("exited on signal"), "{log}");
}

/// The worker's pid, from the error log lines of its requests ("PID#TID: *N").
fn worker_pids(n: &Nginx) -> Vec<String> {
    let mut pids: Vec<String> = n
        .error_log()
        .lines()
        .filter(|l| l.contains("start worker process"))
        .filter_map(|l| l.rsplit(' ').next().map(str::to_owned))
        .collect();
    pids.sort();
    pids
}
