//! Emit's memory beyond the plan, counted (every allocation of this test binary goes through
//! `pcre2_bounded::Metered`, the module's allocator, and `alloc_meter` counts it): the peak of
//! live bytes while the configuration is written, for n and 2n routes of one shape.

use std::path::Path;

use httproute_nginx::model::{Inputs, load_text};
use httproute_nginx::plan::{PlanOptions, plan};
use httproute_nginx::{BackendMap, emit};

#[global_allocator]
static ALLOCATOR: pcre2_bounded::Metered = pcre2_bounded::Metered;

mod common;

/// `n` routes of three rules, each a path, a header and a regex query parameter match, on
/// 500 hostnames of one listener (the List shape of docs/BENCHMARKS.md).
fn manifests(n: usize) -> String {
    let mut y = "kind: Gateway\nmetadata: {name: gw, namespace: default}\nspec:\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n".to_owned();
    for r in 0..n {
        y += &format!(
            "---\nkind: HTTPRoute\nmetadata: {{name: route-{r}, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [h{}.scale.test]\n  rules:\n",
            r % 500
        );
        for j in 0..3 {
            y += &format!(
                "  - matches:\n    - path: {{type: PathPrefix, value: /svc-{r}/v{j}}}\n      headers: [{{name: x-tenant, value: t{r}}}]\n      queryParams: [{{name: env, type: RegularExpression, value: '^(prod|stage)$'}}]\n    backendRefs: [{{name: svc-{}, port: 80}}]\n",
                r % 100
            );
        }
    }
    y
}

fn backends() -> BackendMap {
    (0..100).map(|s| (format!("default/svc-{s}:80"), "127.0.0.1:9".to_owned())).collect()
}

/// A new file in the temporary directory, open for reading and writing.
fn scratch(name: &str) -> (std::path::PathBuf, std::fs::File) {
    let p = std::env::temp_dir().join(format!("emit-memory-{}-{name}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&p)
        .unwrap();
    (p, f)
}

/// For `n` routes: the bytes the plan holds, and emit's peak of live bytes beyond it
/// (streamed); the streamed texts are those [`emit::emit_with`] returns, byte for byte.
fn measured(n: usize) -> (usize, usize) {
    let backends = backends();
    let mut inputs = Inputs::default();
    load_text(Path::new("a.yaml"), &manifests(n), &mut inputs).unwrap();
    let planning = alloc_meter::Scope::open(usize::MAX);
    let plan = plan(&inputs, &PlanOptions::new(&backends));
    let plan_bytes = planning.used();
    drop(planning);
    drop(inputs);
    let opts = common::options();
    let (conf_path, mut conf) = scratch("conf");
    let (matches_path, mut matches) = scratch("matches");
    let (scratch_path, mut servers) = scratch("servers");
    let emitting = alloc_meter::Scope::open(usize::MAX);
    let streams = emit::Streams { conf: &mut conf, matches: &mut matches, scratch: &mut servers };
    let streamed = emit::emit_streamed(&plan, &opts, streams).unwrap();
    drop(streamed);
    let peak = emitting.peak();
    drop(emitting);
    let whole = emit::emit_with(&plan, &opts, emit::Tree::Drop).unwrap();
    assert_eq!(std::fs::read_to_string(&conf_path).unwrap(), whole.nginx_conf);
    assert_eq!(std::fs::read_to_string(&matches_path).unwrap(), whole.matches_json);
    for p in [conf_path, matches_path, scratch_path] {
        std::fs::remove_file(p).unwrap();
    }
    (plan_bytes, peak)
}

#[test]
fn emit_memory_beyond_the_plan() {
    for n in [2000, 4000] {
        let (p, e) = measured(n);
        eprintln!(
            "{n} routes: plan {p} B ({} B/route), emit peak {e} B ({} B/route)",
            p / n,
            e / n
        );
    }
}
