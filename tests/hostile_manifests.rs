//! Hostile manifests and options, generated and run in a real NGINX with the module: each
//! either fails with an error naming its field (nothing written), or gives a configuration
//! that passes `nginx -t`, still serves the other routes, and serves nothing the manifest did
//! not ask for (an injected path gets NGINX's 404, never a file).

mod common;

use common::{Nginx, Prefix, free_ports};
use httproute_nginx::{BackendMap, Options};

/// A plain NGINX standing in for the Services: one server per name, each saying its name.
/// (its NGINX, the map for `--backend`)
fn services(names: &[&str]) -> (Nginx, BackendMap) {
    let ports = free_ports(names.len() + 1);
    let mut body = String::new();
    let mut map = BackendMap::new();
    for (name, port) in names.iter().zip(&ports) {
        body.push_str(&format!(
            "server {{ listen 127.0.0.1:{port}; return 200 \"{name} $request_uri\\n\"; }}\n"
        ));
        map.insert(format!("default/{name}:80"), format!("127.0.0.1:{port}"));
    }
    body.push_str("server { listen 127.0.0.1:{PORT}; return 404; }\n");
    let p = Prefix::new_on("services", &body, &[], ports[names.len()]);
    (p.start(), map)
}

fn gateway_yaml(port: u16, listener_extra: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: gw}}\nspec:\n  \
         listeners:\n  - {{name: http, port: {port}, protocol: HTTP{listener_extra}}}\n---\n"
    )
}

/// An HTTPRoute `name` on `gw` with `rules` (YAML lines) and metadata `meta`.
fn route(name: &str, meta: &str, rules: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: {name}{meta}}}\n\
         spec:\n  parentRefs: [{{name: gw}}]\n  rules:\n{rules}---\n"
    )
}

/// The route every accepted case keeps serving.
fn good_route() -> String {
    route(
        "good",
        "",
        "  - matches: [{path: {type: PathPrefix, value: /good}}]\n    backendRefs: [{name: good, port: 80}]\n",
    )
}

/// Generating `yaml` with `opts` fails: the error, which must name `field`; nothing written.
fn refused(name: &str, yaml: &str, opts: &Options, field: &str) -> String {
    let src = Prefix::scratch(&format!("{name}-in"));
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("all.yaml"), yaml).unwrap();
    let e = match httproute_nginx::generate(&[src], &BackendMap::new(), opts) {
        Ok((out, _)) => panic!("{name}: generated:\n{}", out.nginx_conf),
        Err(e) => e,
    };
    assert!(e.contains(field), "{name}: {e}\nwant the field {field}");
    e
}

/// Generating `yaml` with `opts` refuses its Gateway only (the CRD refuses it; the run goes
/// on): its warning, which must name `field`. No server is written for it.
fn gateway_refused(name: &str, yaml: &str, opts: &Options, field: &str) -> String {
    let src = Prefix::scratch(&format!("{name}-in"));
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("all.yaml"), yaml).unwrap();
    let g = httproute_nginx::generate_all(&[src], &BackendMap::new(), opts)
        .unwrap_or_else(|e| panic!("{name}: the run is refused: {e}"));
    let w = g
        .warnings
        .iter()
        .find(|w| w.starts_with("Gateway ") && w.contains("is refused as the API server"))
        .unwrap_or_else(|| panic!("{name}: no refusal among {:?}", g.warnings));
    assert!(w.contains(field), "{name}: {w}\nwant the field {field}");
    assert!(!g.output.nginx_conf.contains("server {"), "{name}: {}", g.output.nginx_conf);
    let status = httproute_nginx::status::yaml(&g.status);
    assert!(status.contains("reason: Invalid"), "{name}: {status}");
    w.clone()
}

fn get(n: &Nginx, path: &str) -> (u16, String) {
    let req = format!("GET {path} HTTP/1.0\r\nHost: any.test\r\n\r\n");
    let r = n.raw(req.as_bytes()).expect("request");
    (r.status, r.body)
}

/// What an accepted hostile case must still do: serve the good route, and answer an
/// injected path with NGINX's own 404 (no file).
fn still_serves(n: &Nginx) {
    assert_eq!(get(n, "/good/x"), (200, "good /good/x\n".to_owned()));
    for path in ["/pwned", "/etc/passwd", "/_httproute-internal/0"] {
        let (status, body) = get(n, path);
        assert_eq!(status, 404, "{path}: {body}");
        assert!(!body.contains("root:"), "{path}: {body}");
    }
}

#[test]
fn a_listener_hostname_with_configuration_in_it_is_refused() {
    let port = free_ports(1)[0];
    let opts = common::generator_options();
    let yaml =
        gateway_yaml(port, ", hostname: \"a.test; location = /pwned { alias /etc/passwd; }\"")
            + &good_route();
    let e = gateway_refused("hostname-injection", &yaml, &opts, "spec.listeners[0].hostname");
    assert!(e.contains("document 0, spec.listeners[0].hostname: invalid hostname"), "{e}");
}

