//! A tenant object's failure is confined to it: a CRD-valid value that NGINX cannot take
//! leaves out the rule or match it is in, with a warning and a `PartiallyInvalid` condition on
//! its route, and everything else is written as it would be without it.

mod common;

use std::path::PathBuf;

use httproute_nginx::{BackendMap, Options, generate_all};

fn opts() -> Options {
    common::options()
}

fn backends() -> BackendMap {
    let mut m = BackendMap::new();
    m.insert("default/s:80".into(), "127.0.0.1:9".into());
    m
}

/// Writes `yaml` into a fresh directory named after `tag`.
fn dir_with(tag: &str, yaml: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hr-confine-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), yaml).unwrap();
    dir
}

const GW: &str = "kind: Gateway\nmetadata: {name: gw, namespace: default}\nspec:\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n---\n";

fn route(name: &str, rules: &str) -> String {
    format!(
        "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n{rules}---\n"
    )
}

/// A rule with path prefix `p`, backend s:80 and `extra` (filters) YAML lines.
fn rule(p: &str, extra: &str) -> String {
    format!(
        "  - matches: [{{path: {{type: PathPrefix, value: \"{p}\"}}}}]\n{extra}    backendRefs: [{{name: s, port: 80}}]\n"
    )
}

/// The values of the attack in issue #29 that stopped every tenant's configuration.
fn hostile_rules() -> Vec<(&'static str, String)> {
    let dollars = format!("/{}", "$".repeat(300));
    let allow: Vec<String> =
        (0..40).map(|i| format!("\"x-allow-{i:02}-{}\"", "a".repeat(240))).collect();
    vec![
        (
            "a redirect path of $ signs past NGINX's word",
            format!(
                "  - matches: [{{path: {{type: PathPrefix, value: /dollars}}}}]\n    filters:\n    - type: RequestRedirect\n      requestRedirect: {{path: {{type: ReplaceFullPath, replaceFullPath: \"{dollars}\"}}}}\n"
            ),
        ),
        (
            "a CORS allowHeaders list past NGINX's word",
            rule(
                "/cors",
                &format!(
                    "    filters:\n    - type: CORS\n      cors: {{allowOrigins: [\"https://a.example\"], allowHeaders: [{}]}}\n",
                    allow.join(", ")
                ),
            ),
        ),
        (
            "a response header value past NGINX's word",
            rule(
                "/resp",
                &format!(
                    "    filters:\n    - type: ResponseHeaderModifier\n      responseHeaderModifier: {{set: [{{name: x-big, value: \"{}\"}}]}}\n",
                    "\\\"".repeat(2100)
                ),
            ),
        ),
    ]
}

#[test]
fn values_nginx_cannot_take_drop_their_rule_only() {
    let good = route(
        "good",
        &format!(
            "{}  - matches: [{{path: {{type: Exact, value: \"/odd%C2%85\"}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n",
            rule(
                "/good",
                "    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier: {set: [{name: x-tab, value: \"a\\tb\"}]}\n"
            )
        ),
    );
    for (what, bad) in hostile_rules() {
        let rules = format!("{bad}{}", rule("/fine", ""));
        let dir = dir_with("drop", &format!("{GW}{good}{}", route("bad", &rules)));
        let g =
            generate_all(&[dir], &backends(), &opts()).unwrap_or_else(|e| panic!("{what}: {e}"));
        let conf = &g.output.nginx_conf;
        assert_eq!(httproute_nginx::conf_reader::read(conf).unwrap(), g.output.tree, "{what}");
        // The good route is written, its tab as `\t` and its U+0085 as the bytes.
        assert!(conf.contains("proxy_set_header x-tab \"a\\tb\";"), "{what}: {conf}");
        assert!(conf.contains("location = \"/odd\u{85}\""), "{what}: {conf}");
        // The bad rule is not served; the bad route's other rule is.
        let dropped: Vec<String> = g.output.dropped.iter().map(ToString::to_string).collect();
        assert_eq!(dropped.len(), 1, "{what}: {dropped:?}");
        assert!(dropped[0].starts_with("default/bad rule 0: "), "{what}: {dropped:?}");
        assert!(dropped[0].contains("NGINX takes at most 4094"), "{what}: {dropped:?}");
        assert!(
            g.warnings
                .iter()
                .any(|w| w.starts_with("default/bad rule 0: ")
                    && w.ends_with("the rule is not served")),
            "{what}: {:?}",
            g.warnings
        );
        // The dropped rule's locations answer 404; the same route's other rule is served.
        let bad_path =
            ["/dollars", "/cors", "/resp"].into_iter().find(|p| conf.contains(*p)).unwrap();
        assert!(
            conf.contains(&format!("location = \"{bad_path}\" {{ return 404; }}")),
            "{what}: {conf}"
        );
        assert!(
            conf.lines().any(|l| l.contains("location = \"/fine\"") && l.contains("http_matches")),
            "{what}: {conf}"
        );
        let status = httproute_nginx::status::yaml(&g.status);
        assert!(status.contains("type: PartiallyInvalid"), "{what}: {status}");
        assert!(status.contains("Dropped Rule 0: "), "{what}: {status}");
        assert_eq!(status.matches("PartiallyInvalid").count(), 1, "{what}: {status}");
    }
}

