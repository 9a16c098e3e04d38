//! `generate --nginx`: the output checked by a real NGINX (the vendored one). A refusal is a gap
//! in the model: a Secret whose file NGINX names is left out; any other refusal, whatever line
//! it names, leaves out the newest tenant's objects newer than every other tenant's, once,
//! with a condition, and the older tenants are served.
//!
//! The input NGINX refuses and the generator's own checks miss is made here by leaving one
//! check out: a rule's timeout past what NGINX's time parser takes (`u64::MAX` ms; the CRD's
//! duration pattern bounds real timeouts to 366,096,438,999 ms, which NGINX takes), set in
//! the plan after validation. NGINX refuses its line ("proxy_connect_timeout" directive
//! invalid value); unchecked, that stops every listener; checked, the newest tenant's objects
//! are left out.

mod common;

use std::path::Path;

use common::{Prefix, free_port, nginx_binary};
use httproute_nginx::emit::{Output, Tree};
use httproute_nginx::plan::{ConditionType, Plan, Reason, Unit};
use httproute_nginx::{BackendMap, Options, nginx_check};

fn gateway(port: u16) -> String {
    format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: default}}\nspec:\n  listeners: [{{name: http, port: {port}, protocol: HTTP}}]\n---\n"
    )
}

/// A route on `host` whose one rule redirects `path` to /to-NAME: answered without a backend.
fn redirect_route(name: &str, host: &str, path: &str) -> String {
    format!(
        "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{host}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: \"{path}\"}}}}]\n    filters:\n    - type: RequestRedirect\n      requestRedirect: {{path: {{type: ReplaceFullPath, replaceFullPath: /to-{name}}}, statusCode: 302}}\n---\n"
    )
}

/// A route on `host` whose one rule proxies `path` to Service s with a timeout (which the
/// test then sets past NGINX's limit: [`unchecked_timeouts`]).
fn timed_route(name: &str, host: &str, path: &str) -> String {
    format!(
        "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{host}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: \"{path}\"}}}}]\n    timeouts: {{request: 10s}}\n    backendRefs: [{{name: s, port: 80}}]\n---\n"
    )
}

fn backends() -> BackendMap {
    let mut b = BackendMap::new();
    b.insert("default/s:80".into(), "127.0.0.1:9".into());
    b
}

/// The plan of `yaml`, with the timeout of every rule that has one set past what NGINX's
/// time parser takes: the check the generator would miss.
fn unchecked_timeouts(yaml: &str) -> Plan {
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(Path::new("a.yaml"), yaml, &mut inputs).unwrap();
    let mut plan = httproute_nginx::plan_for(&inputs, &backends(), &common::generator_options());
    for port in &mut plan.ports {
        for server in &mut port.servers {
            for rule in &mut server.rules {
                // Rule plans are shared by the servers of a route: this server's own copy.
                let rule = std::sync::Arc::make_mut(rule);
                if rule.timeout_ms.is_some() {
                    rule.timeout_ms = Some(u64::MAX);
                }
            }
        }
    }
    plan
}

fn checked(plan: &mut Plan, opts: &Options, out_dir: &Path) -> Result<Output, String> {
    nginx_check::emit_checked(plan, opts, Tree::Keep, &nginx_binary(), out_dir).map(|c| c.output)
}

/// The plan of `yaml` with the tests' options, and those options.
fn plan_of(yaml: &str) -> (Plan, Options) {
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(Path::new("a.yaml"), yaml, &mut inputs).unwrap();
    let opts = common::generator_options();
    (httproute_nginx::plan_for(&inputs, &backends(), &opts), opts)
}

/// A checked run that fails: its error; the output directory's nginx.conf is as it was.
fn refused_run(plan: &mut Plan, opts: &Options, nginx: &Path, tag: &str) -> String {
    let out_dir = Prefix::scratch(tag);
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(out_dir.join("nginx.conf"), "kept").unwrap();
    let e = nginx_check::emit_checked(plan, opts, Tree::Keep, nginx, &out_dir)
        .err()
        .expect("the run fails");
    assert!(e.contains("is left as it was"), "{e}");
    assert_eq!(std::fs::read_to_string(out_dir.join("nginx.conf")).unwrap(), "kept");
    e
}

/// An executable `nginx` script of `body` (after `#!/bin/sh`); `-t -q -p PREFIX/ -c
/// nginx.conf`: `$4nginx.conf` is the file checked, `$REAL` the real NGINX.
fn script_nginx(tag: &str, body: &str) -> std::path::PathBuf {
    let dir = Prefix::scratch(&format!("check-{tag}-bin"));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("nginx");
    let real = nginx_binary().display().to_string();
    std::fs::write(&bin, format!("#!/bin/sh\n{}\n", body.replace("$REAL", &real))).unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    bin
}