#[test]
fn listener_port_0_and_hostnames_empty_and_star_are_refused() {
    let opts = common::generator_options();
    let yaml = gateway_yaml(0, "") + &good_route();
    let e = gateway_refused("port-0", &yaml, &opts, "spec.listeners[0].port");
    assert!(e.ends_with("spec.listeners[0].port: must be 1-65535"), "{e}");
    let port = free_ports(1)[0];
    for h in ["\"\"", "\"*\""] {
        let yaml = gateway_yaml(port, &format!(", hostname: {h}")) + &good_route();
        let e = gateway_refused("hostname", &yaml, &opts, "spec.listeners[0].hostname");
        assert!(e.contains(&format!("invalid hostname {h}")), "{e}");
    }
}

#[test]
fn options_with_configuration_in_them_are_refused() {
    let port = free_ports(1)[0];
    let yaml = gateway_yaml(port, "") + &good_route();
    let opts =
        Options { listen_address: Some("127.0.0.1;x".into()), ..common::generator_options() };
    let e = refused("listen-address", &yaml, &opts, "--listen-address");
    assert!(e.starts_with("--listen-address \"127.0.0.1;x\": expected an IPv4 address"), "{e}");
    let opts = Options { module: "x;y".into(), ..common::generator_options() };
    let e = refused("module", &yaml, &opts, "--module");
    assert!(e.starts_with("--module \"x;y\": the path has the character ';'"), "{e}");
}

/// Generates `yaml` with the services' map, checks `nginx -t`, starts it.
fn serve(name: &str, yaml: &str, port: u16, map: &BackendMap) -> (Nginx, Vec<String>) {
    let (p, warnings) = common::generated(name, yaml, port, map, &common::generator_options());
    (p.start(), warnings)
}

#[test]
fn a_redirect_to_port_0_leaves_its_route_out_and_the_others_serve() {
    let (_svc, map) = services(&["good"]);
    let port = free_ports(1)[0];
    let bad = route(
        "redirect",
        "",
        "  - matches: [{path: {type: PathPrefix, value: /moved}}]\n    filters: [{type: RequestRedirect, requestRedirect: {port: 0}}]\n",
    );
    let yaml = gateway_yaml(port, "") + &good_route() + &bad;
    let (n, warnings) = serve("redirect-port-0", &yaml, port, &map);
    assert!(
        warnings.iter().any(|w| w.starts_with("HTTPRoute default/redirect is not served: ")
            && w.ends_with(
                "document 2, spec.rules[0].filters[0].requestRedirect.port: must be 1-65535"
            )),
        "{warnings:#?}"
    );
    // No redirect to `$host:0`: the route is not there.
    let (status, body) = get(&n, "/moved/x");
    assert_eq!(status, 404, "{body}");
    still_serves(&n);
    n.finish();
}

#[test]
fn a_header_regex_pcre2_refuses_skips_its_match_and_the_others_serve() {
    let (_svc, map) = services(&["good", "regex"]);
    let port = free_ports(1)[0];
    let bad = route(
        "regex",
        "",
        "  - matches:\n    - path: {type: PathPrefix, value: /re}\n      headers: [{name: x-a, type: RegularExpression, value: \"(unclosed\"}]\n    - path: {type: PathPrefix, value: /re}\n      headers: [{name: x-b, type: RegularExpression, value: \"^b+$\"}]\n    backendRefs: [{name: regex, port: 80}]\n",
    );
    let yaml = gateway_yaml(port, "") + &good_route() + &bad;
    let (n, warnings) = serve("header-regex", &yaml, port, &map);
    assert!(
        warnings.iter().any(|w| w.starts_with(
            "HTTPRoute default/regex rules[0].matches[0].headers[0].value: regular expression \"(unclosed\" does not compile"
        )),
        "{warnings:#?}"
    );
    let req = |h: &str| {
        let r = n.raw(format!("GET /re HTTP/1.0\r\nHost: any.test\r\n{h}\r\n").as_bytes()).unwrap();
        (r.status, r.body)
    };
    assert_eq!(req("x-b: bbb\r\n"), (200, "regex /re\n".to_owned()));
    assert_eq!(req("x-a: (unclosed\r\n").0, 404);
    still_serves(&n);
    assert!(!n.error_log().contains("[emerg]"), "{}", n.error_log());
    n.finish();
}

