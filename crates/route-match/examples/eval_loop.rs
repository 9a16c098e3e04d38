//! Evaluates one benchmark case N times, for instruction counts that do not depend on the
//! machine's load: `scripts/bench/engine-callgrind.sh` runs it in callgrind with two values of N
//! and divides the difference by their difference (start-up and compile costs cancel out).
//!
//! usage: eval_loop CASE N   (CASE: header, param, any, regex_header, caseless_200, mixed_1000)

use std::hint::black_box;

use route_match::{MatchList, Outcome, Syntax, compile_list};

#[path = "../tests/common/mod.rs"]
mod common;

use common::Req;

/// A GET of /coffee with these header lines.
fn get(lines: &[(&str, &str)], query: &str) -> Req {
    lines.iter().fold(Req::new("GET").p("/coffee").quiet().q(query), |r, (n, v)| r.h(n, v))
}

/// The request of `benches/evaluate.rs`: a few ordinary headers before the ones that matter.
fn req(extra: &[(&str, String)], query: &str) -> Req {
    let mut lines = vec![
        ("Host", "cafe.example.com"),
        ("User-Agent", "curl/8.5.0"),
        ("Accept", "*/*"),
        ("Accept-Encoding", "gzip, deflate"),
    ];
    lines.extend(extra.iter().map(|(n, v)| (*n, v.as_str())));
    get(&lines, query)
}

const BLOG: &str = r#"[{"headers":["version:v2"],"redirectPath":"/coffee_v2"},
    {"params":["TEST=v2"],"redirectPath":"/coffee_v2"},
    {"any":true,"redirectPath":"/coffee_v1"}]"#;

fn case(name: &str) -> Option<(String, Req, usize)> {
    let blog = |r| Some((BLOG.to_owned(), r, 0));
    match name {
        "header" => blog(req(&[("version", "v2".into())], "")).map(|(l, r, _)| (l, r, 0)),
        "param" => blog(req(&[], "TEST=v2")).map(|(l, r, _)| (l, r, 1)),
        "any" => blog(req(&[], "a=1")).map(|(l, r, _)| (l, r, 2)),
        "regex_header" => Some((
            r#"[{"headers":["x-re:RegularExpression:^ab+c$"],"redirectPath":"/re"},
                {"params":["re=RegularExpression=^v[0-9]+$"],"redirectPath":"/rp"}]"#
                .to_owned(),
            req(&[("x-re", "abbbc".into())], ""),
            0,
        )),
        "caseless_200" => {
            let entries: Vec<String> = (0..200)
                .map(|i| {
                    format!(
                        r#"{{"headers":["x-region:RegularExpression:(?i)^eu-west-{i}[a-c]$"],"redirectPath":"/r{i}"}}"#
                    )
                })
                .collect();
            Some((
                format!("[{}]", entries.join(",")),
                req(&[("x-region", "EU-West-199C".into())], ""),
                199,
            ))
        }
        // scripts/bench/bench.py's mixed_regex_list(1000) and MIXED_REQUEST, as bench.py sends it.
        "mixed_1000" => {
            let entries: Vec<String> = (0..1000)
                .map(|i| {
                    let cond = match i % 5 {
                        0 => format!(r"x-tenant:RegularExpression:^tenant-{i}(-[a-z]+)?$"),
                        1 => format!(r"x-version:RegularExpression:^v{i}\\.[0-9]+$"),
                        2 => format!(r"user-agent:RegularExpression:Mozilla/.*Build/{i}\\b"),
                        3 => format!(r"x-id:RegularExpression:^id-{i:04x}[0-9a-f]{{4}}$"),
                        _ => format!(r"x-region:RegularExpression:(?i)^eu-west-{i}[a-c]$"),
                    };
                    format!(r#"{{"headers":["{cond}"],"redirectPath":"/r{i}"}}"#)
                })
                .collect();
            // Exactly the request bench.py sends: its Host line, then MIXED_REQUEST's headers
            // (no other User-Agent line before the one that matters).
            let r = get(
                &[
                    ("Host", "bench"),
                    ("x-tenant", "tenant-none"),
                    ("x-version", "v1000.0"),
                    ("user-agent", "Mozilla/5.0 (X11; Linux) Build/99999 x"),
                    ("x-id", "id-ffff0000"),
                    ("x-region", "EU-West-999C"),
                ],
                "",
            );
            Some((format!("[{}]", entries.join(",")), r, 999))
        }
        _ => None,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(name), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<usize>().ok()))
    else {
        eprintln!("usage: eval_loop CASE N");
        std::process::exit(2);
    };
    let Some((json, r, winner)) = case(name) else {
        eprintln!("eval_loop: unknown case {name}");
        std::process::exit(2);
    };
    let list: MatchList = match compile_list(json.as_bytes(), Syntax::Auto) {
        Ok(c) => c.list,
        Err(e) => {
            eprintln!("eval_loop: {e}");
            std::process::exit(1);
        }
    };
    match list.evaluate(&r) {
        Outcome::Redirect { entry, .. } if entry == winner => {}
        other => {
            eprintln!("eval_loop: {name}: expected entry {winner} to win, got {other:?}");
            std::process::exit(1);
        }
    }
    for _ in 0..n {
        black_box(list.evaluate(black_box(&r)));
    }
}