fn get(n: &common::Nginx, host: &str, path: &str) -> u16 {
    n.raw(format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())
        .expect("request")
        .status
}

/// `doc` (one object of namespace default naming Gateway gw) in `namespace`, created at
/// `created` (RFC 3339), its parentRef naming gw of namespace default.
fn dated(doc: String, namespace: &str, created: &str) -> String {
    doc.replacen(
        "namespace: default}",
        &format!("namespace: {namespace}, creationTimestamp: \"{created}\"}}"),
        1,
    )
    .replace("parentRefs: [{name: gw}]", "parentRefs: [{name: gw, namespace: default}]")
}

/// A line NGINX refuses (b's timeout) leaves out the newest tenant's objects newer than every
/// other tenant's (b's route), with NGINX's complaint in its status; the older tenant a, on
/// b's host too, is served. With one tenant alone, the same refusal fails the run and the
/// output directory stays as it was.
#[test]
fn a_refused_line_leaves_out_the_newest_tenant_and_the_rest_loads() {
    let port = free_port();
    let yaml = format!(
        "{}{}{}{}",
        dated_gateway(port),
        dated(redirect_route("a", "a.test", "/a"), "a", "2020-01-01T00:00:00Z"),
        dated(timed_route("b", "b.test", "/t"), "b", "2022-01-01T00:00:00Z"),
        dated(redirect_route("c", "b.test", "/c"), "a", "2021-01-01T00:00:00Z"),
    );
    let mut plan = unchecked_timeouts(&yaml);
    let opts = common::generator_options();

    // Unchecked, NGINX refuses the whole configuration.
    let plain = httproute_nginx::emit::emit(&plan, &opts).expect("written");
    let unchecked = Prefix::scratch("check-unchecked");
    httproute_nginx::write_dir(&unchecked, &plain).unwrap();
    let (ok, text) = Prefix::existing(unchecked, "nginx.conf", port).test();
    assert!(!ok && text.contains("invalid value"), "{text}");

    let out_dir = Prefix::scratch("check-out");
    let out = checked(&mut plan, &opts, &out_dir).expect("a configuration that loads");
    let dropped: Vec<String> = out.dropped.iter().map(ToString::to_string).collect();
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert!(matches!(&out.dropped[0].unit, Unit::Route(r) if r.name == "b"), "{dropped:?}");
    assert!(out.warnings.iter().any(|w| w.starts_with("gap in the model")), "{:?}", out.warnings);
    // The status says why, on b's parentRef, and only there.
    httproute_nginx::plan::dropped_from_configuration(&mut plan.status, &out.dropped);
    for route in &plan.status.routes {
        let conditions: Vec<_> = route.parents.iter().flat_map(|(_, cs)| cs).collect();
        let accepted: Vec<_> =
            conditions.iter().filter(|c| c.kind == ConditionType::Accepted).collect();
        assert_eq!(accepted.len(), 1, "{}: {conditions:?}", route.id.name);
        let a = accepted[0];
        if route.id.name == "b" {
            assert!(!a.ok && a.reason == Reason::UnsupportedValue, "{a:?}");
            assert!(a.message.starts_with("nginx -t: \"proxy_connect_timeout\""), "{a:?}");
            assert!(a.message.contains("invalid value"), "{a:?}");
        } else {
            assert!(a.ok, "{}: {conditions:?}", route.id.name);
        }
    }

    httproute_nginx::write_dir(&out_dir, &out).unwrap();
    let p = Prefix::existing(out_dir, "nginx.conf", port);
    let (ok, text) = p.test();
    assert!(ok, "{text}");
    let n = p.start();
    assert_eq!(get(&n, "a.test", "/a"), 302, "the older tenant answers");
    assert_eq!(get(&n, "b.test", "/c"), 302, "the older tenant's route on b's host answers");
    assert_eq!(get(&n, "b.test", "/t"), 404, "the newest tenant's route is left out");
    n.finish();

    // One tenant alone (every object in namespace default): the run fails, nothing is left out.
    let yaml = format!(
        "{}{}{}",
        gateway(port),
        redirect_route("a", "a.test", "/a"),
        timed_route("b", "b.test", "/t")
    );
    let e = refused_run(&mut unchecked_timeouts(&yaml), &opts, &nginx_binary(), "check-alone");
    assert!(e.contains("invalid value") && e.contains("one tenant alone is written"), "{e}");
}