#[test]
fn creation_timestamps_compare_as_instants_and_a_bad_one_leaves_its_route_out() {
    let (_svc, map) = services(&["good", "older", "newer", "fine"]);
    let port = free_ports(1)[0];
    let rules = |path: &str, backend: &str| {
        format!(
            "  - matches: [{{path: {{type: PathPrefix, value: {path}}}}}]\n    backendRefs: [{{name: {backend}, port: 80}}]\n"
        )
    };
    // As text, each newer route would sort first: "06:30+06:00" > "01:00Z", and
    // "00:00.5Z" < "00:00Z".
    let yaml = gateway_yaml(port, "")
        + &good_route()
        + &route(
            "b-offset-new",
            ", creationTimestamp: \"2026-01-01T01:00:00Z\"",
            &rules("/offset", "newer"),
        )
        + &route(
            "a-offset-old",
            ", creationTimestamp: \"2026-01-01T06:30:00+06:00\"",
            &rules("/offset", "older"),
        )
        + &route(
            "a-frac-new",
            ", creationTimestamp: \"2026-01-01T00:00:00.5Z\"",
            &rules("/frac", "newer"),
        )
        + &route(
            "b-frac-old",
            ", creationTimestamp: \"2026-01-01T00:00:00Z\"",
            &rules("/frac", "older"),
        )
        + &route("a-bad", ", creationTimestamp: yesterday", &rules("/bad", "newer"))
        + &route(
            "b-bad-peer",
            ", creationTimestamp: \"2026-06-01T00:00:00Z\"",
            &rules("/bad", "fine"),
        );
    let (n, warnings) = serve("timestamps", &yaml, port, &map);
    assert!(
        warnings.iter().any(|w| w.starts_with("HTTPRoute default/a-bad is not served: ")
            && w.contains(
                "metadata.creationTimestamp: \"yesterday\" is not an RFC 3339 timestamp"
            )),
        "{warnings:#?}"
    );
    assert_eq!(get(&n, "/offset"), (200, "older /offset\n".to_owned()));
    assert_eq!(get(&n, "/frac"), (200, "older /frac\n".to_owned()));
    assert_eq!(get(&n, "/bad"), (200, "fine /bad\n".to_owned()));
    still_serves(&n);
    n.finish();
}

/// A self-signed certificate for `name` (openssl): (crt, key) PEM text.
fn pem(name: &str) -> (String, String) {
    let (crt, key) = common::self_signed(name, name);
    (std::fs::read_to_string(crt).unwrap(), std::fs::read_to_string(key).unwrap())
}

#[test]
fn a_bad_certificate_costs_only_its_listener() {
    let (_svc, map) = services(&["good"]);
    let ports = free_ports(2);
    let (port, tls_port) = (ports[0], ports[1]);
    let (good_crt, good_key) = pem("good.test");
    let (_, other_key) = pem("other.test");
    let listeners = format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: gw}}\nspec:\n  listeners:\n  \
         - {{name: http, port: {port}, protocol: HTTP}}\n  \
         - {{name: good, port: {tls_port}, protocol: HTTPS, hostname: good.test, tls: {{certificateRefs: [{{name: good-cert}}]}}}}\n  \
         - {{name: empty, port: {tls_port}, protocol: HTTPS, hostname: empty.test, tls: {{certificateRefs: [{{name: empty-cert}}]}}}}\n  \
         - {{name: garbage, port: {tls_port}, protocol: HTTPS, hostname: garbage.test, tls: {{certificateRefs: [{{name: garbage-cert}}]}}}}\n  \
         - {{name: mismatch, port: {tls_port}, protocol: HTTPS, hostname: mismatch.test, tls: {{certificateRefs: [{{name: mismatch-cert}}]}}}}\n---\n"
    );
    let yaml = listeners
        + &good_route()
        + &common::tls_secret("good-cert", &good_crt, &good_key)
        + &common::tls_secret("empty-cert", "", &good_key)
        + &common::tls_secret(
            "garbage-cert",
            "-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n",
            &good_key,
        )
        + &common::tls_secret("mismatch-cert", &good_crt, &other_key);
    let (n, warnings) = serve("certificates", &yaml, port, &map);
    for (listener, why) in [
        ("empty", "tls.crt has no CERTIFICATE block"),
        ("garbage", "tls.crt: the certificate does not parse"),
        ("mismatch", "tls.key is not the key of the certificate in tls.crt"),
    ] {
        let want = format!(
            "listener default/gw/{listener}: tls.certificateRefs[0]: Secret default/{listener}-cert: {why}"
        );
        assert!(warnings.iter().any(|w| w.starts_with(&want)), "{want}\n{warnings:#?}");
    }
    // The plain listener and the good TLS listener serve; the bad ones refuse handshakes.
    still_serves(&n);
    assert_eq!(common::https_status(tls_port, "good.test", "/good/x"), Some(200));
    for host in ["empty.test", "garbage.test", "mismatch.test"] {
        assert_eq!(common::https_status(tls_port, host, "/good/x"), None, "{host}");
    }
    assert_eq!(common::https_status(tls_port, "good.test", "/good/x"), Some(200));
    n.finish();
}
