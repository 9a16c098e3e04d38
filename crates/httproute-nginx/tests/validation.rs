//! Every field checked as the Gateway API CRDs (v1.5, standard channel) check it, before
//! anything is written: what an operator gives (the Gateway, command-line options) is refused
//! with an error naming the file, document and field; a route the CRDs would refuse is left
//! out with a warning and an `Accepted: False` condition, and the others are served.

mod common;

use std::path::Path;

use httproute_nginx::model::{Inputs, load_text};
use httproute_nginx::{BackendMap, Options, generate_all};

/// The plan of `inputs` with these backends and the default options.
fn plan(
    inputs: &httproute_nginx::model::Inputs,
    backends: &BackendMap,
) -> httproute_nginx::plan::Plan {
    httproute_nginx::plan::plan(inputs, &httproute_nginx::plan::PlanOptions::new(backends))
}

const GW: &str = "kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n---\n";

/// The inputs of `text`; `Err`: the YAML error, else the first object refused (the run goes
/// on without it: `Inputs::refused`).
fn load(text: &str) -> Result<Inputs, String> {
    let mut inputs = Inputs::default();
    load_text(Path::new("t.yaml"), text, &mut inputs).map_err(|e| e.to_string())?;
    match inputs.refused.first() {
        Some(r) => Err(r.error.to_string()),
        None => Ok(inputs),
    }
}

fn gateway(listener: &str) -> String {
    format!("kind: Gateway\nmetadata: {{name: gw}}\nspec:\n  listeners:\n  - {listener}\n")
}

#[test]
fn gateway_fields_the_crd_refuses_are_errors_naming_the_field() {
    for (listener, want) in [
        (
            "{name: Bad_Name, port: 80, protocol: HTTP}",
            "t.yaml, document 0, spec.listeners[0].name: \"Bad_Name\" is not a valid name",
        ),
        (
            "{name: http, port: 0, protocol: HTTP}",
            "t.yaml, document 0, spec.listeners[0].port: must be 1-65535",
        ),
        (
            "{name: http, port: 80, protocol: HTTP, hostname: \"\"}",
            "t.yaml, document 0, spec.listeners[0].hostname: invalid hostname \"\"",
        ),
        (
            "{name: http, port: 80, protocol: HTTP, hostname: \"*\"}",
            "t.yaml, document 0, spec.listeners[0].hostname: invalid hostname \"*\"",
        ),
        (
            "{name: http, port: 80, protocol: HTTP, hostname: \"a.test; location = /pwned { alias /etc/passwd; }\"}",
            "t.yaml, document 0, spec.listeners[0].hostname: invalid hostname \"a.test; location",
        ),
        (
            "{name: http, port: 80, protocol: HTTP, hostname: \"A.test\"}",
            "t.yaml, document 0, spec.listeners[0].hostname: invalid hostname \"A.test\"",
        ),
        (
            "{name: http, port: 80, protocol: HTTP}\n  - {name: http, port: 81, protocol: HTTP}",
            "t.yaml, document 0, spec.listeners[1].name: \"http\": listener names must be unique",
        ),
        (
            "{name: a, port: 80, protocol: HTTP, hostname: a.test}\n  - {name: b, port: 80, protocol: HTTP, hostname: a.test}",
            "t.yaml, document 0, spec.listeners: Combination of port, protocol and hostname must be unique for each listener (listeners \"a\" and \"b\")",
        ),
        (
            "{name: a, port: 80, protocol: HTTP}\n  - {name: b, port: 81, protocol: HTTP}\n  - {name: c, port: 80, protocol: HTTP}",
            "t.yaml, document 0, spec.listeners: Combination of port, protocol and hostname must be unique for each listener (listeners \"a\" and \"c\")",
        ),
        (
            "{name: s, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: c, namespace: \"x;y\"}]}}",
            "t.yaml, document 0, spec.listeners[0].tls.certificateRefs[0].namespace: \"x;y\" is not a valid namespace",
        ),
    ] {
        let e = load(&gateway(listener)).unwrap_err();
        assert!(e.starts_with(want), "{e}\nwant: {want}");
    }
    // What the CRD allows passes: wildcard hostnames, dotted section names.
    load(&gateway("{name: a.b-1, port: 65535, protocol: HTTP, hostname: \"*.example.com\"}"))
        .unwrap();
    // One port with another hostname, none, or another protocol is not a duplicate.
    load(&gateway("{name: a, port: 80, protocol: HTTP, hostname: a.test}\n  - {name: b, port: 80, protocol: HTTP, hostname: b.test}\n  - {name: c, port: 80, protocol: HTTP}\n  - {name: d, port: 80, protocol: HTTPS, hostname: a.test, tls: {certificateRefs: [{name: c}]}}")).unwrap();
    let e =
        load("kind: Gateway\nmetadata: {name: \"gw;x\"}\nspec:\n  listeners: []\n").unwrap_err();
    assert!(
        e.starts_with("t.yaml, document 0, metadata.name: \"gw;x\" is not a valid name"),
        "{e}"
    );
}