/// The class #45 names: NGINX names a line of an older tenant's object (a1's redirect) that a
/// newer tenant's object makes it refuse (here: while b's route `poison` is written). a1 is
/// not left out, nor anything of tenant a: b's objects newer than a's are, and the
/// configuration loads and serves a1. Before, the line's owner (a1's rule) was left out and
/// b's routes kept.
#[test]
fn a_line_of_an_older_tenant_never_costs_it_its_object() {
    let port = free_port();
    let (mut p, opts) = plan_of(&two_tenants(port, "a1", "poison"));
    let nginx = script_nginx(
        "older-line",
        "if grep -q -- /to-poison \"$4nginx.conf\"; then line=$(grep -n -F -- /to-a1 \"$4nginx.conf\" | head -n 1 | cut -d: -f1); if [ -n \"$line\" ]; then echo \"2026/12/07 10:24:05 [emerg] 1#1: invalid value in $4nginx.conf:$line\" >&2; exit 1; fi; fi\nexec $REAL \"$@\"",
    );
    let out_dir = Prefix::scratch("check-older-line-out");
    let c = nginx_check::emit_checked(&mut p, &opts, Tree::Keep, &nginx, &out_dir)
        .expect("a configuration that loads");
    let mut dropped: Vec<String> = (c.output.dropped.iter())
        .map(|d| d.unit.route().map_or(d.to_string(), ToString::to_string))
        .collect();
    dropped.sort();
    assert_eq!(dropped, ["b/b-last", "b/poison"], "{:?}", c.output.dropped);
    httproute_nginx::write_dir(&out_dir, &c.output).unwrap();
    let server = Prefix::existing(out_dir, "nginx.conf", port).start();
    assert_eq!(get(&server, "a1.test", "/p"), 302, "the older tenant's route answers");
    assert_eq!(get(&server, "b1.test", "/p"), 404, "the newest tenant's is left out");
    server.finish();
}

/// A refusal of the run's own line (the module load_module names is not there) with one tenant
/// fails the run; more Secrets NGINX refuses than a run leaves out fail it too, one fewer are
/// all left out and it loads. The output directory is as it was, and no scratch directory is
/// left beside it.
#[test]
fn a_refusal_of_the_run_s_own_line_or_past_the_bound_leaves_the_output_as_it_was() {
    let ports = common::free_ports(2);
    let (port, tls_port) = (ports[0], ports[1]);
    let out_dir = Prefix::scratch("check-run-out");
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(out_dir.join("previous"), "kept").unwrap();

    let mut plan =
        unchecked_timeouts(&format!("{}{}", gateway(port), redirect_route("a", "a.test", "/a")));
    let opts = Options { module: "/nonexistent/m.so".into(), ..common::generator_options() };
    let e = checked(&mut plan, &opts, &out_dir).err().expect("refused");
    assert!(e.contains("one tenant alone") && e.contains("is left as it was"), "{e}");

    // k TLS listeners, each with a Secret of its own; NGINX refuses the first certificate
    // file written, naming it.
    let (crt, key) = {
        let (c, k) = common::self_signed("s.test", "*.s.test");
        (std::fs::read_to_string(c).unwrap(), std::fs::read_to_string(k).unwrap())
    };
    let secrets = |k: usize| -> (Plan, Options) {
        let mut yaml = format!(
            "kind: Gateway\nmetadata: {{name: gw, namespace: default}}\nspec:\n  listeners:\n  - {{name: http, port: {port}, protocol: HTTP}}\n"
        );
        for i in 0..k {
            yaml += &format!(
                "  - {{name: l{i}, port: {tls_port}, protocol: HTTPS, hostname: h{i}.s.test, tls: {{certificateRefs: [{{name: c{i}}}]}}}}\n"
            );
        }
        yaml += "---\n";
        for i in 0..k {
            yaml += &common::tls_secret(&format!("c{i}"), &crt, &key);
        }
        plan_of(&yaml)
    };
    let nginx = script_nginx(
        "certs",
        "f=$(grep -o 'certs/[^\";]*[.]crt' \"$4nginx.conf\" | head -n 1)\nif [ -n \"$f\" ]; then echo \"2026/12/07 10:24:05 [emerg] 1#1: cannot load certificate \\\"$4$f\\\": refused\" >&2; exit 1; fi\nexit 0",
    );
    let n = nginx_check::MAX_RETRIES + 1;
    let (mut p, opts) = secrets(n);
    let e = nginx_check::emit_checked(&mut p, &opts, Tree::Keep, &nginx, &out_dir).err();
    let e = e.expect("refused");
    assert!(e.contains(&format!("{} Secrets are left out already", n - 1)), "{e}");
    let (mut p, opts) = secrets(n - 1);
    let c = nginx_check::emit_checked(&mut p, &opts, Tree::Keep, &nginx, &out_dir).expect("loads");
    assert_eq!((c.refused_secrets.len(), c.checks), (n - 1, n));

    // The output directory is as it was, and no scratch directory is left beside it.
    assert_eq!(std::fs::read_to_string(out_dir.join("previous")).unwrap(), "kept");
    let beside: Vec<String> = std::fs::read_dir(out_dir.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(&format!(".{}.check-", out_dir.file_name().unwrap().display())))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");
}

