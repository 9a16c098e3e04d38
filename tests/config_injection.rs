//! Manifests that try to write NGINX configuration of their own, through a configuration
//! written by httproute-nginx and a real NGINX: each gives a configuration that passes
//! `nginx -t` (the hostile route left out with a warning naming its field, or its bytes
//! written as data), still serves the other routes, and serves nothing injected (GET /pwned gets NGINX's 404, never a file). The writer is also
//! fed such bytes directly, past the manifest checks, so that it closes the class of bug
//! whatever validation lets through.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

use common::{Nginx, Prefix, free_port};
use httproute_nginx::BackendMap;

/// What a request for the injected location gets: NGINX's 404, not /etc/passwd.
fn assert_nothing_injected(n: &Nginx, what: &str) {
    for host in ["localhost", "a.test"] {
        let r = n
            .raw(format!("GET /pwned HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())
            .expect("request");
        assert_eq!(r.status, 404, "{what}: GET /pwned (Host {host}): {r:?}");
        assert!(!r.body.contains("root:"), "{what}: /etc/passwd served: {r:?}");
    }
}

/// A backend that answers every request with its request head as the body.
fn echo_backend() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            std::thread::spawn(move || answer(conn));
        }
    });
    port
}

fn answer(conn: TcpStream) {
    let mut r = BufReader::new(conn.try_clone().unwrap());
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let mut w = conn;
    let _ = write!(
        w,
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}",
        head.len()
    );
}

fn manifests(port: u16, hostile_rules: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: gw}}\nspec:\n  \
         gatewayClassName: nginx\n  listeners: [{{name: http, port: {port}, protocol: HTTP}}]\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: good}}\nspec:\n  \
         parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /ok}}}}]\n    \
         backendRefs: [{{name: echo, port: 80}}]\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: hostile}}\nspec:\n  \
         parentRefs: [{{name: gw}}]\n  rules:\n{hostile_rules}"
    )
}

fn backends(echo: u16) -> BackendMap {
    let mut m = BackendMap::new();
    m.insert("default/echo:80".into(), format!("127.0.0.1:{echo}"));
    m
}

/// Generates from `yaml` and starts NGINX on it after `nginx -t` passed: the NGINX, the
/// configuration text and the generator's warnings.
fn generate(name: &str, yaml: &str, port: u16, echo: u16) -> (Nginx, String, Vec<String>) {
    let src = Prefix::scratch(&format!("{name}-in"));
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("all.yaml"), yaml).unwrap();
    let (out, warnings) =
        httproute_nginx::generate(&[src], &backends(echo), &common::generator_options())
            .unwrap_or_else(|e| panic!("{name}: refused: {e}"));
    let (n, conf) = start(name, &out, port);
    (n, conf, warnings)
}

fn start(name: &str, out: &httproute_nginx::Output, port: u16) -> (Nginx, String) {
    let dir = Prefix::scratch(&format!("{name}-out"));
    httproute_nginx::write_dir(&dir, out).unwrap();
    let p = Prefix::existing(dir, "nginx.conf", port);
    let (ok, text) = p.test();
    assert!(ok, "{name}: nginx -t:\n{text}\n{}", out.nginx_conf);
    (p.start(), out.nginx_conf.clone())
}

fn assert_serves_the_good_route(n: &Nginx, what: &str) {
    let r = n.get("/ok/x", &[]);
    assert_eq!(r.status, 200, "{what}: {r:?}");
    assert!(r.body.starts_with("GET /ok/x HTTP/1.1\r\n"), "{what}: {r:?}");
}

#[test]
fn a_newline_in_a_rule_name_writes_no_configuration() {
    let echo = echo_backend();
    let port = free_port();
    let rules = "  - name: \"x\\nlocation = /pwned { alias /etc/passwd; }\\n# \"\n    \
                 matches: [{path: {type: PathPrefix, value: /h}}]\n    \
                 backendRefs: [{name: echo, port: 80}]\n";
    let (n, conf, warnings) = generate("rule-name", &manifests(port, rules), port, echo);
    // The hostile route is left out, its field named; the rest is served.
    let w = warnings.join("\n");
    assert!(w.contains("default/hostile") && w.contains("name"), "{w}");
    assert!(!conf.contains("/pwned"), "{conf}");
    assert_serves_the_good_route(&n, "rule name");
    assert_nothing_injected(&n, "rule name");
    n.finish();
}

