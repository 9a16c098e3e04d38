//! The master's memory across many reloads of a regex-heavy matches.json (issue #30).
//!
//! Measured (docs/RELIABILITY.md, "Master memory across reloads"): what grows is PCRE2's JIT
//! code, mapped by sljit in chunks of its own outside malloc's heap. A reload compiles the
//! new patterns while the old ones are alive, so the new code fills the holes of chunks that
//! also hold old code; once the old patterns are freed those chunks stay partly used, and the
//! mapped total creeps up to a plateau (about twice the code of one load: both configurations'
//! at the reload's peak) over the first ~100 reloads. Everything else (malloc's heap, NGINX's
//! pools) is flat. So the test splits the master's figures: outside the JIT mappings, flat
//! after the first few reloads; the JIT mappings, within 2.5 times those of the first load
//! (the module frees the unused chunks at the first fork after each load).
//!
//! The assertions are about memory (/proc/PID/status and smaps of the master), never time;
//! reloads are waited for in the error log. 20 reloads in the normal run;
//! `NGX_MATCHES_RELOADS=150` for the plateau (docs/RELIABILITY.md has both figures).

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
    jit_rss: u64,
}

impl Sample {
    fn of(pid: u32) -> Sample {
        let (jit_size, jit_rss) = master::jit_kib(pid);
        Sample {
            rss: master::status_kib(pid, "VmRSS:"),
            data: master::status_kib(pid, "VmData:"),
            jit_size,
            jit_rss,
        }
    }

    /// (VmRSS, VmData) without PCRE2's JIT mappings (VmData counts them: private, writable).
    fn outside_jit(&self) -> (u64, u64) {
        (self.rss.saturating_sub(self.jit_rss), self.data.saturating_sub(self.jit_size))
    }
}

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
    assert!(first_load.jit_size > 0, "no JIT mappings found: PCRE2 without JIT?");
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
    let jit_max = samples.iter().map(|s| s.jit_size).max().unwrap_or(0);
    eprintln!(
        "reload_memory: NGINX {:?}, {reloads} reloads: VmRSS {} -> {} -> {} KiB, VmData {} -> \
         {} -> {} KiB (first load, reload {SETTLED}, last); JIT mappings {} -> {} KiB (most \
         {jit_max}); outside the JIT (VmRSS, VmData) {:?} -> {:?}",
        common::nginx_version(),
        first_load.rss,
        settled.rss,
        last.rss,
        first_load.data,
        settled.data,
        last.data,
        first_load.jit_size,
        last.jit_size,
        settled.outside_jit(),
        last.outside_jit(),
    );
    assert!(!n.error_log().contains("[emerg]"), "{}", n.error_log());
    assert_eq!(ask(), "big\n", "the list still answers");
    // Outside the JIT: flat, at most 512 KiB more than during the first few, however many
    // reloads (a leaked Box, pool or PCRE2 context per reload would pass that: 4,000 patterns
    // make ~1 MiB of compiled state per load).
    // The base: the most of each over the first few reloads (VmData moves by a few hundred KiB
    // from one reload to the next, as the heap's top is trimmed or not).
    let grew = |a: u64, b: u64| b.saturating_sub(a);
    let first_few = || samples[..SETTLED].iter().map(Sample::outside_jit);
    let (r0, d0) =
        (first_few().map(|o| o.0).max().unwrap(), first_few().map(|o| o.1).max().unwrap());
    for (i, s) in samples.iter().enumerate().skip(SETTLED) {
        let (r, d) = s.outside_jit();
        assert!(grew(r0, r) <= 512, "reload {}: VmRSS outside the JIT {r0} -> {r} KiB", i + 1);
        assert!(grew(d0, d) <= 512, "reload {}: VmData outside the JIT {d0} -> {d} KiB", i + 1);
    }
    // The JIT's chunks: bounded by the code of the two configurations a reload holds at once,
    // plus the chunks' holes; 2.5 times the first load's (measured plateau: 1.9 times).
    assert!(
        jit_max <= first_load.jit_size * 5 / 2,
        "JIT mappings {} -> {jit_max} KiB: {samples:?}",
        first_load.jit_size
    );
    n.finish();
}