/// A certificate for `host` that NGINX refuses: signed with SHA-1 by a CA, which OpenSSL 3
/// rates below any security level ("ca md too weak"). The generator's certificate check
/// refuses it too now; the test puts it in the plan after that check, as a check the
/// generator would miss. (crt, key).
fn sha1_signed(host: &str) -> (String, String) {
    let dir = Prefix::scratch("check-sha1");
    std::fs::create_dir_all(&dir).unwrap();
    common::certs::ca(&dir, "ca");
    common::certs::leaf(&dir, "ca", "leaf", host, "sha1");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    (read("leaf.crt"), read("leaf.key"))
}

/// A refusal NGINX names no line for, of a tenant's file: a certificate NGINX cannot load
/// (`SSL_CTX_use_certificate("PATH") failed`) is mapped by its path to the Secret it was
/// written for, and that Secret alone is left out: its listener has the condition and refuses
/// the handshake, every other listener serves.
#[test]
fn a_certificate_nginx_refuses_costs_only_its_secret() {
    let ports = common::free_ports(2);
    let (port, tls_port) = (ports[0], ports[1]);
    let (good_crt, good_key) = {
        let (c, k) = common::self_signed("good.test", "good.test");
        (std::fs::read_to_string(c).unwrap(), std::fs::read_to_string(k).unwrap())
    };
    let (weak_crt, weak_key) = sha1_signed("weak.test");
    // The generator's own check refuses it: it goes into the plan after the check.
    let check = httproute_nginx::model::check_certificate(weak_crt.as_bytes(), weak_key.as_bytes());
    assert!(check.is_err_and(|e| e.contains("ca md too weak")));
    let (fine_crt, fine_key) = {
        let (c, k) = common::self_signed("weak.test", "weak.test");
        (std::fs::read_to_string(c).unwrap(), std::fs::read_to_string(k).unwrap())
    };
    let yaml = format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: default}}\nspec:\n  listeners:\n  \
         - {{name: http, port: {port}, protocol: HTTP}}\n  \
         - {{name: good, port: {tls_port}, protocol: HTTPS, hostname: good.test, tls: {{certificateRefs: [{{name: good-cert}}]}}}}\n  \
         - {{name: weak, port: {tls_port}, protocol: HTTPS, hostname: weak.test, tls: {{certificateRefs: [{{name: weak-cert}}]}}}}\n---\n{}{}{}{}{}",
        redirect_route("a", "a.test", "/a"),
        redirect_route("g", "good.test", "/g"),
        redirect_route("w", "weak.test", "/w"),
        common::tls_secret("good-cert", &good_crt, &good_key),
        common::tls_secret("weak-cert", &fine_crt, &fine_key),
    );
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(Path::new("a.yaml"), &yaml, &mut inputs).unwrap();
    let opts = common::generator_options();
    let mut plan = httproute_nginx::plan_for(&inputs, &backends(), &opts);
    let pair = plan.secrets.get_mut("default/weak-cert").expect("the Secret is planned");
    *pair = (weak_crt.into_bytes(), weak_key.into_bytes());

    // Unchecked, NGINX refuses the whole configuration, naming no line.
    let plain = httproute_nginx::emit::emit(&plan, &opts).expect("written");
    let unchecked = Prefix::scratch("check-cert-unchecked");
    httproute_nginx::write_dir(&unchecked, &plain).unwrap();
    let (ok, text) = Prefix::existing(unchecked, "nginx.conf", port).test();
    assert!(!ok && text.contains("ca md too weak"), "{text}");

    let out_dir = Prefix::scratch("check-cert-out");
    let c = nginx_check::emit_checked(&mut plan, &opts, Tree::Keep, &nginx_binary(), &out_dir)
        .expect("a configuration that loads");
    assert_eq!(c.checks, 2, "one refusal, mapped by its path: no scratch checks");
    assert!(c.refused.is_empty() && c.output.dropped.is_empty(), "{:?}", c.refused);
    let secrets: Vec<&str> = c.refused_secrets.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(secrets, ["default/weak-cert"]);
    assert!(c.refused_secrets[0].1.contains("ca md too weak"), "{:?}", c.refused_secrets);
    assert!(!c.output.files.keys().any(|f| f.contains("weak-cert")), "{:?}", c.output.files.keys());
    let w = "listener default/gw/weak: tls.certificateRefs: Secret default/weak-cert: nginx -t: ";
    assert!(c.output.warnings.iter().any(|x| x.starts_with(w)), "{:#?}", c.output.warnings);
    // Only the weak listener's status changed.
    for l in &plan.status.listeners {
        let bad: Vec<_> = l.conditions.iter().filter(|c| !c.ok).collect();
        if l.id.name == "weak" {
            let refs = l.conditions.iter().find(|c| c.kind == ConditionType::ResolvedRefs).unwrap();
            assert!(!refs.ok && refs.reason == Reason::InvalidCertificateRef, "{refs:?}");
            assert!(refs.message.contains("ca md too weak"), "{refs:?}");
            let programmed =
                l.conditions.iter().find(|c| c.kind == ConditionType::Programmed).unwrap();
            assert!(!programmed.ok, "{programmed:?}");
        } else {
            assert!(bad.is_empty(), "{}: {bad:?}", l.id);
        }
    }

    httproute_nginx::write_dir(&out_dir, &c.output).unwrap();
    let p = Prefix::existing(out_dir, "nginx.conf", port);
    let (ok, text) = p.test();
    assert!(ok, "{text}");
    let n = p.start();
    assert_eq!(get(&n, "a.test", "/a"), 302, "the plain listener's route answers");
    assert_eq!(
        common::https_status(tls_port, "good.test", "/g"),
        Some(302),
        "the good Secret serves"
    );
    assert_eq!(
        common::https_status(tls_port, "weak.test", "/w"),
        None,
        "the refused one shakes no hands"
    );
    n.finish();
}

