//! `explain` plans as `generate` does (same options, one planning function) and reads the
//! request as NGINX does (decoded, normalised path; validated host). Against a running NGINX:
//! tests/explain_differential.rs at the repository root.

mod common;

use std::path::{Path, PathBuf};

use httproute_nginx::explain::{Request, explain, explain_request};
use httproute_nginx::model::load;
use httproute_nginx::{BackendMap, Options, generate, plan_for};

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(p)
}

fn opts(version: (u32, u32, u32)) -> Options {
    Options { nginx_version: version, ..common::options() }
}

fn req(host: &str, method: &str, path: &str) -> Request {
    Request {
        port: None,
        method: method.into(),
        host: host.into(),
        path: path.into(),
        headers: vec![],
        query: String::new(),
    }
}

/// A scratch directory holding `yaml` as one manifest file.
fn manifests(name: &str, yaml: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hr-explain-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("all.yaml"), yaml).unwrap();
    dir
}

/// A GRPCRoute and an HTTPRoute on one plain port (listeners of their own hostnames).
const GRPC_BESIDE_HTTP: &str = "kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners:\n  - {name: web, port: 8080, protocol: HTTP, hostname: web.test}\n  - {name: grpc, port: 8080, protocol: HTTP, hostname: grpc.test}\n---\nkind: HTTPRoute\nmetadata: {name: web, creationTimestamp: \"2020-01-01T00:00:00Z\"}\nspec: {parentRefs: [{name: gw, sectionName: web}], rules: [{matches: [{path: {value: /web}}], backendRefs: [{name: web, port: 80}]}]}\n---\nkind: GRPCRoute\nmetadata: {name: echo}\nspec: {parentRefs: [{name: gw, sectionName: grpc}], rules: [{matches: [{method: {service: a.B}}], backendRefs: [{name: g, port: 80}]}]}\n";

#[test]
fn explain_plans_for_the_nginx_version_as_generate_does() {
    let dir = manifests("grpc", GRPC_BESIDE_HTTP);
    let model = load(std::slice::from_ref(&dir)).unwrap();
    let grpc_call = Request {
        headers: vec![("content-type".into(), "application/grpc".into())],
        ..req("grpc.test", "POST", "/a.B/Call")
    };
    for (version, served) in [((1, 22, 1), false), ((1, 28, 0), true)] {
        let o = opts(version);
        let (out, warnings) = generate(std::slice::from_ref(&dir), &BackendMap::new(), &o).unwrap();
        // What the configuration does on that NGINX: HTTP/2 on the port, or a warning.
        assert_eq!(out.nginx_conf.contains("http2 on;"), served, "{}", out.nginx_conf);
        assert_eq!(warnings.iter().any(|w| w.contains("GRPCRoutes default/echo")), !served);
        let plan = plan_for(&model, &BackendMap::new(), &o);
        let (text, status) = explain(&plan, &grpc_call);
        assert!(text.contains("winner: [0] default/echo rule 0 match 0"), "{text}");
        if served {
            assert_eq!(status, 200, "{text}");
        } else {
            assert_eq!(status, 0, "{text}");
            assert!(text.contains("not served: a GRPCRoute"), "{text}");
        }
        // The HTTPRoute beside it is served either way.
        assert_eq!(explain(&plan, &req("web.test", "GET", "/web")).1, 200);
    }
}

#[test]
fn explain_serves_a_listener_whose_certificate_comes_from_the_command_line() {
    let yaml = "kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners:\n  - {name: s, port: 8443, protocol: HTTPS, hostname: secure.test, tls: {certificateRefs: [{name: given}]}}\n---\nkind: HTTPRoute\nmetadata: {name: r}\nspec: {parentRefs: [{name: gw}], rules: [{backendRefs: [{name: web, port: 80}]}]}\n";
    let dir = manifests("cert", yaml);
    let model = load(std::slice::from_ref(&dir)).unwrap();
    let mut with = opts((1, 28, 0));
    let files = (data("tls/test.crt"), data("tls/test.key"));
    let files = (files.0.display().to_string(), files.1.display().to_string());
    with.certificates.insert("default/given".into(), files);
    for (o, served) in [(&opts((1, 28, 0)), false), (&with, true)] {
        let (out, _) = generate(std::slice::from_ref(&dir), &BackendMap::new(), o).unwrap();
        assert_eq!(out.nginx_conf.contains("ssl_certificate \""), served, "{}", out.nginx_conf);
        let plan = plan_for(&model, &BackendMap::new(), o);
        let (text, status) = explain(&plan, &req("secure.test", "GET", "/x"));
        if served {
            assert_eq!(status, 200, "{text}");
            // A target naming another server than the SNI chose: 421 (listener isolation).
            let (text, status) = explain(&plan, &req("secure.test", "GET", "http://other.test/x"));
            assert_eq!(status, 421, "{text}");
        } else {
            assert_eq!(status, 0, "{text}");
            assert!(text.contains("the handshake is refused"), "{text}");
        }
    }
}

