//! Engine cost per evaluation: the NGF blog list (each rule winning) and long lists with the
//! winner last. `cargo bench -p route-match`.

use criterion::{BenchmarkId, Criterion, black_box, criterion_group, criterion_main};
use route_match::{MatchList, RequestView, Syntax, compile_list};

struct Req {
    method: &'static [u8],
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    query: Vec<u8>,
}

impl RequestView for Req {
    fn method(&self) -> &[u8] {
        self.method
    }
    fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.headers.iter().map(|(n, v)| (n.as_slice(), v.as_slice()))
    }
    fn query(&self) -> &[u8] {
        &self.query
    }
    fn path(&self) -> &[u8] {
        b"/coffee"
    }
}

/// A browser-like request: a handful of ordinary headers before the ones that matter.
fn req(extra: &[(&str, &str)], query: &str) -> Req {
    let mut headers: Vec<(Vec<u8>, Vec<u8>)> = [
        ("Host", "cafe.example.com"),
        ("User-Agent", "curl/8.5.0"),
        ("Accept", "*/*"),
        ("Accept-Encoding", "gzip, deflate"),
    ]
    .iter()
    .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
    .collect();
    headers.extend(extra.iter().map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec())));
    Req { method: b"GET", headers, query: query.as_bytes().to_vec() }
}

fn compile(json: &str) -> MatchList {
    compile_list(json.as_bytes(), Syntax::Auto).expect("bench list compiles").list
}

fn blog(c: &mut Criterion) {
    let list = compile(
        r#"[{"headers":["version:v2"],"redirectPath":"/coffee_v2"},
            {"params":["TEST=v2"],"redirectPath":"/coffee_v2"},
            {"any":true,"redirectPath":"/coffee_v1"}]"#,
    );
    let mut g = c.benchmark_group("blog");
    for (name, r) in [
        ("header_wins", req(&[("version", "v2")], "")),
        ("param_wins", req(&[], "TEST=v2")),
        ("any_wins", req(&[], "a=1")),
    ] {
        g.bench_function(name, |b| b.iter(|| black_box(list.evaluate(black_box(&r)))));
    }
    g.finish();
}

/// N entries, each `GET` + 2 exact headers + 1 exact param; only the last is satisfied.
fn long_list(n: usize) -> MatchList {
    let entries: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"method":"GET","headers":["x-tenant:Exact:t{i}","x-env:Exact:prod"],"params":["v=Exact={i}"],"redirectPath":"/r{i}"}}"#
            )
        })
        .collect();
    compile(&format!("[{}]", entries.join(",")))
}

fn long(c: &mut Criterion) {
    let mut g = c.benchmark_group("winner_last");
    for n in [10, 100, 1000] {
        let list = long_list(n);
        let last = n - 1;
        let r = req(&[("x-env", "prod"), ("x-tenant", &format!("t{last}"))], &format!("v={last}"));
        assert!(
            matches!(list.evaluate(&r), route_match::Outcome::Redirect { entry, .. } if entry == last)
        );
        g.bench_with_input(BenchmarkId::from_parameter(n), &r, |b, r| {
            b.iter(|| black_box(list.evaluate(black_box(r))))
        });
    }
    g.finish();
}