/// A location path NGINX cannot take leaves out that match only (the plan is changed here: the
/// CRD bounds a path to 1,024 bytes of its own characters): the rule's other match is served.
#[test]
fn a_path_nginx_cannot_take_drops_its_match_only() {
    use httproute_nginx::plan::Loc;
    let rules = "  - matches: [{path: {type: Exact, value: /gone}}, {path: {type: PathPrefix, value: /short}}]\n    backendRefs: [{name: s, port: 80}]\n";
    let mut inputs = httproute_nginx::model::Inputs::default();
    let yaml = format!("{GW}{}", route("r", rules));
    httproute_nginx::model::load_text(std::path::Path::new("a.yaml"), &yaml, &mut inputs).unwrap();
    let b = backends();
    let mut plan =
        httproute_nginx::plan::plan(&inputs, &httproute_nginx::plan::PlanOptions::new(&b));
    let server = &mut plan.ports[0].servers[0];
    let gone = server.locations.iter_mut().find(|l| l.loc == Loc::Exact("/gone".into())).unwrap();
    gone.loc = Loc::Exact("/gone\n".into());
    gone.edit_candidates(|c| c.path = "/gone\n".into());
    // The plan changed: its words are judged again.
    plan.refused = httproute_nginx::plan::word_refusals(&plan.ports);
    let out = httproute_nginx::emit::emit(&plan, &opts()).unwrap();
    let dropped: Vec<String> = out.dropped.iter().map(ToString::to_string).collect();
    assert_eq!(
        dropped,
        [
            "default/r rule 0: match 0: HTTPRoute spec.rules[].matches[].path.value: \"/gone\\n\" holds the control character U+000A, which nginx.conf cannot hold as data"
        ]
    );
    assert!(out.nginx_conf.contains("location \"/short/\""), "{}", out.nginx_conf);
    assert!(!out.nginx_conf.contains("/gone"), "{}", out.nginx_conf);
    httproute_nginx::plan::dropped_from_configuration(&mut plan.status, &out.dropped);
    let status = httproute_nginx::status::yaml(&plan.status);
    assert!(status.contains("Dropped Rule 0: match 0: "), "{status}");
}

/// A newline in a backendRef name (the CRD bounds only its length) writes no line of the
/// author's choosing where the generator prints: the escaped warning is one line.
#[test]
fn printed_messages_escape_what_they_quote() {
    let rules = "  - matches: [{path: {type: PathPrefix, value: /x}}]\n    backendRefs: [{name: \"s\\nhttproute-nginx: error: forged\\u0085x\", port: 80}]\n";
    let dir = dir_with("escape", &format!("{GW}{}", route("r", rules)));
    let g = generate_all(&[dir], &backends(), &opts()).unwrap();
    let printed: Vec<String> =
        g.warnings.iter().map(|w| httproute_nginx::escape_message(w)).collect();
    assert!(
        g.warnings.iter().any(|w| w.contains("\nhttproute-nginx: error: forged")),
        "{:?}",
        g.warnings
    );
    for p in &printed {
        assert!(!p.chars().any(|c| c.is_control()), "{p:?}");
    }
    assert!(
        printed.iter().any(|p| p.contains("s\\nhttproute-nginx: error: forged\\u{85}x")),
        "{printed:?}"
    );
    let status = httproute_nginx::status::yaml(&g.status);
    assert!(!status.contains("\nhttproute-nginx"), "{status}");
}

/// Manifests whose header names fill NGINX's header hashes: a GRPCRoute's (fixed 64-byte
/// buckets), an HTTPRoute's response header names (proxy_headers_hash).
fn header_hash_manifests(name_len: usize) -> String {
    let name = format!("x-{}", "n".repeat(name_len - 2));
    format!(
        "{GW}kind: GRPCRoute\nmetadata: {{name: g, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [g.test]\n  rules:\n  - matches: [{{method: {{service: a.B}}}}]\n    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier: {{set: [{{name: {name}, value: v}}]}}\n    backendRefs: [{{name: s, port: 80}}]\n  - matches: [{{method: {{service: a.C}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n---\n{}",
        route(
            "h",
            &rule(
                "/h",
                &format!(
                    "    filters:\n    - type: ResponseHeaderModifier\n      responseHeaderModifier: {{set: [{{name: {name}, value: v}}], remove: [{name}-r]}}\n"
                )
            )
        )
        .replace("  rules:\n", "  hostnames: [h.test]\n  rules:\n")
    )
}

#[test]
fn header_names_past_the_header_hashes_are_held_or_dropped() {
    let dir = dir_with("hash", &header_hash_manifests(50));
    let g = generate_all(&[dir], &backends(), &opts()).unwrap();
    let dropped: Vec<String> = g.output.dropped.iter().map(ToString::to_string).collect();
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert!(dropped[0].starts_with("default/g rule 0: header name"), "{dropped:?}");
    let conf = &g.output.nginx_conf;
    assert!(conf.contains("proxy_headers_hash_bucket_size 128;"), "{conf}");
    assert!(conf.contains("/a.C"), "the GRPCRoute's other rule is served: {conf}");
    // 46 bytes fit the grpc module's buckets.
    let g = generate_all(&[dir_with("hash46", &header_hash_manifests(46))], &backends(), &opts())
        .unwrap();
    assert!(g.output.dropped.is_empty(), "{:?}", g.output.dropped);
}