/// The examples: the path NGINX matches is the decoded, normalised one.
#[test]
fn explain_normalises_the_path_as_nginx_does() {
    let model = load(&[data("cafe")]).unwrap();
    let plan = plan_for(&model, &BackendMap::new(), &opts((1, 28, 0)));
    let winner = |method: &str, path: &str| {
        let (text, status) = explain(&plan, &req("Cafe.Example.com.:8080", method, path));
        let line = text.lines().find(|l| l.starts_with("4. winner")).map(str::to_owned);
        (status, line.unwrap_or_else(|| text.lines().last().unwrap_or("").to_owned()))
    };
    let tea = (200, "4. winner: [1] default/tea rule 1 match 0 (the first candidate whose method, headers and query parameters all hold)".to_owned());
    assert_eq!(winner("GET", "/coffee/../tea"), tea);
    assert_eq!(winner("GET", "/coffee/%2e%2e/tea"), tea);
    assert_eq!(winner("GET", "//tea?x=1#y"), tea);
    assert_eq!(winner("GET", "http://cafe.example.com/tea"), tea);
    let coffee_v1 = "4. winner: [2] default/coffee rule 0 match 0";
    let (status, line) = winner("GET", "/coffee%2Flatte");
    assert_eq!(status, 200);
    assert!(line.starts_with(coffee_v1), "{line}");
    // Query parameters from the target and from --query both count.
    let (_, line) = winner("GET", "/coffee?TEST=v2");
    assert!(line.starts_with("4. winner: [1] default/coffee rule 1 match 1"), "{line}");
    let (text, status) = explain(&plan, &req("cafe.example.com", "GET", "/coffee/%2e%2e/tea"));
    assert_eq!(status, 200);
    assert!(
        text.contains(
            "3. path \"/tea\" (NGINX's $uri for \"/coffee/%2e%2e/tea\"): location = /tea"
        ),
        "{text}"
    );
    // What NGINX refuses before any location.
    for (method, path, status) in [
        ("GET", "/..", 400),
        ("GET", "/coffee/%zz", 400),
        ("GET", "/coffee%00", 400),
        ("TRACE", "/coffee", 405),
        ("get", "/coffee", 400),
        // An internal location of the generator is not for clients.
        ("GET", "/_httproute-internal/0", 404),
    ] {
        assert_eq!(
            explain(&plan, &req("cafe.example.com", method, path)).1,
            status,
            "{method} {path}"
        );
    }
    assert_eq!(explain(&plan, &req("cafe..example.com", "GET", "/tea")).1, 400);
    assert_eq!(explain(&plan, &req("", "GET", "/tea")).1, 400);
    // A header NGINX ignores (an underscore in its name) does not match.
    let e = explain_request(
        &plan,
        &Request {
            headers: vec![("version".into(), "v2".into())],
            ..req("cafe.example.com", "GET", "/coffee")
        },
    );
    assert!(e.text.contains("rule 1 match 0"), "{}", e.text);
    let e = explain_request(
        &plan,
        &Request {
            headers: vec![("ver_sion".into(), "v2".into())],
            ..req("cafe.example.com", "GET", "/coffee")
        },
    );
    assert!(e.text.contains("header \"ver_sion\" ignored"), "{}", e.text);
    assert!(e.text.contains("rule 0 match 0"), "{}", e.text);
}