/// An NGINX that runs out of open files while it loads a Secret's certificate (the machine's
/// shortage) blames no Secret: the run fails, nothing is left out, the output directory is as
/// it was, and the error says it is the machine's. The complaint is NGINX 1.28's with OpenSSL 3
/// word for word as `ulimit -n 5` makes it on a configuration without `load_module` (with the
/// module, `dlopen` runs out first, so a script says it here). Review 13: the Secret was left
/// out for it, 16 of them at the most.
#[test]
fn a_machine_out_of_open_files_loading_a_certificate_leaves_no_secret_out() {
    let tls_port = free_port();
    let (crt, key) = {
        let (c, k) = common::self_signed("a.test", "a.test");
        (std::fs::read_to_string(c).unwrap(), std::fs::read_to_string(k).unwrap())
    };
    let yaml = format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: default}}\nspec:\n  listeners:\n  \
         - {{name: tls, port: {tls_port}, protocol: HTTPS, hostname: a.test, tls: {{certificateRefs: [{{name: c}}]}}}}\n---\n{}{}",
        redirect_route("a", "a.test", "/a"),
        common::tls_secret("c", &crt, &key),
    );
    let nginx = script_nginx(
        "emfile",
        "f=$4$(grep -o 'certs/[^\";]*[.]crt' \"$4nginx.conf\" | head -n 1)\n\
         if [ \"$f\" != \"$4\" ]; then echo \"2026/12/07 10:24:05 [emerg] 1#1: cannot load certificate \\\"$f\\\": \
         BIO_new_file() failed (SSL: error:80000018:system library::Too many open files:calling \
         fopen($f, r) error:10080002:BIO routines::system lib)\" >&2; exit 1; fi\nexec $REAL \"$@\"",
    );
    let (mut plan, opts) = plan_of(&yaml);
    let e = refused_run(&mut plan, &opts, &nginx, "check-emfile-out");
    assert!(e.contains("system library") && e.contains("the machine, not the Secret"), "{e}");
    assert!(plan.secrets.contains_key("default/c"), "the Secret is kept in the plan");
    // The real NGINX loads the same configuration: the Secret was never the cause.
    let (mut plan, opts) = plan_of(&yaml);
    let out = Prefix::scratch("check-emfile-real");
    let c = nginx_check::emit_checked(&mut plan, &opts, Tree::Keep, &nginx_binary(), &out);
    assert!(c.expect("loads").refused_secrets.is_empty());
}

/// An NGINX that refuses, naming no line, every configuration where `marker` is written (as
/// NGINX reports a hash it cannot build or a variable it does not know: "could not build
/// ..._hash", at `nginx.conf:0` or without a place), and otherwise is the real one: the
/// generator cannot map it to a line or a file, so it finds the object by leaving out half the
/// objects in scratch checks. `always`: it refuses every configuration.
fn refusing_nginx(tag: &str, marker: &str, always: bool) -> std::path::PathBuf {
    let refuse = "echo '2026/12/07 10:24:05 [emerg] 1#1: could not build variables_hash, you should increase \
                  variables_hash_bucket_size: 64' >&2; exit 1";
    script_nginx(
        tag,
        &match always {
            true => refuse.to_owned(),
            false => format!(
                "if grep -q -- '{marker}' \"$4nginx.conf\"; then {refuse}; fi\nexec $REAL \"$@\""
            ),
        },
    )
}