#[test]
fn a_dollar_in_header_names_is_never_a_variable() {
    let echo = echo_backend();
    let port = free_port();
    let rules = "  - matches: [{path: {type: PathPrefix, value: /h}}]\n    filters:\n    \
                 - type: CORS\n      cors:\n        allowOrigins: [\"https://o.test\"]\n        \
                 allowMethods: [GET]\n        allowHeaders: [x-$tenant, $host]\n        \
                 exposeHeaders: [x-$tenant, $host]\n    \
                 - type: RequestHeaderModifier\n      requestHeaderModifier:\n        \
                 set: [{name: x-$tenant, value: t1}, {name: $host, value: h1}]\n    \
                 - type: ResponseHeaderModifier\n      responseHeaderModifier:\n        \
                 add: [{name: x-$tenant, value: $host}]\n    \
                 backendRefs: [{name: echo, port: 80}]\n";
    // `$` is a token character: the names are valid, and written as data.
    let (n, conf, warnings) = generate("dollar", &manifests(port, rules), port, echo);
    assert_eq!(warnings, Vec::<String>::new());
    assert_serves_the_good_route(&n, "dollar");
    // The request filter: the header names as written, the values not expanded.
    let r = n.get("/h", &[("Origin", "https://o.test")]);
    assert_eq!(r.status, 200, "{r:?}\n{conf}");
    assert!(r.body.contains("\r\nx-$tenant: t1\r\n"), "{r:?}\n{conf}");
    assert!(r.body.contains("\r\n$host: h1\r\n"), "{r:?}\n{conf}");
    // The response filter and CORS: `$host` stays `$host`, never the request's host.
    assert!(r.head.contains("\r\nx-$tenant: $host"), "{r:?}\n{conf}");
    assert!(r.head.contains("\r\nAccess-Control-Expose-Headers: x-$tenant, $host"), "{r:?}");
    let pre = n.req(
        "OPTIONS",
        "/h",
        &[("Origin", "https://o.test"), ("Access-Control-Request-Method", "GET")],
    );
    assert_eq!(pre.status, 204, "{pre:?}");
    assert!(pre.head.contains("\r\nAccess-Control-Allow-Headers: x-$tenant, $host"), "{pre:?}");
    assert!(!pre.head.contains("localhost"), "{pre:?}");
    assert_nothing_injected(&n, "dollar");
    n.finish();
}