/// N regex-only entries (the index cannot help): the linear floor.
fn long_regex(c: &mut Criterion) {
    let mut g = c.benchmark_group("winner_last_regex");
    for n in [10, 100, 1000] {
        let entries: Vec<String> = (0..n)
            .map(|i| {
                format!(r#"{{"headers":["x-tenant:RegularExpression:^t{i}(?!.)"],"redirectPath":"/r{i}"}}"#)
            })
            .collect();
        let list = compile(&format!("[{}]", entries.join(",")));
        let r = req(&[("x-tenant", &format!("t{}", n - 1))], "");
        assert!(
            matches!(list.evaluate(&r), route_match::Outcome::Redirect { entry, .. } if entry == n - 1)
        );
        g.bench_with_input(BenchmarkId::from_parameter(n), &r, |b, r| {
            b.iter(|| black_box(list.evaluate(black_box(r))))
        });
    }
    g.finish();
}

/// N regex-only entries with literals the prefilter uses (version, tenant, user-agent and
/// path-like patterns in turn, every tenth a caseless version), the winner last: only
/// patterns whose literals occur run.
fn prefiltered_regex(c: &mut Criterion) {
    let mut g = c.benchmark_group("winner_last_regex_prefiltered");
    for n in [12, 100, 1000, 10_000] {
        let entries: Vec<String> = (0..n)
            .map(|i| {
                let cond = match i % 4 {
                    _ if i % 10 == 9 && i != n - 1 => {
                        format!(r#""headers":["x-version:RegularExpression:(?i)^v{i}-beta$"]"#)
                    }
                    0 => format!(r#""headers":["x-version:RegularExpression:^v{i}\\.[0-9]+$"]"#),
                    1 => format!(
                        r#""headers":["x-tenant:RegularExpression:^tenant-{i}(-[a-z]+)?$"]"#
                    ),
                    2 => format!(
                        r#""headers":["user-agent:RegularExpression:Mozilla/.*Build/{i}\\b"]"#
                    ),
                    _ => format!(r#""params":["p=RegularExpression=^/api/v{i}/"]"#),
                };
                format!(r#"{{{cond},"redirectPath":"/r{i}"}}"#)
            })
            .collect();
        let list = compile(&format!("[{}]", entries.join(",")));
        let r = req(
            &[("x-version", "v1.0"), ("user-agent", "Mozilla/5.0 (X11; Linux) Build/7 x")],
            &format!("p=/api/v{}/items", n - 1),
        );
        assert!(
            matches!(list.evaluate(&r), route_match::Outcome::Redirect { entry, .. } if entry == n - 1)
        );
        g.bench_with_input(BenchmarkId::from_parameter(n), &r, |b, r| {
            b.iter(|| black_box(list.evaluate(black_box(r))))
        });
    }
    g.finish();
}

/// 200 caseless entries whose literals hold `s` (U+017F is one of its spellings), the winner
/// last: only the winner's literals occur.
fn caseless_regions(c: &mut Criterion) {
    let entries: Vec<String> = (0..200)
        .map(|i| {
            format!(
                r#"{{"headers":["x-region:RegularExpression:(?i)^eu-west-{i}[a-c]$"],"redirectPath":"/r{i}"}}"#
            )
        })
        .collect();
    let list = compile(&format!("[{}]", entries.join(",")));
    let r = req(&[("x-region", "EU-West-199C")], "");
    assert!(matches!(list.evaluate(&r), route_match::Outcome::Redirect { entry: 199, .. }));
    c.bench_function("caseless_200_regions_winner_last", |b| {
        b.iter(|| black_box(list.evaluate(black_box(&r))))
    });
}

/// The same lists with a share of entries no literal can file (a lookahead: every one runs,
/// in order), the winner last: the cost is that share's attempts.
fn mixed_regex(c: &mut Criterion) {
    let mut g = c.benchmark_group("winner_last_regex_5pct_without_literals");
    for n in [100, 1000, 10_000] {
        let entries: Vec<String> = (0..n)
            .map(|i| {
                let cond = if i % 20 == 19 && i != n - 1 {
                    format!(r#""headers":["x-version:RegularExpression:^v{i}(?!x)\\."]"#)
                } else if i % 2 == 0 {
                    format!(r#""headers":["x-version:RegularExpression:^v{i}\\.[0-9]+$"]"#)
                } else {
                    format!(r#""headers":["x-tenant:RegularExpression:^tenant-{i}(-[a-z]+)?$"]"#)
                };
                format!(r#"{{{cond},"redirectPath":"/r{i}"}}"#)
            })
            .collect();
        let list = compile(&format!("[{}]", entries.join(",")));
        let r = req(&[("x-version", "v1.0"), ("x-tenant", &format!("tenant-{}", n - 1))], "");
        assert!(
            matches!(list.evaluate(&r), route_match::Outcome::Redirect { entry, .. } if entry == n - 1)
        );
        g.bench_with_input(BenchmarkId::from_parameter(n), &r, |b, r| {
            b.iter(|| black_box(list.evaluate(black_box(r))))
        });
    }
    g.finish();
}

fn regex(c: &mut Criterion) {
    let list = compile(
        r#"[{"headers":["x-re:RegularExpression:^ab+c$"],"redirectPath":"/re"},
            {"params":["re=RegularExpression=^v[0-9]+$"],"redirectPath":"/rp"}]"#,
    );
    let r = req(&[("x-re", "abbbc")], "");
    c.bench_function("regex_header_wins", |b| b.iter(|| black_box(list.evaluate(black_box(&r)))));
    let r = req(&[], "a=1&re=v12");
    c.bench_function("regex_param_wins", |b| b.iter(|| black_box(list.evaluate(black_box(&r)))));
}

/// The hostile case of tests/hostile.rs: five catastrophic patterns, four 64 KiB lines of
/// comma elements. Bounded by the default regex budget (5 ms) plus the walk over the elements.
fn hostile(c: &mut Criterion) {
    let patterns = ["^(a+)+$", "^(a|aa)+$", "^(a|a?)+$", "^(a*)*$", "^([a-z]+a?)*$"];
    let entries: Vec<String> = patterns
        .iter()
        .enumerate()
        .map(|(i, p)| {
            format!(r#"{{"headers":["x:RegularExpression:{p}"],"redirectPath":"/r{i}"}}"#)
        })
        .collect();
    let list = compile(&format!(r#"[{},{{"any":true,"redirectPath":"/any"}}]"#, entries.join(",")));
    let line = "aaaaaaaaaaaaaaaaaaaa!,".repeat(64 * 1024 / 22);
    let lines: Vec<(&str, &str)> = (0..4).map(|_| ("x", line.as_str())).collect();
    let r = req(&lines, "");
    let mut g = c.benchmark_group("hostile");
    g.sample_size(10);
    g.bench_function("5_catastrophic_x_4_lines_64k", |b| {
        b.iter(|| black_box(list.evaluate(black_box(&r))))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(std::time::Duration::from_secs(2)).warm_up_time(std::time::Duration::from_millis(500));
    targets = blog, long, long_regex, prefiltered_regex, caseless_regions, mixed_regex, regex, hostile
}
criterion_main!(benches);