/// The Gateway `gw` of namespace default on `port`, dated 2019 (older than every route),
/// admitting routes of every namespace.
fn dated_gateway(port: u16) -> String {
    gateway(port)
        .replace("protocol: HTTP}", "protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}")
        .replace(
            "namespace: default}",
            "namespace: default, creationTimestamp: \"2019-01-01T00:00:00Z\"}",
        )
}

/// Tenant a's routes a0..a3 (2020) and a-late (2022), tenant b's b-early (2021) and its two
/// newest, `b_newest` (2023) and b-last (2024); a's a1 redirects /p to /to-`a_poison`.
fn two_tenants(port: u16, a_poison: &str, b_newest: &str) -> String {
    let mut yaml = dated_gateway(port);
    for i in 0..4 {
        let name = if i == 1 { a_poison.to_owned() } else { format!("a{i}") };
        yaml += &dated_route("a", &name, "2020-01-01T00:00:00Z", &format!("a{i}.test"), "/p");
    }
    yaml += &dated_route("b", "b-early", "2021-01-01T00:00:00Z", "b0.test", "/p");
    yaml += &dated_route("a", "a-late", "2022-01-01T00:00:00Z", "a9.test", "/p");
    yaml += &dated_route("b", b_newest, "2023-01-01T00:00:00Z", "b1.test", "/p");
    yaml += &dated_route("b", "b-last", "2024-01-01T00:00:00Z", "b2.test", "/p");
    yaml
}

/// A refusal without a line or a file is a gap in the model, logged as such: the newest
/// tenant's objects newer than every other tenant's (b's two newest routes, not b-early, which
/// is older than a's a-late) are left out at once and the configuration checked once more:
/// two checks, whatever the number of objects. A refusal that stays is the run's: the output
/// directory is not touched. (Before: bisection, 1 + ceil(log2 n) checks more.)
#[test]
fn a_refusal_without_a_line_leaves_out_the_newest_tenant_s_suffix_and_checks_once_more() {
    let port = free_port();
    let yaml = two_tenants(port, "a1", "poison");
    let (mut p, opts) = plan_of(&yaml);
    let out_dir = Prefix::scratch("check-gap-out");
    let nginx = refusing_nginx("gap", "/to-poison", false);
    let c = nginx_check::emit_checked(&mut p, &opts, Tree::Keep, &nginx, &out_dir)
        .expect("a configuration that loads");
    assert_eq!(c.checks, 2, "one check, one decision, one check more");
    let mut dropped: Vec<String> =
        c.output.dropped.iter().filter_map(|d| Some(d.unit.route()?.to_string())).collect();
    dropped.sort();
    assert_eq!(dropped, ["b/b-last", "b/poison"], "{:?}", c.output.dropped);
    assert!(c.output.dropped.iter().all(|d| d.message.contains("could not build variables_hash")
        && d.message.contains("a gap in the model")));
    let gap = c.output.warnings.iter().filter(|w| w.starts_with("gap in the model")).count();
    assert_eq!(gap, 1, "{:?}", c.output.warnings);
    httproute_nginx::plan::dropped_from_configuration(&mut p.status, &c.output.dropped);
    for route in &p.status.routes {
        let accepted = route
            .parents
            .iter()
            .flat_map(|(_, cs)| cs)
            .find(|c| c.kind == ConditionType::Accepted)
            .unwrap();
        let kept = !["poison", "b-last"].contains(&route.id.name.as_str());
        assert_eq!(accepted.ok, kept, "{}: {accepted:?}", route.id.name);
    }
    httproute_nginx::write_dir(&out_dir, &c.output).unwrap();
    let prefix = Prefix::existing(out_dir.clone(), "nginx.conf", port);
    let (ok, text) = prefix.test();
    assert!(ok, "{text}");
    let server = prefix.start();
    for host in ["a0", "a1", "a2", "a3", "a9", "b0"] {
        assert_eq!(get(&server, &format!("{host}.test"), "/p"), 302, "{host} answers");
    }
    assert_eq!(get(&server, "b1.test", "/p"), 404, "the newest tenant's suffix is left out");
    server.finish();

    // Refused whatever is left out: the run fails after one decision; the directory stays.
    let always = refusing_nginx("always", "", true);
    let e = refused_run(&mut plan_of(&yaml).0, &opts, &always, "check-gap-kept");
    assert!(e.contains("a gap in the model"), "{e}");
}

