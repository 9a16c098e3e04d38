//! The master's memory across many reloads of a regex-heavy matches.json (issue #30).
//!
//! The master keeps no PCRE2 JIT code (docs/RELIABILITY.md, "Master memory across reloads"):
//! a load compiles its patterns without it (each one's JIT size measured on a copy freed at
//! once) and the workers JIT-compile a pattern at its first match. Before, the master
//! JIT-compiled every pattern, a reload did so while the old ones were alive, and sljit's
//! chunks crept to about twice one load's code over ~100 reloads: VmRSS was bounded, not
//! flat. So the test asserts the master's whole VmRSS flat from reload 5 on (within 256 KiB
//! of reload 5's, at every reload), and its JIT mappings ~0 (at most 128 KiB, at every
//! sample; the first load's were 3 MiB before).
//!
//! The assertions are about memory (/proc/PID/status and smaps of the master), never time;
//! reloads are waited for in the error log. 20 reloads in the normal run;
//! `NGX_MATCHES_RELOADS=150` for the long one (docs/RELIABILITY.md has both figures).

mod common;

use common::{Nginx, master};

/// 2,000 lists, each with two distinct regex conditions (4,000 patterns, ~250 KB).
fn regex_heavy_file() -> String {
    let lists: Vec<String> = (0..2000)
        .map(|k| {
            format!(
                r#""k{k}":[{{"headers":["x-version:RegularExpression:^v{k}\\.[0-9]+$"],"redirectPath":"/big"}},{{"params":["q=RegularExpression=^s{k}[a-z]*$"],"redirectPath":"/small"}}]"#
            )
        })
        .collect();
    format!("{{{}}}", lists.join(","))
}

/// The master's memory after one reload, in KiB.
#[derive(Debug, Clone, Copy)]
struct Sample {
    rss: u64,
    data: u64,
    jit_size: u64,
}

impl Sample {
    fn of(pid: u32) -> Sample {
        Sample {
            rss: master::status_kib(pid, "VmRSS:"),
            data: master::status_kib(pid, "VmData:"),
            jit_size: master::jit_kib(pid).0,
        }
    }
}

/// The most KiB of JIT mappings the master may hold: one sljit chunk (64 KiB) and change.
/// The load's JIT-size measurements leave at most one chunk, unmapped at the first fork.
const JIT_MAX_KIB: u64 = 128;
/// How far above reload 5's VmRSS the master may be at any later reload. Before, it was
/// 560 KiB above after 20 reloads and 3 MiB after 150; a leak of a pool, a Box or a PCRE2
/// context per reload would pass it within the 150 (4,000 patterns are ~1 MiB of compiled
/// state per load).
const RSS_MARGIN_KIB: u64 = 256;

#[test]
fn the_masters_memory_is_flat_across_reloads_of_a_regex_heavy_file() {
    let reloads: usize =
        std::env::var("NGX_MATCHES_RELOADS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    // The first few reloads settle the heap (the old and new cycles side by side once).
    const SETTLED: usize = 5;
    assert!(reloads > SETTLED);
    let n =
        Nginx::start("reload-memory", &master::conf(""), &[("matches.json", &regex_heavy_file())]);
    let pid = master::pid(&n);
    let ask = || n.get("/t", &[("x-key", "k1234"), ("x-version", "v1234.5")]).body;
    assert_eq!(ask(), "big\n");
    let first_load = Sample::of(pid);
    let started = |n: &Nginx| n.error_log().matches("start worker processes").count();
    let mut samples = Vec::new();
    for _ in 1..=reloads {
        let before = started(&n);
        n.hup();
        n.wait_log("start worker processes", before + 1);
        samples.push(Sample::of(pid));
    }
    let settled = samples[SETTLED - 1];
    let last = *samples.last().unwrap();
    let rss_max = samples.iter().skip(SETTLED).map(|s| s.rss).max().unwrap_or(0);
    let jit_max = samples.iter().map(|s| s.jit_size).max().unwrap_or(0).max(first_load.jit_size);
    eprintln!(
        "reload_memory: NGINX {:?}, {reloads} reloads: VmRSS {} -> {} -> {} KiB (first load, \
         reload {SETTLED}, last; most after reload {SETTLED}: {rss_max}), VmData {} -> {} -> {} \
         KiB; JIT mappings first load {} KiB, most {jit_max} KiB",
        common::nginx_version(),
        first_load.rss,
        settled.rss,
        last.rss,
        first_load.data,
        settled.data,
        last.data,
        first_load.jit_size,
    );
    assert!(!n.error_log().contains("[emerg]"), "{}", n.error_log());
    assert_eq!(ask(), "big\n", "the list still answers");
    for (i, s) in std::iter::once(&first_load).chain(&samples).enumerate() {
        assert!(
            s.jit_size <= JIT_MAX_KIB,
            "the master holds {} KiB of JIT mappings after reload {i} (0: the first load)",
            s.jit_size
        );
    }
    for (i, s) in samples.iter().enumerate().skip(SETTLED) {
        assert!(
            s.rss <= settled.rss + RSS_MARGIN_KIB,
            "reload {}: the master's VmRSS {} KiB, reload {SETTLED}'s {} KiB: {samples:?}",
            i + 1,
            s.rss,
            settled.rss
        );
    }
    n.finish();
}