/// Past the manifest checks: hostile bytes put straight into the plan, in every field the
/// writer takes from it. Control bytes are refused by the writer, naming the field; the rest
/// are written as data: `nginx -t` passes, the good route serves, nothing is injected.
#[test]
fn the_writer_closes_injection_whatever_validation_lets_through() {
    let echo = echo_backend();
    let port = free_port();
    let rules = "  - name: r\n    matches: [{path: {type: PathPrefix, value: /h}}]\n    filters:\n    \
                 - type: RequestHeaderModifier\n      requestHeaderModifier:\n        \
                 set: [{name: x-a, value: v}]\n        add: [{name: x-b, value: w}]\n    \
                 - type: ResponseHeaderModifier\n      responseHeaderModifier:\n        \
                 set: [{name: x-c, value: v}]\n    \
                 - type: CORS\n      cors:\n        allowOrigins: [\"https://o.test\"]\n        \
                 allowHeaders: [x-d]\n        exposeHeaders: [x-e]\n    \
                 backendRefs: [{name: echo, port: 80}]\n";
    let yaml = manifests(port, rules);
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(std::path::Path::new("t.yaml"), &yaml, &mut inputs).unwrap();
    let map = backends(echo);
    let fresh =
        || httproute_nginx::plan::plan(&inputs, &httproute_nginx::plan::PlanOptions::new(&map));
    let inject = " location = /pwned { alias /etc/passwd; } ";
    let payloads: Vec<String> = vec![
        format!("x;{inject}#"),
        format!("x\"{inject}\""),
        format!("x'{inject}'"),
        format!("x}} server {{ listen 127.0.0.1:{port}; {inject} }}"),
        "$host".into(),
        "${host}".into(),
        "x\\".into(),
        "x-$tenant".into(),
    ];
    let opts = common::generator_options();
    let mut tried = 0;
    for (k, payload) in payloads.iter().enumerate() {
        let mut plan = fresh();
        let server = plan.ports[0].servers.iter_mut().find(|s| !s.rules.is_empty()).unwrap();
        let rule = std::sync::Arc::make_mut(
            server.rules.iter_mut().find(|r| r.id.route.to_string() == "default/hostile").unwrap(),
        );
        rule.rule_name = Some(format!("{payload}\n{inject}"));
        edit(&mut rule.request_headers, |m| {
            m.set[0].name = payload.clone();
            m.set[0].value = payload.clone();
            m.add[0].value = payload.clone();
        });
        edit(&mut rule.response_headers, |m| {
            m.set[0].name = payload.clone();
            m.set[0].value = payload.clone();
        });
        let cors = rule.cors.as_mut().unwrap();
        cors.allow_headers = vec![payload.clone()];
        cors.expose_headers = vec![payload.clone()];
        let out = httproute_nginx::emit::emit(&plan, &opts).expect("written as data");
        assert_eq!(httproute_nginx::conf_reader::read(&out.nginx_conf).unwrap(), out.tree);
        let (n, conf) = start(&format!("writer-{k}"), &out, port);
        assert_serves_the_good_route(&n, payload);
        assert_nothing_injected(&n, payload);
        let r = n.get("/h", &[]);
        assert_eq!(r.status, 200, "{payload}: {r:?}\n{conf}");
        n.finish();
        tried += 1;
    }
    assert_eq!(tried, payloads.len());
    // Control bytes: the rule they are in is left out, naming the field; the run goes on. A
    // tab is written `\t`.
    for bad in ["a\nb", "a\rb", "a\0b", "a\tb"] {
        let mut plan = fresh();
        let server = plan.ports[0].servers.iter_mut().find(|s| !s.rules.is_empty()).unwrap();
        let rule = std::sync::Arc::make_mut(
            server.rules.iter_mut().find(|r| r.id.route.to_string() == "default/hostile").unwrap(),
        );
        edit(&mut rule.request_headers, |m| m.set[0].value = bad.into());
        // The plan judges every word (plan/words.rs); a plan edited afterwards is judged again.
        plan.refused = httproute_nginx::plan::word_refusals(&plan.ports);
        let out = httproute_nginx::emit::emit(&plan, &opts).expect("the rest is written");
        let dropped: Vec<String> = out.dropped.iter().map(ToString::to_string).collect();
        if bad == "a\tb" {
            assert!(dropped.is_empty(), "{dropped:?}");
            assert!(out.nginx_conf.contains("\"a\\tb\""), "{}", out.nginx_conf);
        } else {
            assert_eq!(dropped.len(), 1, "{bad:?}: {dropped:?}");
            assert!(
                dropped[0]
                    .starts_with("default/hostile rule 0: RequestHeaderModifier header value: "),
                "{dropped:?}"
            );
        }
        let (n, conf) =
            start(&format!("control-{}", bad.len() + bad.as_bytes()[1] as usize), &out, port);
        let r = n.get("/h", &[]);
        if bad == "a\tb" {
            assert_eq!(r.status, 200, "{bad:?}: {r:?}\n{conf}");
        } else {
            // The hostile rule is not served; the good route is.
            assert_eq!(r.status, 404, "{bad:?}: {r:?}\n{conf}");
            assert_serves_the_good_route(&n, bad);
        }
        n.finish();
    }
}

/// A plan's header filter changed in place (the plan holds it read-only, boxed when set).
fn edit(
    m: &mut httproute_nginx::plan::Modifier,
    f: impl FnOnce(&mut httproute_nginx::model::HeaderModifier),
) {
    let mut filter = (**m).clone();
    f(&mut filter);
    *m = httproute_nginx::plan::Modifier::of(filter);
}