/// #45 point 3: a refusal naming no line that an older tenant's object causes (a's a1,
/// 2020) never leaves that object out, nor any object of a: b's newest objects are left out,
/// the refusal stays, and the run fails with the output directory untouched. Before, the
/// bisection found a's route and left it out.
#[test]
fn an_older_tenant_s_object_is_never_left_out_by_a_refusal_naming_no_line() {
    let port = free_port();
    let (mut plan, opts) = plan_of(&two_tenants(port, "poison", "b1"));
    let nginx = refusing_nginx("older", "/to-poison", false);
    let e = refused_run(&mut plan, &opts, &nginx, "check-older-kept");
    assert!(
        e.contains("could not build variables_hash") && e.contains("a gap in the model"),
        "{e}"
    );
}

/// With one tenant alone written (the Gateway and its routes in one namespace), a refusal
/// naming no line leaves nothing out: leaving out all of it would install an empty
/// configuration; the run fails and the current one stays. (Before this rule, the newest
/// tenant's suffix was every object it had: a configuration that serves nothing.)
#[test]
fn a_refusal_naming_no_line_with_one_tenant_alone_fails_the_run() {
    let port = free_port();
    let mut yaml = gateway(port);
    for i in 0..3 {
        yaml += &redirect_route(&format!("r{i}"), &format!("r{i}.test"), "/p");
    }
    let (mut plan, opts) = plan_of(&yaml);
    let nginx = refusing_nginx("alone", "/to-r1", false);
    let e = refused_run(&mut plan, &opts, &nginx, "check-alone-kept");
    assert!(e.contains("one tenant alone is written"), "{e}");
}

/// Tenants are the namespaces whose routes are written: a platform Gateway in a namespace of
/// its own is no tenant. With one app namespace, a refusal naming no line fails the run (the
/// current configuration stays); with two, the newest app's routes are left out, never the
/// platform's Gateway, however new. Before, the Gateway counted as a second tenant: the one
/// app lost every route (and the configuration served nothing), or, the Gateway being the
/// newest object, the Gateway itself was left out and every app with it.
#[test]
fn a_platform_gateway_in_a_namespace_of_its_own_is_no_tenant() {
    let port = free_port();
    let platform = |created: &str| {
        dated_gateway(port)
            .replace("namespace: default,", "namespace: infra,")
            .replace("2019-01-01T00:00:00Z", created)
    };
    let route = |ns: &str, name: &str, created: &str| {
        dated_route(ns, name, created, &format!("{name}.test"), "/p")
            .replace("namespace: default}]", "namespace: infra}]")
    };
    let mut yaml = platform("2019-01-01T00:00:00Z");
    for (i, d) in ["2020", "2021", "2022"].iter().enumerate() {
        yaml += &route("app", &format!("r{i}"), &format!("{d}-01-01T00:00:00Z"));
    }
    let (mut plan, opts) = plan_of(&yaml);
    let nginx = refusing_nginx("platform", "/to-r1", false);
    let e = refused_run(&mut plan, &opts, &nginx, "check-platform-kept");
    assert!(e.contains("one tenant alone is written"), "{e}");

    let mut yaml = platform("2025-01-01T00:00:00Z");
    yaml += &route("a", "a0", "2020-01-01T00:00:00Z");
    yaml += &route("b", "b0", "2021-01-01T00:00:00Z");
    let (mut plan, opts) = plan_of(&yaml);
    let nginx = refusing_nginx("platform-new", "/to-b0", false);
    let out_dir = Prefix::scratch("check-platform-out");
    let c = nginx_check::emit_checked(&mut plan, &opts, Tree::Keep, &nginx, &out_dir)
        .expect("a configuration that loads");
    let dropped: Vec<String> = c.output.dropped.iter().map(|d| format!("{:?}", d.unit)).collect();
    assert!(
        dropped.len() == 1 && matches!(&c.output.dropped[0].unit, Unit::Route(r) if r.name == "b0"),
        "{dropped:?}"
    );
}

/// A Secret given as the exact bytes `crt`, `key` (YAML double-quoted strings).
fn exact_secret(name: &str, crt: &str, key: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}, namespace: default}}\ntype: kubernetes.io/tls\n\
         stringData:\n  tls.crt: {crt:?}\n  tls.key: {key:?}\n---\n"
    )
}

