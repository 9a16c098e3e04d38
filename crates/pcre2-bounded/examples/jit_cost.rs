//! What JIT-compiling in the workers costs (issue #30, docs/BENCHMARKS.md "Master memory
//! across reloads"): the 4,000 patterns of `tests/reload_memory.rs`'s file, compiled as the
//! master compiles them (JIT deferred), then
//! (a) every pattern JIT-compiled at once, as an `init_process` would, or
//! (b) one pattern JIT-compiled at its first match, what a worker's first request pays.
//! Also each shape's JIT size over its code size. Times are this machine's, for the docs.
//!
//! `cargo run --release -p pcre2-bounded --example jit_cost`

use std::time::Instant;

use pcre2_bounded::{Limits, Regex, defer_jit};

const LIMITS: Limits = Limits { match_steps: 200_000, depth: 10_000, heap_kib: 16 * 1024 };

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn patterns() -> Vec<String> {
    (0..2000).flat_map(|k| [format!("^v{k}\\.[0-9]+$"), format!("^s{k}[a-z]*$")]).collect()
}

fn main() {
    // The ratio of JIT to code, over shapes.
    for p in [
        "^v1234\\.[0-9]+$",
        "^s1234[a-z]*$",
        "^tenant-[0-9]{4}$",
        "(?i)^eu-west-[0-9]+$",
        "Chrome/1[0-9]{2}",
        "^[0-9a-f]{40}$",
        "^(a+)+$",
        "x.*y.*z",
        "(?:ab|cd){300}",
        "(?:ab|cd){3000}N",
        "^(?!internal).*",
        "[[:alpha:]]+@[a-z]+\\.(com|org|net)",
    ] {
        let re = Regex::new(p).unwrap();
        let code = re.memory() - re.jit_bytes();
        println!(
            "shape {p:40} code {code:7} JIT {:7} ratio {:.2}",
            re.jit_bytes(),
            re.jit_bytes() as f64 / code as f64
        );
    }
    defer_jit(true);
    let rss0 = status_kib("VmRSS:");
    let t = Instant::now();
    let all: Vec<Regex> = patterns().iter().map(|p| Regex::new(p).unwrap()).collect();
    let compile = t.elapsed();
    let rss1 = status_kib("VmRSS:");
    defer_jit(false);
    let jit: usize = all.iter().map(Regex::jit_bytes).sum();
    let code: usize = all.iter().map(|r| r.memory() - r.jit_bytes()).sum();
    // (b): the first match of one pattern, JIT made then; and a second match.
    let t = Instant::now();
    assert_eq!(all[2468].is_match(b"v1234.5", LIMITS), Ok(true));
    let first = t.elapsed();
    let t = Instant::now();
    assert_eq!(all[2468].is_match(b"v1234.5", LIMITS), Ok(true));
    let second = t.elapsed();
    // (a): every pattern JIT-compiled.
    let t = Instant::now();
    for r in &all {
        let _ = r.is_match(b"", LIMITS);
    }
    let eager = t.elapsed();
    let rss2 = status_kib("VmRSS:");
    assert!(all.iter().all(Regex::is_jit));
    println!(
        "4,000 patterns: compile with JIT deferred (size measured) {compile:?}, code {code} B, \
         JIT {jit} B (ratio {:.2}); RSS {rss0} -> {rss1} KiB after the compile",
        jit as f64 / code as f64
    );
    println!("(b) first match of one pattern (JIT made) {first:?}, next match {second:?}");
    println!("(a) JIT of all 4,000: {eager:?}, RSS {rss1} -> {rss2} KiB");
}
