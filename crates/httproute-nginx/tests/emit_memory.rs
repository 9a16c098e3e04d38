//! Emit's memory beyond the plan, counted (every allocation of this test binary goes through
//! `pcre2_bounded::Metered`, the module's allocator, and `alloc_meter` counts it): the peak of
//! live bytes while the configuration is written, for n and 2n routes of each shape. What is
//! left beyond the plan is one server's nodes and text, and per list and rule a key (the
//! lists' index: matches.json is sorted by key and shares identical lists) and a rule's tag.

use std::path::Path;

use httproute_nginx::model::{Inputs, load_text};
use httproute_nginx::plan::{PlanOptions, plan};
use httproute_nginx::{BackendMap, emit};

#[global_allocator]
static ALLOCATOR: pcre2_bounded::Metered = pcre2_bounded::Metered;

mod common;

/// The shapes of docs/BENCHMARKS.md's 50,000-route List, `n` routes on one listener: `One`,
/// one PathPrefix rule each on 500 hostnames; `Matches`, three rules of a path, a header and
/// a regex query parameter match; `Hostnames`, one rule each on a hostname of its own.
#[derive(Clone, Copy, Debug)]
enum Shape {
    One,
    Matches,
    Hostnames,
}

fn manifests(shape: Shape, n: usize) -> String {
    let mut y = "kind: Gateway\nmetadata: {name: gw, namespace: default}\nspec:\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n".to_owned();
    for r in 0..n {
        let host = match shape {
            Shape::Hostnames => r,
            _ => r % 500,
        };
        y += &format!(
            "---\nkind: HTTPRoute\nmetadata: {{name: route-{r}, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [h{host}.scale.test]\n  rules:\n"
        );
        let (rules, matches) = match shape {
            Shape::Matches => (
                3,
                format!(
                    "      headers: [{{name: x-tenant, value: t{r}}}]\n      queryParams: [{{name: env, type: RegularExpression, value: '^(prod|stage)$'}}]\n"
                ),
            ),
            _ => (1, String::new()),
        };
        for j in 0..rules {
            y += &format!(
                "  - matches:\n    - path: {{type: PathPrefix, value: /svc-{r}/v{j}}}\n{matches}    backendRefs: [{{name: svc-{}, port: 80}}]\n",
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
    // Tests run at once: each file its own.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = std::env::temp_dir().join(format!("emit-memory-{}-{k}-{name}", std::process::id()));
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
fn measured(shape: Shape, n: usize) -> (usize, usize, usize) {
    let backends = backends();
    let text = manifests(shape, n);
    let loading = alloc_meter::Scope::open(usize::MAX);
    let mut inputs = Inputs::default();
    load_text(Path::new("a.yaml"), &text, &mut inputs).unwrap();
    drop(text);
    let planning = alloc_meter::Scope::open(usize::MAX);
    let plan = plan(&inputs, &PlanOptions::new(&backends));
    let plan_bytes = planning.used();
    eprintln!(
        "{shape:?} {n}: model {} B/route, planning peak {} B/route, plan {} B/route",
        (loading.used() - plan_bytes) / n,
        planning.peak() / n,
        plan_bytes / n
    );
    drop(planning);
    drop(loading);
    drop(inputs);
    let opts = common::options();
    let (conf_path, mut conf) = scratch("conf");
    let (matches_path, mut matches) = scratch("matches");
    let (scratch_path, mut servers) = scratch("servers");
    let emitting = alloc_meter::Scope::open(usize::MAX);
    let streams = emit::Streams { conf: &mut conf, matches: &mut matches, scratch: &mut servers };
    let streamed = emit::emit_streamed(&plan, &opts, streams, |_| Ok(())).unwrap();
    drop(streamed);
    let peak = emitting.peak();
    drop(emitting);
    let whole = emit::emit_with(&plan, &opts, emit::Tree::Drop).unwrap();
    assert_eq!(std::fs::read_to_string(&conf_path).unwrap(), whole.nginx_conf);
    assert_eq!(std::fs::read_to_string(&matches_path).unwrap(), whole.matches_json);
    // matches.json as serde_json writes a map (sorted keys, no spaces): what it was before
    // the lists were written one by one.
    let map: serde_json::Value = serde_json::from_str(&whole.matches_json).unwrap();
    assert_eq!(serde_json::to_string(&map).unwrap() + "\n", whole.matches_json);
    let out_bytes = whole.nginx_conf.len() + whole.matches_json.len();
    for p in [conf_path, matches_path, scratch_path] {
        std::fs::remove_file(p).unwrap();
    }
    (plan_bytes, peak, out_bytes)
}

/// Emit holds neither text whole (its peak beyond the plan is below the output's bytes, and a
/// third of the plan's: a quarter until the route statuses' sets became lists), in every shape at n and 2n routes; before the writer streamed, the
/// output's two texts were alive at its end beside the lists' copies (3-shape figures: 6.8 KB a
/// route beyond a plan of 9.2 KB, for 2 KB of output).
#[test]
fn emit_holds_no_text_whole() {
    for shape in [Shape::Matches, Shape::One, Shape::Hostnames] {
        for n in [2000, 4000] {
            let (plan, emit, out) = measured(shape, n);
            eprintln!(
                "{shape:?} {n} routes: plan {} B/route, emit's peak {} B/route, output {} B/route",
                plan / n,
                emit / n,
                out / n
            );
            assert!(emit < out, "{shape:?} {n}: emit's peak {emit} B, the output {out} B");
            assert!(emit < plan / 3, "{shape:?} {n}: emit's peak {emit} B, the plan {plan} B");
        }
    }
}

/// The peak of live bytes of a whole run as the command makes it (the manifests read from a
/// file, planned, written streamed: `generate_streamed`), for `n` routes of `shape`, with
/// `--status` when `status` is given (the status written to it).
fn run_peak(shape: Shape, n: usize, status: Option<&mut dyn std::io::Write>) -> usize {
    let (path, mut file) = scratch("manifests.yaml");
    std::io::Write::write_all(&mut file, manifests(shape, n).as_bytes()).unwrap();
    drop(file);
    let backends = backends();
    let opts = common::options();
    let (scratch_path, mut servers) = scratch("run-servers");
    let (mut conf, mut matches) = (std::io::sink(), std::io::sink());
    let run = alloc_meter::Scope::open(usize::MAX);
    let streams = emit::Streams { conf: &mut conf, matches: &mut matches, scratch: &mut servers };
    let generated = httproute_nginx::generate_streamed(
        std::slice::from_ref(&path),
        &backends,
        &opts,
        status,
        streams,
    );
    assert!(generated.unwrap().status.routes.is_empty());
    let peak = run.peak();
    drop(run);
    for p in [path, scratch_path] {
        std::fs::remove_file(p).unwrap();
    }
    peak
}

/// A run's peak is the plan and one server, not the model: bytes per route the same at n and
/// 2n routes (within 5%), and at most a bound per shape: one rule a route 2,750 B, a hostname
/// each 2,850 B, three rules of a header and a regex query match 4,700 B (section 8 of
/// scripts/bench/generator-scale.sh measures the peak RSS at 50,000 routes, the allocator's
/// overhead and the List's reading on top). Measured 2,488, 2,579 and 4,166 B (4,226 B, three
/// rules, while the lists were also kept by their digest: main 8b7aad0); 3,008, 3,099
/// and 4,650 B while a route's status held a `BTreeSet` of listeners a parentRef and a
/// `BTreeMap` of its rules (main 4762b21). While the plan borrowed the model (alive through
/// the servers; main 498136f), the same runs peaked at 3,022 B (one rule), 3,352 B (a
/// hostname each) and 6,225 B (three rules) a route; before a route's names were shared, the
/// model's match types held as text, the sort key in 64-bit counts and a route's rules held to
/// the last server, at 3,179, 3,727 and 7,417 B; before the status was made only when asked
/// and planning freed what the plan does not hold, at 6.9, 7.3 and 13.9 KB.
#[test]
fn a_run_holds_the_plan_and_one_server() {
    let shapes = [Shape::Matches, Shape::One, Shape::Hostnames];
    let peaks: Vec<_> =
        shapes.map(|s| (s, run_peak(s, 2000, None) / 2000, run_peak(s, 4000, None) / 4000)).into();
    for (shape, at_n, at_2n) in &peaks {
        eprintln!("{shape:?}: a run's peak {at_n} B/route at 2,000 routes, {at_2n} at 4,000");
    }
    for (shape, at_n, at_2n) in peaks {
        assert!(at_2n * 100 <= at_n * 105, "{shape:?}: {at_n} then {at_2n} B/route");
        let bound = match shape {
            Shape::One => 2_750,
            Shape::Hostnames => 2_850,
            Shape::Matches => 4_700,
        };
        assert!(at_2n <= bound, "{shape:?}: {at_2n} B/route at 4,000 routes (at most {bound})");
    }
}

/// `--status` adds at most 1,300 B a route to a run's peak (4,000 routes: three rules 902 B,
/// one rule 770 B, a hostname each 1,207 B: the route's status itself, alive while the
/// servers are planned): the status is written before the configuration
/// and freed then, so the run never holds it beside the writer's lists, nor its text; and a
/// route's lists in it are `Vec`s, not sets and maps of a node each. On main 4762b21 (the
/// status, then its text, held to the end, a `BTreeSet` of listeners a parentRef and a
/// `BTreeMap` of rules a route): +2,160 B a route at three rules x 5,000 (heaptrack), and 416
/// against 337 MiB of RSS at 50,000 (now 331 with it). And the file is the status
/// `generate_all` returns, byte for byte.
#[test]
fn a_run_with_status_holds_it_apart_from_the_writing() {
    for shape in [Shape::Matches, Shape::One, Shape::Hostnames] {
        let without = run_peak(shape, 4000, None);
        let with = run_peak(shape, 4000, Some(&mut std::io::sink()));
        eprintln!("{shape:?}: a run's peak {without} B without --status, {with} B with it");
        let added = with.saturating_sub(without) / 4000;
        assert!(added <= 1300, "{shape:?}: {with} B with --status, {without} without");
    }
    let mut text = Vec::new();
    run_peak(Shape::Matches, 50, Some(&mut text));
    let (path, mut file) = scratch("status-manifests.yaml");
    std::io::Write::write_all(&mut file, manifests(Shape::Matches, 50).as_bytes()).unwrap();
    let whole =
        httproute_nginx::generate_all(std::slice::from_ref(&path), &backends(), &common::options())
            .unwrap();
    std::fs::remove_file(path).unwrap();
    assert!(!whole.status.routes.is_empty());
    assert_eq!(String::from_utf8(text).unwrap(), httproute_nginx::status::yaml(&whole.status));
}