fn route(meta: &str, spec: &str) -> String {
    format!(
        "kind: HTTPRoute\nmetadata: {{name: r, {meta}}}\nspec:\n  parentRefs: [{{name: gw}}]\n{spec}---\n"
    )
}

/// The error a route was left out for: `field: message`.
fn rejected(text: &str) -> String {
    let inputs = load(&format!("{GW}{text}")).unwrap();
    assert!(inputs.routes.is_empty(), "{text}: not left out");
    let e = &inputs.rejected[0].error;
    assert_eq!(e.document, Some(1));
    format!("{}: {}", e.field, e.message)
}

#[test]
fn route_fields_the_crd_refuses_leave_the_route_out() {
    for (meta, spec, want) in [
        (
            "",
            "  rules:\n  - name: \"a\\nlocation = /pwned { alias /etc/passwd; }\"\n",
            "spec.rules[0].name: \"a\\nlocation = /pwned { alias /etc/passwd; }\" is not a valid name",
        ),
        (
            "",
            "  rules:\n  - name: a\n  - name: a\n",
            "spec.rules[1].name: \"a\": rule names must be unique",
        ),
        ("", "  rules:\n  - name: UPPER\n", "spec.rules[0].name: \"UPPER\" is not a valid name"),
        (
            "",
            "  rules:\n  - filters: [{type: RequestRedirect, requestRedirect: {port: 0}}]\n",
            "spec.rules[0].filters[0].requestRedirect.port: must be 1-65535",
        ),
        (
            "",
            "  rules:\n  - backendRefs: [{name: s, port: 0}]\n",
            "spec.rules[0].backendRefs[0].port: must be 1-65535",
        ),
        (
            "",
            "  rules:\n  - filters: [{type: RequestMirror, requestMirror: {backendRef: {name: m, port: 0}}}]\n",
            "spec.rules[0].filters[0].requestMirror.backendRef.port: must be 1-65535",
        ),
        (
            "",
            "  rules:\n  - matches: [{queryParams: [{name: \"a;b\", value: v}]}]\n",
            "spec.rules[0].matches[0].queryParams[0].name: invalid query parameter name \"a;b\"",
        ),
        (
            "",
            "  rules:\n  - matches: [{headers: [{name: \"a\\nb\", value: v}]}]\n",
            "spec.rules[0].matches[0].headers[0].name: invalid header name \"a\\nb\"",
        ),
        (
            "creationTimestamp: yesterday",
            "",
            "metadata.creationTimestamp: \"yesterday\" is not an RFC 3339 timestamp",
        ),
        ("namespace: \"a;b\"", "", "metadata.namespace: \"a;b\" is not a valid namespace"),
        ("", "  hostnames: [\"a.test;\"]\n", "spec.hostnames[0]: invalid hostname \"a.test;\""),
        (
            "",
            "  rules:\n  - matches: [{path: {type: Exact, value: 7}}]\n",
            "spec.rules[0].matches[0].path.value: invalid type",
        ),
    ] {
        let got = rejected(&route(meta, spec));
        assert!(got.starts_with(want), "{got}\nwant: {want}");
    }
    // A parentRef's section name and port are checked too.
    let text = "kind: HTTPRoute\nmetadata: {name: r}\nspec:\n  parentRefs: [{name: gw, sectionName: \"a b\"}]\n";
    assert!(
        rejected(text).starts_with("spec.parentRefs[0].sectionName: \"a b\" is not a valid name")
    );
    let text = "kind: HTTPRoute\nmetadata: {name: r}\nspec:\n  parentRefs: [{name: gw, port: 0}]\n";
    assert!(rejected(text).starts_with("spec.parentRefs[0].port: must be 1-65535"));
    // GRPCRoutes as well.
    let text = "kind: GRPCRoute\nmetadata: {name: g}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - name: \"x;y\"\n";
    assert!(rejected(text).starts_with("spec.rules[0].name: \"x;y\" is not a valid name"));
    // HTTPRoute's filters that the GRPCRoute CRD's enum leaves out are refused, not applied.
    for filter in [
        "{type: URLRewrite, urlRewrite: {hostname: x.test}}",
        "{type: RequestRedirect, requestRedirect: {hostname: x.test}}",
        "{type: CORS, cors: {allowOrigins: [\"*\"]}}",
    ] {
        let text = format!(
            "kind: GRPCRoute\nmetadata: {{name: g}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - filters: [{{type: RequestHeaderModifier, requestHeaderModifier: {{set: [{{name: x, value: y}}]}}}}, {filter}]\n"
        );
        let got = rejected(&text);
        assert!(
            got.starts_with("spec.rules[0].filters[1].type: ")
                && got.contains("is not a GRPCRoute filter type"),
            "{got}"
        );
    }
    // The CRD allows `$` and the other token characters in header names: accepted.
    let ok = route(
        "",
        "  rules:\n  - matches: [{headers: [{name: \"x-$tenant\", value: v}]}]\n    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: \"x-$host\", value: v}]}}]\n",
    );
    assert_eq!(load(&format!("{GW}{ok}")).unwrap().routes.len(), 1);
}

