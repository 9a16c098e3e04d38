//! The attack cases of issue #30 on the engine alone, for instruction counts under callgrind
//! (`scripts/bench/engine-callgrind.sh` with `EVAL_LOOP` pointing here): a case evaluated N times.
//!
//! usage: attack_loop CASE N
//!   store_10, store_10000   the same indexed regex list winning, in a file of 10 or 10,000 lists
//!   hpack_comma             `^v[0-9]+$`, 7 lines of one 4 KB `va,va,...` value (HPACK refs)
//!   joined_cookie           `^(a+)+$`, one 11.7 KB cookie line (3 joined 3.9 KB cookies),
//!                           the regex result cache on (1 MiB, the module's default)
//!   short_repeat            `^(a+)+$` on a 25-byte header value (a cache hit on a short
//!                           subject each time, the regex result cache on)
//!   names_1700              1,700 header lines against a list indexed on 100 header names
//!   attempts_17000          17 regex entries on 1,001 distinct subjects (a line and its comma
//!                           elements), each attempt 1 step; the 18th entry wins
//!
//! Each case prints the outcome of its first evaluation to stderr (routing, for the report).

use std::hint::black_box;

use route_match::{MatchList, regex_cache};

#[path = "../tests/common/mod.rs"]
mod common;

use common::{Req, list, tenant_file};

/// A GET of /coffee with these header lines.
fn req(lines: Vec<(String, String)>) -> Req {
    lines.iter().fold(Req::new("GET").p("/coffee").quiet(), |r, (n, v)| r.h(n, v))
}

fn store(n: usize) -> (route_match::CompiledFile, Req) {
    let r = req(vec![("host".into(), "bench".into()), ("x-tenant".into(), "tenant-0-19".into())]);
    (tenant_file(n), r)
}

fn run(list: &MatchList, r: &Req, n: usize) {
    eprintln!("{:?}", list.evaluate_work(r));
    for _ in 0..n {
        black_box(list.evaluate(black_box(r)));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(name), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<usize>().ok()))
    else {
        eprintln!("usage: attack_loop CASE N");
        std::process::exit(2);
    };
    regex_cache::set_capacity(1 << 20);
    match name.as_str() {
        "store_10" | "store_10000" => {
            let (file, r) = store(if name == "store_10" { 10 } else { 10_000 });
            let l = file.get(b"k0").unwrap_or_else(|| panic!("no k0"));
            run(l, &r, n);
        }
        "hpack_comma" => {
            let l = list(
                r#"[{"headers":["x:RegularExpression:^v[0-9]+$"],"redirectPath":"/v"},
                    {"any":true,"redirectPath":"/any"}]"#,
            );
            let value = vec!["va"; 1365].join(",");
            let mut lines = vec![("host".to_owned(), "bench".to_owned())];
            lines.extend((0..7).map(|_| ("x".to_owned(), value.clone())));
            run(&l, &req(lines), n);
        }
        "joined_cookie" => {
            let l = list(
                r#"[{"headers":["cookie:RegularExpression:^(a+)+$"],"redirectPath":"/c"},
                    {"any":true,"redirectPath":"/any"}]"#,
            );
            let one = format!("{}!", "a".repeat(3_899));
            let joined = [one.as_str(); 3].join("; ");
            let lines =
                vec![("host".to_owned(), "bench".to_owned()), ("cookie".to_owned(), joined)];
            run(&l, &req(lines), n);
        }
        "short_repeat" => {
            let l = list(
                r#"[{"headers":["x:RegularExpression:^(a+)+$"],"redirectPath":"/x"},
                    {"any":true,"redirectPath":"/any"}]"#,
            );
            let value = format!("{}!", "a".repeat(24));
            run(&l, &req(vec![("host".into(), "bench".into()), ("x".into(), value)]), n);
        }
        "names_1700" => {
            let entries: Vec<String> = (0..100)
                .map(|i| format!(r#"{{"headers":["x-name-{i}:v{i}"],"redirectPath":"/r{i}"}}"#))
                .collect();
            let l = list(&format!(
                "[{},{{\"any\":true,\"redirectPath\":\"/any\"}}]",
                entries.join(",")
            ));
            let mut lines = vec![("host".to_owned(), "bench".to_owned())];
            lines.extend((0..1_700).map(|i| (format!("x-other-{i}"), "v".to_owned())));
            lines.push(("x-name-99".into(), "v99".into()));
            run(&l, &req(lines), n);
        }
        "attempts_17000" => {
            let mut entries: Vec<String> = (0..17)
                .map(|i| {
                    format!(
                        r#"{{"headers":["x:RegularExpression:^[a-d]-[0-9]+[x-z]{{{}}}"],"redirectPath":"/r{i}"}}"#,
                        i + 1
                    )
                })
                .collect();
            entries.push(
                r#"{"headers":["x:RegularExpression:^a-999$"],"redirectPath":"/win"}"#.into(),
            );
            let l = list(&format!(
                "[{},{{\"any\":true,\"redirectPath\":\"/any\"}}]",
                entries.join(",")
            ));
            let value: Vec<String> = (0..1_000).map(|i| format!("a-{i}")).collect();
            let lines =
                vec![("host".to_owned(), "bench".to_owned()), ("x".to_owned(), value.join(","))];
            run(&l, &req(lines), n);
        }
        _ => {
            eprintln!("attack_loop: unknown case {name}");
            std::process::exit(2);
        }
    }
}
