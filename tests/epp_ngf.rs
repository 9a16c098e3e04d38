//! docs/NGF.md's configuration, as NGF would write it for an HTTPRoute with a header match in
//! front of an InferencePool backend, with both of the module's directives and no njs: the
//! `http_matches` location redirects to the rule's internal location, whose `http_matches_epp`
//! asks the (fake) shim and redirects to the internal proxy location.

mod common;

use common::Nginx;
use common::epp_shim::{Mode, Server};

const RULE0: &str = "/_ngf-internal-rule0-route0";
const PROXY0: &str = "/_ngf-internal-proxy-pass-rule0-route0-backend0-inference";

fn conf(shim: &Server, echo: &Server) -> String {
    format!(
        "http_matches_load matches.json;
server {{
    listen 127.0.0.1:{{PORT}};
    location /llm {{
        set $match_key 1_0;
        http_matches;
    }}
    location {RULE0} {{
        internal;
        set $epp_internal_path {PROXY0};
        set $epp_host vllm-llama3-8b-instruct-epp.default.svc;
        set $epp_port 9002;
        http_matches_epp {shim};
    }}
    location {PROXY0} {{
        internal;
        proxy_http_version 1.1;
        proxy_set_header Connection \"\";
        proxy_pass http://$inference_workload_endpoint;
    }}
    location /_ngf-internal-rule1-route0 {{
        internal;
        proxy_pass http://{echo};
    }}
}}
",
        shim = shim.url(),
        echo = echo.endpoint(),
    )
}

const MATCHES: &str = r#"{"1_0": [
  {"headers": ["x-model:Exact:llama"], "redirectPath": "/_ngf-internal-rule0-route0"},
  {"any": true, "redirectPath": "/_ngf-internal-rule1-route0"}
]}"#;

#[test]
fn an_ngf_shaped_configuration_with_both_directives_needs_no_njs() {
    let echo = Server::echo();
    let shim = Server::shim(Mode::Endpoint(echo.endpoint()));
    let n = Nginx::start("epp-ngf", &conf(&shim, &echo), &[("matches.json", MATCHES)]);
    // No njs anywhere: not loaded by the configuration, not built into the binary.
    let conf_text = std::fs::read_to_string(n.prefix.dir.join("conf/nginx.conf")).expect("conf");
    assert!(!conf_text.contains("js_") && !conf_text.contains("ngx_http_js_module"), "{conf_text}");
    let v = std::process::Command::new(common::nginx_binary()).arg("-V").output().expect("-V");
    assert!(!String::from_utf8_lossy(&v.stderr).contains("njs"), "njs built into the NGINX");

    // The header match wins: the shim is asked, the picked endpoint answers at the internal
    // proxy location, with the client's query bytes.
    let r = n.get("/llm?p=%7e&q=a+b", &[("x-model", "llama")]);
    assert_eq!(r.status, 200, "{r:?}\n{}", n.error_log());
    let asked = shim.wait_for(1);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].header("X-EPP-Host"), Some("vllm-llama3-8b-instruct-epp.default.svc"));
    assert_eq!(asked[0].header("X-EPP-Port"), Some("9002"));
    assert_eq!(asked[0].header("x-model"), Some("llama"));
    let seen = echo.take();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].target(), format!("{PROXY0}?p=%7e&q=a+b"));
    assert!(r.body.starts_with(&format!("GET {PROXY0}?p=%7e&q=a+b HTTP/1.1\r\n")), "{r:?}");

    // No match for the header: the other rule, and the shim is not asked.
    let r = n.get("/llm", &[("x-model", "other")]);
    assert_eq!(r.status, 200, "{r:?}\n{}", n.error_log());
    assert_eq!(shim.total(), 1, "the shim was asked for a rule without an inference backend");
    assert_eq!(echo.take()[0].target(), "/_ngf-internal-rule1-route0");
    n.finish();
}