/// PEM framing the in-process check reads (leading white space, tabs, CRLF, text between
/// blocks) is written as the check read it: a plain `generate` (no `--nginx`) loads in
/// NGINX and every such Secret's listener serves. Before, the bytes were written as given
/// and `nginx -t` refused the whole configuration (PEM_read_bio finds no BEGIN line).
#[test]
fn a_secret_the_check_passes_loads_in_nginx_whatever_its_pem_framing() {
    let ports = common::free_ports(2);
    let (port, tls_port) = (ports[0], ports[1]);
    let (crt, key) = {
        let (c, k) = common::self_signed("*.pem.test", "*.pem.test");
        (std::fs::read_to_string(c).unwrap(), std::fs::read_to_string(k).unwrap())
    };
    let lines = |t: &str, f: fn(&str) -> String| t.lines().map(f).collect::<String>();
    let framed = |name: &str, t: &str| match name {
        "spaces" => lines(t, |l| format!("  {l}\n")),
        "tabs" => lines(t, |l| format!("\t{l} \n")),
        "crlf" => lines(t, |l| format!("{l}\r\n")),
        _ => format!("\n  Bag Attributes\n  subject=/CN=x\n\n {t}"),
    };
    let variants = ["spaces", "tabs", "crlf", "text"];
    let mut listeners = String::new();
    let mut objects = String::new();
    for name in variants {
        listeners.push_str(&format!(
            "  - {{name: {name}, port: {tls_port}, protocol: HTTPS, hostname: {name}.pem.test, \
             tls: {{certificateRefs: [{{name: {name}-cert}}]}}}}\n"
        ));
        objects.push_str(&redirect_route(name, &format!("{name}.pem.test"), "/p"));
        objects.push_str(&exact_secret(
            &format!("{name}-cert"),
            &framed(name, &crt),
            &framed(name, &key),
        ));
    }
    let yaml = format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: default}}\nspec:\n  listeners:\n  \
         - {{name: http, port: {port}, protocol: HTTP}}\n{listeners}---\n{objects}"
    );
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(Path::new("a.yaml"), &yaml, &mut inputs).unwrap();
    assert!(inputs.bad_secrets.is_empty(), "the check passes them: {:?}", inputs.bad_secrets);
    let opts = common::generator_options();
    let plan = httproute_nginx::plan_for(&inputs, &backends(), &opts);
    let out = httproute_nginx::emit::emit(&plan, &opts).expect("written");
    let dir = Prefix::scratch("pem-framing");
    httproute_nginx::write_dir(&dir, &out).unwrap();
    let p = Prefix::existing(dir, "nginx.conf", port);
    let (ok, text) = p.test();
    assert!(ok, "nginx -t:\n{text}");
    let n = p.start();
    for name in variants {
        let host = format!("{name}.pem.test");
        assert_eq!(common::https_status(tls_port, &host, "/p"), Some(302), "{name} serves");
    }
    n.finish();
}

/// A route of `namespace` created at `created` (RFC 3339) redirecting `path` on `host`.
fn dated_route(namespace: &str, name: &str, created: &str, host: &str, path: &str) -> String {
    dated(redirect_route(name, host, path), namespace, created)
}

/// A refusal NGINX names no line for that two tenants' objects make together (a hash both
/// fill): the newest one (creationTimestamp) is left out, never the older tenant's, whatever
/// the written order (the older tenant's namespace and host are written first).
#[test]
fn a_refusal_without_a_line_leaves_out_the_newest_object_not_the_first_written() {
    let port = free_port();
    // Every object dated (an undated one counts as the newest): the Gateway is the oldest.
    let mut yaml = dated_gateway(port);
    yaml += &dated_route("a", "old", "2020-01-01T00:00:00Z", "a.test", "/p");
    yaml += &dated_route("b", "mid", "2022-01-01T00:00:00Z", "b.test", "/p");
    yaml += &dated_route("c", "new", "2024-01-01T00:00:00Z", "c.test", "/p");
    let (mut plan, opts) = plan_of(&yaml);
    let nginx = script_nginx(
        "newest",
        "if grep -q -- /to-old \"$4nginx.conf\" && grep -q -- /to-new \"$4nginx.conf\"; \
         then echo '2026/12/07 10:24:05 [emerg] 1#1: could not build variables_hash' >&2; exit 1; fi\nexec $REAL \"$@\"",
    );
    let out_dir = Prefix::scratch("check-newest-out");
    let c = nginx_check::emit_checked(&mut plan, &opts, Tree::Keep, &nginx, &out_dir)
        .expect("a configuration that loads");
    let owners: Vec<String> = c
        .output
        .dropped
        .iter()
        .map(|d| d.unit.route().map_or(d.to_string(), ToString::to_string))
        .collect();
    assert!(!owners.is_empty() && owners.iter().all(|o| o == "c/new"), "{owners:?}");
    httproute_nginx::write_dir(&out_dir, &c.output).unwrap();
    let prefix = Prefix::existing(out_dir, "nginx.conf", port);
    let server = prefix.start();
    assert_eq!(get(&server, "a.test", "/p"), 302, "the oldest tenant serves");
    assert_eq!(get(&server, "b.test", "/p"), 302, "the tenant in between serves");
    assert_eq!(get(&server, "c.test", "/p"), 404, "the newest is left out");
    server.finish();
}