#[test]
fn a_route_left_out_costs_only_itself_with_a_warning_and_a_status_condition() {
    let good = "kind: HTTPRoute\nmetadata: {name: good}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {value: /good}}]\n    backendRefs: [{name: s, port: 80}]\n---\n";
    let bad =
        route("", "  rules:\n  - filters: [{type: RequestRedirect, requestRedirect: {port: 0}}]\n");
    let dir = std::env::temp_dir().join(format!("hr-validation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), format!("{GW}{good}{bad}")).unwrap();
    let g = generate_all(std::slice::from_ref(&dir), &BackendMap::new(), &opts()).unwrap();
    let (out, warnings, status) =
        (&g.output, &g.warnings, httproute_nginx::status::yaml(&g.status));
    let want = format!(
        "HTTPRoute default/r is not served: {}, document 2, spec.rules[0].filters[0].requestRedirect.port: must be 1-65535",
        dir.join("a.yaml").display()
    );
    assert!(warnings.contains(&want), "{warnings:#?}");
    assert!(out.nginx_conf.contains("location = \"/good\""), "{}", out.nginx_conf);
    assert!(!out.nginx_conf.contains(":0"), "{}", out.nginx_conf);
    assert!(
        status.contains(
            "    - conditions:\n      - message: 'spec.rules[0].filters[0].requestRedirect.port: must be 1-65535'\n        reason: UnsupportedValue\n        status: 'False'\n        type: Accepted\n"
        ),
        "{}",
        status
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn creation_timestamps_compare_as_instants() {
    // `a` is older as an instant (00:30 UTC) though later as text; fractional seconds count.
    let two = |ta: &str, tb: &str| {
        let r = |name: &str, ts: &str| {
            format!(
                "kind: HTTPRoute\nmetadata: {{name: {name}, creationTimestamp: \"{ts}\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{value: /x}}}}]\n---\n"
            )
        };
        let p =
            plan(&load(&format!("{GW}{}{}", r("b", tb), r("a", ta))).unwrap(), &BackendMap::new());
        let server = &p.ports[0].servers[0];
        let loc = server.locations.iter().find(|l| !l.is_empty()).unwrap();
        loc.candidates().next().unwrap().id.route.to_string()
    };
    assert_eq!(two("2026-01-01T06:30:00+06:00", "2026-01-01T01:00:00Z"), "default/a");
    assert_eq!(two("2026-01-01T01:00:00+06:00", "2026-01-01T00:00:00Z"), "default/a");
    assert_eq!(two("2026-01-01T00:00:00.5Z", "2026-01-01T00:00:00.25Z"), "default/b");
    assert_eq!(two("2026-01-01T00:00:00.25Z", "2026-01-01T00:00:00.5Z"), "default/a");
    // The same instant written two ways: the name decides.
    assert_eq!(two("2026-01-01T06:00:00+06:00", "2026-01-01T00:00:00Z"), "default/a");
    assert_eq!(
        httproute_nginx::model::Timestamp::parse("2026-01-01").unwrap_err().split(' ').next(),
        Some("\"2026-01-01\"")
    );
}

#[test]
fn a_header_regex_that_does_not_compile_skips_its_match_with_a_warning() {
    let rules = "  rules:\n  - matches:\n    - path: {value: /a}\n      headers: [{name: x, type: RegularExpression, value: \"(unclosed\"}]\n    - path: {value: /b}\n      queryParams: [{name: q, type: RegularExpression, value: \"[z-a]\"}]\n    - path: {value: /c}\n      headers: [{name: x, type: RegularExpression, value: \"^ok$\"}]\n    backendRefs: [{name: s, port: 80}]\n";
    let p = plan(&load(&format!("{GW}{}", route("", rules))).unwrap(), &BackendMap::new());
    for want in [
        "HTTPRoute default/r rules[0].matches[0].headers[0].value: regular expression \"(unclosed\" does not compile (",
        "HTTPRoute default/r rules[0].matches[1].queryParams[0].value: regular expression \"[z-a]\" does not compile (",
    ] {
        assert!(p.warnings.iter().any(|w| w.starts_with(want)), "{want}\n{:#?}", p.warnings);
    }
    let paths: Vec<String> = p.ports[0].servers[0]
        .locations
        .iter()
        .flat_map(|l| l.candidates().map(|c| c.path.clone()))
        .collect();
    assert_eq!(paths, ["/c", "/c"]);
}

fn opts() -> Options {
    common::options()
}

#[test]
fn options_that_reach_the_configuration_are_checked() {
    let check = |o: Options| httproute_nginx::check_options(&o, &BackendMap::new());
    let e = check(Options { module: "x;y".into(), ..opts() }).unwrap_err();
    assert_eq!(
        e,
        "--module \"x;y\": the path has the character ';'; use a path of letters, digits and /._-+~@,=:%"
    );
    for a in ["127.0.0.1;x", "127.0.0.1 x", "::1", "a..b", ""] {
        let e = check(Options { listen_address: Some(a.into()), ..opts() }).unwrap_err();
        assert!(e.starts_with(&format!("--listen-address {a:?}: ")), "{e}");
    }
    for a in ["127.0.0.1", "[::1]", "*", "gw.example"] {
        assert_eq!(check(Options { listen_address: Some(a.into()), ..opts() }), Ok(vec![]), "{a}");
    }
    for r in ["10.0.0.1;x", "10.0.0.1:0", "::1", "dns.example"] {
        let e = check(Options { resolvers: vec![r.into()], ..opts() }).unwrap_err();
        assert!(e.starts_with("--resolver "), "{e}");
    }
    for r in ["10.0.0.1", "10.0.0.1:53", "[::1]", "[::1]:5353"] {
        assert_eq!(check(Options { resolvers: vec![r.into()], ..opts() }), Ok(vec![]), "{r}");
    }
    let mut backends = BackendMap::new();
    backends.insert("default/s:80".into(), "10.0.0.1:0".into());
    assert!(
        httproute_nginx::check_options(&opts(), &backends).unwrap_err().starts_with("--backend ")
    );
    assert!(httproute_nginx::parse_backend("default/s:80=10.0.0.1;x:80").is_err());
    // Certificate files: the path, then (when they can be read here) the contents.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tls");
    let (crt, key) = (data.join("test.crt"), data.join("test.key"));
    let with = |c: &Path, k: &Path| {
        let mut o = opts();
        o.certificates
            .insert("default/c".into(), (c.display().to_string(), k.display().to_string()));
        check(o)
    };
    assert_eq!(with(&crt, &key), Ok(vec![]));
    let e = with(&key, &key).unwrap_err();
    assert!(e.ends_with("tls.crt has no CERTIFICATE block"), "{e}");
    let e = with(Path::new("/x;y.crt"), &key).unwrap_err();
    assert!(e.starts_with("--certificate \"/x;y.crt\": the path has the character ';'"), "{e}");
    let w = with(Path::new("/nowhere/c.crt"), &key).unwrap();
    assert!(
        w[0].starts_with("--certificate default/c: not checked, the files cannot be read here")
    );
}

#[test]
fn the_command_refuses_bad_options_with_a_clear_error_and_exit_1() {
    let dir = std::env::temp_dir().join(format!("hr-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), GW).unwrap();
    let run = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_httproute-nginx"))
            .args(["generate", "-f"])
            .arg(dir.join("a.yaml"))
            .arg("-o")
            .arg(dir.join("out"))
            .args(["--resolver", "127.0.0.1"])
            .args(extra)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = run(&["--listen-address", "127.0.0.1;x"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("--listen-address \"127.0.0.1;x\": expected an IPv4 address"), "{err}");
    let (code, err) = run(&["--module", "x;y"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("error: --module \"x;y\": the path has the character ';'"), "{err}");
    assert!(!dir.join("out").exists());
    assert_eq!(run(&[]).0, Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_certificate_costs_only_its_listener() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tls");
    use base64::Engine as _;
    let b64 = |f: &str| {
        base64::engine::general_purpose::STANDARD.encode(std::fs::read(data.join(f)).unwrap())
    };
    let secret = |name: &str, crt: &str, key: &str| {
        format!(
            "kind: Secret\nmetadata: {{name: {name}}}\ntype: kubernetes.io/tls\ndata: {{tls.crt: \"{crt}\", tls.key: \"{key}\"}}\n---\n"
        )
    };
    let gw = "kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners:\n  - {name: good, port: 443, protocol: HTTPS, hostname: good.test, tls: {certificateRefs: [{name: good}]}}\n  - {name: empty, port: 443, protocol: HTTPS, hostname: empty.test, tls: {certificateRefs: [{name: empty}]}}\n  - {name: garbage, port: 443, protocol: HTTPS, hostname: garbage.test, tls: {certificateRefs: [{name: garbage}]}}\n  - {name: mismatch, port: 443, protocol: HTTPS, hostname: mismatch.test, tls: {certificateRefs: [{name: mismatch}]}}\n  - {name: plain, port: 80, protocol: HTTP}\n---\n";
    // A key of its own, not the certificate's.
    let other_key = b64("other.key");
    let text = format!(
        "{gw}{}{}{}{}",
        secret("good", &b64("test.crt"), &b64("test.key")),
        secret("empty", "", &b64("test.key")),
        secret("garbage", "Z2FyYmFnZQ==", &b64("test.key")),
        secret("mismatch", &b64("test.crt"), &other_key),
    );
    let p = plan(&load(&text).unwrap(), &BackendMap::new());
    for want in [
        "listener default/gw/empty: tls.certificateRefs[0]: Secret default/empty: tls.crt has no CERTIFICATE block; ignored",
        "listener default/gw/garbage: tls.certificateRefs[0]: Secret default/garbage: tls.crt has no CERTIFICATE block; ignored",
        "listener default/gw/mismatch: tls.certificateRefs[0]: Secret default/mismatch: tls.key is not the key of the certificate in tls.crt; ignored",
    ] {
        assert!(p.warnings.iter().any(|w| w == want), "{want}\n{:#?}", p.warnings);
    }
    let tls = p.ports.iter().find(|p| p.port == 443).unwrap();
    let certs = |h: &str| {
        tls.servers.iter().find(|s| s.hostname.as_deref() == Some(h)).unwrap().certificates.clone()
    };
    assert_eq!(certs("good.test"), ["default/good"]);
    for h in ["empty.test", "garbage.test", "mismatch.test"] {
        assert!(certs(h).is_empty(), "{h}");
    }
    let status = httproute_nginx::status::yaml(&p.status);
    assert_eq!(status.matches("reason: InvalidCertificateRef").count(), 3, "{status}");
    // Only the good Secret's files are written.
    assert_eq!(p.secrets.keys().collect::<Vec<_>>(), ["default/good"]);
}

#[test]
fn deep_nesting_is_refused_as_the_parser_reaches_it() {
    // 2 MB of nesting, YAML and JSON: refused at the first node deeper than 64 collections
    // (block and flow alike: `a:` is one), as its event arrives; the rest is not read.
    for (text, column) in [
        ("[".repeat(2 << 20), 65),
        ("{\"a\": ".repeat((2 << 20) / 6), 6 * 64 + 1),
        (format!("a: {}", "[a, ".repeat((2 << 20) / 4)), 4 + 4 * 63),
        // A quote inside a plain scalar (which bypassed the old pre-scan) changes nothing.
        (format!("a: [x\"y, {}", "[a\"b, ".repeat((2 << 20) / 6)), 4 + 6 + 6 * 62),
    ] {
        let e = load(&text).unwrap_err();
        assert_eq!(
            e,
            format!(
                "t.yaml, document 0: invalid YAML/JSON: nesting deeper than 64 levels at line 1 \
                 column {column}"
            )
        );
    }
    // As deep as Kubernetes objects get, and more: read as before.
    let nested = format!(
        "kind: Namespace\nmetadata: {{name: n, labels: {{}}}}\nx: {}1{}\n",
        "[".repeat(40),
        "]".repeat(40)
    );
    load(&nested).unwrap();
}

/// Documents are read one at a time, but an invalid document is still the error reported, ahead
/// of an earlier object's; a List's items are objects of their document.
#[test]
fn invalid_yaml_is_reported_before_an_earlier_objects_error() {
    let bad_gateway = gateway("{name: http, port: 0, protocol: HTTP}");
    let e = load(&format!("{bad_gateway}---\nkind: [unclosed\n")).unwrap_err();
    assert!(e.starts_with("t.yaml, document 1") && e.contains("invalid YAML/JSON"), "{e}");
    let e =
        load(&format!("{bad_gateway}---\nkind: Namespace\nmetadata: {{name: a}}\n")).unwrap_err();
    assert!(e.starts_with("t.yaml, document 0, spec.listeners[0].port"), "{e}");
    let list =
        "kind: List\nitems:\n- {kind: Namespace, metadata: {name: a}}\n- {kind: ReferenceGrant}\n";
    let e = load(list).unwrap_err();
    assert!(e.starts_with("t.yaml, document 0"), "{e}");
    let ok = load("kind: List\nitems:\n- {kind: Namespace, metadata: {name: a, labels: {x: y}}}\n")
        .unwrap();
    assert_eq!(ok.namespace_labels.len(), 1);
}