/// The command: the planning options are explain's too.
#[test]
fn the_explain_command_takes_the_planning_options() {
    let dir = manifests("cli", GRPC_BESIDE_HTTP);
    let run = |version: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_httproute-nginx"))
            .args(["explain", "-f"])
            .arg(&dir)
            .args([
                "--host",
                "grpc.test",
                "--method",
                "POST",
                "--path",
                "/a.B/Call",
                "--nginx-version",
                version,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    let (text, warnings) = run("1.22.1");
    assert!(text.ends_with("=> 0\n"), "{text}");
    assert!(warnings.contains("the GRPCRoutes default/echo are not served there"), "{warnings}");
    let (text, _) = run("1.28.0");
    assert!(text.ends_with("=> 200\n"), "{text}");
}

/// Explain answers for the configuration as written: a rule the writer leaves out (a redirect
/// path past NGINX's 4,094-byte word) is not named as the winner; the request goes where
/// NGINX sends it (the next candidate, here the catch-all rule).
#[test]
fn explain_does_not_name_a_rule_the_configuration_leaves_out() {
    let dollars = "$".repeat(300);
    let yaml = format!(
        "kind: Gateway\nmetadata: {{name: gw}}\nspec:\n  listeners: [{{name: web, port: 8080, protocol: HTTP}}]\n---\nkind: HTTPRoute\nmetadata: {{name: r}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{value: /dollars}}}}]\n    filters: [{{type: RequestRedirect, requestRedirect: {{path: {{type: ReplaceFullPath, replaceFullPath: \"/{dollars}\"}}}}}}]\n  - matches: [{{path: {{value: /}}}}]\n    filters: [{{type: RequestRedirect, requestRedirect: {{path: {{type: ReplaceFullPath, replaceFullPath: /all}}}}}}]\n"
    );
    let dir = manifests("dropped", &yaml);
    let model = load(std::slice::from_ref(&dir)).unwrap();
    let o = opts((1, 28, 0));
    let r = req("any.test", "GET", "/dollars");
    // Planning alone still has the rule.
    let (text, _) = explain(&plan_for(&model, &BackendMap::new(), &o), &r);
    assert!(text.contains("winner: [0] default/r rule 0 match 0"), "{text}");
    let plan = httproute_nginx::explain::plan_as_served(&model, &BackendMap::new(), &o).unwrap();
    assert!(plan.warnings.iter().any(|w| w.contains("default/r rule 0")), "{:?}", plan.warnings);
    let (text, status) = explain(&plan, &r);
    assert!(!text.contains("rule 0"), "{text}");
    assert!(text.contains("default/r rule 1 match 0"), "{text}");
    assert_eq!(status, 302, "{text}");
}

/// Two tenants, each a Gateway with one listener and a route: a (2020) on 8080, b (2021, the
/// newest) on 8081, in `dir`; a fake NGINX there that refuses the first line holding
/// `refused`; and `explain` for rb.test on port 8081 with `extra` options: (stdout, stderr).
fn explain_beside_a_refusing_nginx(
    dir: &str,
    refused: &str,
) -> (PathBuf, PathBuf, impl Fn(&[&std::ffi::OsStr]) -> (String, String)) {
    let tenant = |ns: &str, port: u16, year: u32| {
        format!(
            "kind: Gateway\nmetadata: {{name: gw, namespace: {ns}, creationTimestamp: \"{year}-01-01T00:00:00Z\"}}\nspec:\n  listeners:\n  - {{name: {ns}, port: {port}, protocol: HTTP}}\n---\nkind: HTTPRoute\nmetadata: {{name: r{ns}, namespace: {ns}, creationTimestamp: \"{year}-01-01T00:00:00Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - filters: [{{type: RequestRedirect, requestRedirect: {{path: {{type: ReplaceFullPath, replaceFullPath: /to-r{ns}}}}}}}]\n---\n"
        )
    };
    let yaml = tenant("a", 8080, 2020) + &tenant("b", 8081, 2021);
    let yaml = yaml.as_str();
    let dir = manifests(dir, yaml);
    let nginx = dir.join("nginx");
    std::fs::write(
        &nginx,
        format!("#!/bin/sh\nline=$(grep -n -F -- '{refused}' \"$4nginx.conf\" | head -n 1 | cut -d: -f1)\nif [ -n \"$line\" ]; then echo \"2026/12/07 10:24:05 [emerg] 1#1: bind() refused in $4nginx.conf:$line\" >&2; exit 1; fi\nexit 0\n"),
    )
    .unwrap();
    std::fs::set_permissions(&nginx, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let all = dir.join("all.yaml");
    let run = move |extra: &[&std::ffi::OsStr]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_httproute-nginx"))
            .args(["explain", "-f"])
            .arg(&all)
            .args(["--host", "rb.test", "--path", "/", "--port", "8081"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    (dir, nginx, run)
}

/// `explain --nginx` checks the configuration generate writes with the same options: a fake
/// NGINX refusing `listen 127.0.0.2:8081` refuses tenant b (the newest) only when explain is given
/// `--listen-address 127.0.0.2` (before, explain had no such option and checked `listen 8081`).
#[test]
fn the_explain_command_checks_with_the_writing_options() {
    let (dir, nginx, run) =
        explain_beside_a_refusing_nginx("nginx-writing-options", "listen 127.0.0.2:8081");
    let check = ["--nginx".as_ref(), nginx.as_os_str()];
    let (text, _) = run(&check);
    assert!(text.contains("b/rb rule 0") && text.ends_with("=> 302\n"), "{text}");
    let (text, warnings) =
        run(&[&check[..], &["--listen-address".as_ref(), "127.0.0.2".as_ref()]].concat());
    assert!(text.ends_with("=> 0\n"), "{text}");
    assert!(warnings.contains("listener b/gw/b: nginx -t: bind() refused"), "{warnings}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `explain --nginx`: answers from what `generate --nginx` leaves when NGINX refuses (a fake
/// NGINX refusing port 8081's `listen`: the newest tenant b's listener and route are left
/// out): the listener's port is not listened on, its route is not answered from its old
/// server; without `--nginx`, explain does not know of the refusal.
#[test]
fn the_explain_command_answers_without_what_nginx_refuses() {
    let (dir, nginx, run) = explain_beside_a_refusing_nginx("nginx-refuses", "listen 8081");
    let (text, _) = run(&[]);
    assert!(text.contains("b/rb rule 0") && text.ends_with("=> 302\n"), "{text}");
    let (text, warnings) = run(&["--nginx".as_ref(), nginx.as_os_str()]);
    assert!(text.ends_with("=> 0\n"), "{text}");
    assert!(warnings.contains("listener b/gw/b: nginx -t: bind() refused"), "{warnings}");
    let _ = std::fs::remove_dir_all(&dir);
}
