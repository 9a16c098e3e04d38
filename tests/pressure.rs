//! The module under memory pressure: a configuration that cannot be compiled in the memory
//! the master has (an address-space limit) or may use (`http_matches_max_memory`) is an
//! `[emerg]`, never an abort; a reload with it is refused and the running configuration keeps
//! answering.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Command;

use common::{Nginx, Prefix, master};

/// A matches.json of `keys` distinct keys, each with its own one-entry list (~65 bytes a key).
fn write_big_file(path: &Path, keys: usize) {
    let f = std::fs::File::create(path).expect("create matches.json");
    let mut w = std::io::BufWriter::new(f);
    w.write_all(b"{").unwrap();
    for i in 0..keys {
        let sep = if i == 0 { "" } else { "," };
        write!(w, r#"{sep}"k{i}":[{{"headers":["x-tenant:Exact:t{i}"],"redirectPath":"/big"}}]"#)
            .unwrap();
    }
    w.write_all(b"}").unwrap();
}

/// Runs `nginx -t` on `prefix` with the address space limited to `kib` KiB: (exit code or
/// signal, what it printed).
fn test_limited(prefix: &Prefix, kib: u64) -> (Option<i32>, Option<i32>, String) {
    use std::os::unix::process::ExitStatusExt;
    let limit = format!("--as={}", kib * 1024);
    let out = prefix.command_with(&["prlimit", &limit]).arg("-t").output().expect("prlimit");
    (out.status.code(), out.status.signal(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn vm_size_kib(pid: u32) -> u64 {
    master::status_kib(pid, "VmSize:")
}

/// The memory tests' body, unbounded (`http_matches_max_memory off`).
fn conf() -> String {
    master::conf("http_matches_max_memory off;")
}

const SMALL: &str = r#"{"k1":[{"any":true,"redirectPath":"/small"}]}"#;

/// 1,000,000 keys (65 MB): `nginx -t` under an address-space limit the compile does not fit
/// in exits 1 with an `[emerg]` that names the file and what it was doing (it was SIGABRT and
/// a Rust backtrace).
#[test]
fn nginx_t_out_of_address_space_is_an_emerg_not_an_abort() {
    let p = Prefix::new("pressure-t", &conf(), &[]);
    write_big_file(&p.dir.join("conf/matches.json"), 1_000_000);
    let (ok, out) = p.test();
    assert!(ok, "the file compiles without a limit:\n{out}");
    let (code, signal, out) = test_limited(&p, 200 * 1024);
    assert_eq!(signal, None, "nginx -t died on a signal:\n{out}");
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("[emerg]") && out.contains("http_matches: cannot compile"), "{out}");
    assert!(out.contains("matches.json") && out.contains("out of memory while"), "{out}");
    assert!(!out.contains("memory allocation of"), "Rust's abort message:\n{out}");
    let _ = std::fs::remove_dir_all(&p.dir);
}

/// The same file on a reload, with the master's address space limited: the reload is refused
/// with the `[emerg]`, the master and its workers keep serving the old list, and a later
/// reload with a good file works.
#[test]
fn a_reload_out_of_address_space_is_refused_and_the_old_list_answers() {
    let n = Nginx::start("pressure-reload", &conf(), &[("matches.json", SMALL)]);
    let small = || n.get("/t", &[("x-key", "k1")]);
    assert_eq!(small().body, "small\n");
    let master = master::pid(&n);
    // Room for a reload of a small file (a second cycle next to the first), not for 1,000,000
    // keys.
    let limit_kib = vm_size_kib(master) + 150 * 1024;
    let ok = Command::new("prlimit")
        .arg(format!("--pid={master}"))
        .arg(format!("--as={}", limit_kib * 1024))
        .status()
        .expect("prlimit");
    assert!(ok.success());
    write_big_file(&n.prefix.dir.join("conf/matches.json"), 1_000_000);
    n.hup();
    n.wait_log("[emerg]", 1);
    let log = n.error_log();
    assert!(log.contains("out of memory while"), "{log}");
    assert!(!log.contains("exited on signal"), "{log}");
    for _ in 0..20 {
        assert_eq!(small().body, "small\n", "the old configuration answers");
    }
    // The master is alive and reloads a good file.
    n.prefix.write("matches.json", r#"{"k1":[{"any":true,"redirectPath":"/big"}]}"#);
    n.hup();
    common::wait_until(n.with_log("the reload"), || small().body == "big\n");
    n.finish();
}

/// Peak RSS of `nginx -t` on `prefix`, in KiB (the children's maxrss, read by a Python
/// parent so the test process's own does not count), and what it printed.
fn test_peak_rss(prefix: &Prefix) -> (bool, u64, String) {
    let script = "import resource,subprocess,sys\n\
                  r=subprocess.run(sys.argv[1:],capture_output=True)\n\
                  sys.stderr.write(r.stderr.decode('utf-8','replace'))\n\
                  print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n";
    let out = prefix.command_with(&["python3", "-c", script]).arg("-t").output().expect("python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut words = stdout.split_whitespace();
    let code: i32 = words.next().and_then(|w| w.parse().ok()).expect("exit code");
    let rss: u64 = words.next().and_then(|w| w.parse().ok()).expect("maxrss");
    (code == 0, rss, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// 10,000 patterns like `(?:ab|cd){3000}N` (0.9 MB of JSON): 551 MiB of RSS before. With the
/// default bound the file is refused, and `nginx -t` stays under 200 MiB.
#[test]
fn ten_thousand_huge_patterns_are_refused_within_200_mib() {
    let mut json = String::from("{");
    for i in 0..10_000 {
        let sep = if i == 0 { "" } else { "," };
        json += &format!(
            r#"{sep}"k{i}":[{{"headers":["x:RegularExpression:(?:ab|cd){{3000}}N{i}"],"redirectPath":"/big"}}]"#
        );
    }
    json.push('}');
    let conf = master::conf("");
    let p = Prefix::new("pressure-patterns", &conf, &[("matches.json", &json)]);
    let (ok, rss_kib, out) = test_peak_rss(&p);
    eprintln!("nginx -t: peak RSS {rss_kib} KiB\n{out}");
    assert!(!ok, "{out}");
    assert!(out.contains("[emerg]") && out.contains("more memory than allowed"), "{out}");
    assert!(rss_kib < 200 * 1024, "peak RSS {rss_kib} KiB");
    let _ = std::fs::remove_dir_all(&p.dir);
}

/// A pattern over the per-pattern bound is a malformed entry: `[warn]` at load (`[emerg]`
/// under `http_matches_strict`), and its entry answers 500; the other entries work.
#[test]
fn a_pattern_over_its_bound_is_a_malformed_entry() {
    let list = r#"{"k1":[{"headers":["x:RegularExpression:(?:ab|cd){3000}N"],"redirectPath":"/big"},{"headers":["y:Exact:1"],"redirectPath":"/small"}]}"#;
    let conf = master::conf("http_matches_max_memory 64m pattern=16k;");
    // The [warn] is read from `nginx -t`: at load NGINX logs to its compiled-in error log
    // (Debian's: /var/log/nginx/error.log), not yet to the prefix's.
    let p = Prefix::new("pressure-pattern", &conf, &[("matches.json", list)]);
    let (ok, out) = p.test();
    assert!(ok && out.contains("[warn]") && out.contains("more than the 16384 bytes"), "{out}");
    let n = p.start();
    assert_eq!(n.get("/t", &[("x-key", "k1"), ("x", "abN")]).status, 500);
    assert_eq!(n.get("/t", &[("x-key", "k1"), ("y", "1")]).status, 500, "entry 0 is reached first");
    n.finish();
    let strict = conf.replace("http_matches_load", "http_matches_strict on; http_matches_load");
    let p = Prefix::new("pressure-pattern-strict", &strict, &[("matches.json", list)]);
    let (ok, out) = p.test();
    assert!(!ok && out.contains("[emerg]") && out.contains("more than the 16384 bytes"), "{out}");
    let _ = std::fs::remove_dir_all(&p.dir);
}

/// A server whose `/v` compiles the request's `x-list` header (`$http_matches`) and redirects to `/ok`.
const VAR_SERVER: &str = r#"server {
          listen 127.0.0.1:{PORT};
          large_client_header_buffers 4 32k;
          location /ok { internal; return 200 "ok\n"; }
          location = /v { set $http_matches $http_x_list; http_matches; }
        }"#;

/// `$http_matches` compiled at request time within the bound: over it, that request is a 500
/// with an `[error]`, and the worker keeps serving.
#[test]
fn a_request_time_compile_over_the_bound_is_a_500() {
    let conf = &format!("http_matches_max_memory 256k pattern=1m;\n{VAR_SERVER}");
    let n = Nginx::start("pressure-var", conf, &[]);
    let small = r#"[{"any":true,"redirectPath":"/ok"}]"#;
    assert_eq!(n.get("/v", &[("x-list", small)]).body, "ok\n");
    let entries: Vec<String> = (0..8)
        .map(|i| format!(r#"{{"headers":["x:RegularExpression:(?:ab|cd){{3000}}N{i}"],"redirectPath":"/ok"}}"#))
        .collect();
    let big = format!("[{}]", entries.join(","));
    let r = n.get("/v", &[("x-list", &big)]);
    assert_eq!(r.status, 500);
    let log = n.error_log();
    assert!(log.contains("[error]") && log.contains("more memory than allowed"), "{log}");
    assert_eq!(n.get("/v", &[("x-list", small)]).body, "ok\n");
    n.finish();
}

/// A matches.json with one list of `n` regex entries that each need 64 literals of 64
/// bytes sharing no prefix (1,000: 166 KB, its prefilter automaton alone would take ~260 MB to
/// build). Entry 7 answers `x: 517bdfhjl<tail>` (unanchored: the first pattern that holds).
fn literal_heavy_file(n: usize) -> (String, String) {
    let tail: String = "abcdefghijklmnopqrstuvwxyz0123456789".chars().cycle().take(58).collect();
    let entries: Vec<String> = (0..n)
        .map(|i| {
            let path = if i == 7 { "/big" } else { "/small" };
            format!(
                r#"{{"headers":["x:RegularExpression:{i}(a|b)(c|d)(e|f)(g|h)(i|j)(k|l){tail}"],"redirectPath":"{path}"}}"#
            )
        })
        .collect();
    (format!(r#"{{"k1":[{}]}}"#, entries.join(",")), format!("517bdfhjl{tail}"))
}

/// What one reload under a limit did, from the master's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Refused with an out-of-memory `[emerg]`; `inside` when it names an estimated
    /// structure (the index, the automaton) as what was being built when memory ran out.
    Refused { inside: bool },
    /// Loaded; `index` / `automaton`: with a notice that the index / an automaton was left out.
    Loaded { index: bool, automaton: bool },
}

/// Sweeps reloads of `heavy` (a matches.json whose key `k1` answers `big` for `x: hit`) across
/// soft `RLIMIT_AS` limits of the master: its VmSize + each of `points` KiB, after a reload back
/// to a small list with no limit. At every point the master lives; refused -> the old list
/// answers and the `[emerg]` says out of memory; loaded -> the new list answers.
fn sweep(name: &str, heavy: &str, hit: &str, points: &[u64]) -> Vec<(u64, Outcome)> {
    let old = r#"{"k1":[{"any":true,"redirectPath":"/small"}]}"#;
    let n = Nginx::start(name, &conf(), &[("matches.json", old)]);
    let answer = || n.get("/t", &[("x-key", "k1"), ("x", hit)]).body;
    assert_eq!(answer(), "small\n");
    let master = master::pid(&n);
    let set_soft = |soft: &str| {
        let ok = Command::new("prlimit")
            .arg(format!("--pid={master}"))
            .arg(format!("--as={soft}:unlimited"))
            .status()
            .expect("prlimit");
        assert!(ok.success());
    };
    // Writes matches.json whole (a rename: NGINX never reads a half-written file), sends a
    // reload and waits for the master to finish it, from its log: "start worker processes"
    // (loaded) or a new `[emerg]` (refused). Then the answer, polled until the new workers
    // give it (the old ones drain meanwhile).
    let reload = |text: &str, want: &str| -> bool {
        let conf = n.prefix.dir.join("conf");
        std::fs::write(conf.join("matches.json.new"), text).unwrap();
        std::fs::rename(conf.join("matches.json.new"), conf.join("matches.json")).unwrap();
        let count = |log: &str| {
            (log.matches("start worker processes").count(), log.matches("[emerg]").count())
        };
        let (started, emergs) = count(&n.error_log());
        n.hup();
        let loaded = common::wait_for(n.with_log("the reload's outcome"), || {
            let log = n.error_log();
            assert!(!log.contains("exited on signal"), "{log}");
            let (s, e) = count(&log);
            (e > emergs || s > started).then_some(e == emergs)
        });
        if loaded {
            common::wait_until(n.with_log(want), || answer() == want);
        }
        loaded
    };
    let mut out = Vec::new();
    for &extra_kib in points {
        // Back to the old list, with no limit.
        set_soft("unlimited");
        assert!(reload(old, "small\n"), "{}", n.error_log());
        // The heavy file, limited to what the master has + extra_kib.
        let limit = (vm_size_kib(master) + extra_kib) * 1024;
        set_soft(&limit.to_string());
        let notices = |log: &str| {
            (
                log.matches("index of this list would not fit").count(),
                log.matches("automaton for this entry's group").count(),
            )
        };
        let before = notices(&n.error_log());
        let loaded = reload(heavy, "big\n");
        // The master is alive: signal 0.
        let alive = Command::new("kill").arg("-0").arg(master.to_string()).status().unwrap();
        assert!(alive.success(), "+{extra_kib} KiB: the master died:\n{}", n.error_log());
        let log = n.error_log();
        let outcome = if loaded {
            let after = notices(&log);
            Outcome::Loaded { index: after.0 > before.0, automaton: after.1 > before.1 }
        } else {
            for _ in 0..3 {
                assert_eq!(answer(), "small\n", "+{extra_kib} KiB: the old list answers");
            }
            let last = log.lines().rev().find(|l| l.contains("[emerg]")).unwrap_or_default();
            // Ours, or NGINX's own allocation failing first (its pools, shared memory).
            let oom = last.contains("out of memory") || last.contains("Cannot allocate");
            assert!(oom, "+{extra_kib} KiB: {last}");
            Outcome::Refused { inside: last.contains("while building the") }
        };
        eprintln!("+{extra_kib} KiB: {outcome:?}");
        out.push((extra_kib, outcome));
    }
    let log = n.error_log();
    assert!(!log.contains("memory allocation of"), "Rust's abort message:\n{log}");
    set_soft("unlimited");
    n.finish();
    out
}

/// Sweep points from an environment variable `S[:FROM:TO]` (KiB step, MiB range), if set.
fn points_from_env(name: &str, from_mib: u64, to_mib: u64) -> Option<Vec<u64>> {
    let v = std::env::var(name).ok()?;
    let mut words = v.split(':').map(|w| w.parse::<u64>().ok());
    let step = words.next().flatten().unwrap_or(256).max(4);
    let from = words.next().flatten().unwrap_or(from_mib);
    let to = words.next().flatten().unwrap_or(to_mib);
    Some((from * 1024..=to * 1024).step_by(step as usize).collect())
}

/// A reload of the literal-heavy file with the master's address space limited, the limit
/// swept from what the master already has to past the automaton's size: at every step the
/// master lives, the reload either is refused with an `[emerg]` (the old list answers) or
/// loads the file (the new list answers, with a `[warn]` when the automaton did not fit).
/// Before, a limit of +16 MiB aborted the master: the index of the list (hash maps grown
/// with infallible allocations) was built after the allocator's reserve had been spent, with
/// no checkpoint between the list's entries. `NGX_MATCHES_SWEEP_MIB=N` steps by N MiB from
/// +0 to +320 (1: every MiB, 321 points); `NGX_MATCHES_SWEEP_KIB=S[:M]` steps by S KiB from +0
/// to +M MiB (default 256 KiB to +320 MiB; `256:64` is 257 points across the compile's own
/// needs, docs/RELIABILITY.md has its figures). Its automaton (~390 MB estimated) is never
/// built in this range: the next test sweeps a list whose automaton is.
#[test]
fn a_reload_swept_across_address_space_limits_never_kills_the_master() {
    // The normal run: every 8 MiB across the compile's own needs (+0 to +64), and one point
    // past them.
    // Points in KiB above the master's VmSize.
    let env = |name: &str| std::env::var(name).ok();
    let fine = env("NGX_MATCHES_SWEEP_KIB").map(|v| {
        let mut words = v.split(':').map(|w| w.parse::<u64>().ok());
        let step = words.next().flatten().unwrap_or(256).max(4);
        let max_mib = words.next().flatten().unwrap_or(320);
        (step, max_mib)
    });
    let points: Vec<u64> = match (fine, env("NGX_MATCHES_SWEEP_MIB").and_then(|v| v.parse().ok())) {
        (Some((step, max_mib)), _) => (0..=max_mib * 1024).step_by(step as usize).collect(),
        (None, Some(step)) => (0..=320 * 1024).step_by(usize::max(step, 1) * 1024).collect(),
        (None, None) => (0..=64 * 1024).step_by(8 * 1024).chain([320 * 1024]).collect(),
    };
    let (heavy, hit) = literal_heavy_file(1000);
    let out = sweep("pressure-sweep", &heavy, &hit, &points);
    let refused = out.iter().filter(|(_, o)| matches!(o, Outcome::Refused { .. })).count();
    let loaded = out.len() - refused;
    let unindexed = out
        .iter()
        .filter(|(_, o)| {
            matches!(
                o,
                Outcome::Loaded { index: true, .. } | Outcome::Loaded { automaton: true, .. }
            )
        })
        .count();
    eprintln!(
        "{refused} refused, {loaded} loaded ({unindexed} with an index or automaton left out)"
    );
    assert!(refused > 0 && loaded > 0, "the sweep crosses the compile");
}

/// The same sweep with a list whose automaton *is* built within the range (150 literal-heavy
/// entries: 9,600 literals of 64 bytes, its contiguous NFA estimated at ~59 MB), so that the
/// points cover every class: refused (no room for the compile), loaded with the automaton
/// left out (its estimate does not fit), around the limit where the estimate first fits (the
/// automaton built with the least room: were the estimate short, the build would run out of
/// memory inside the aho-corasick crate there, which must be a refusal that names it, never
/// an abort) and loaded with the automaton. The normal run: +0 (the 16 MiB reserve does not
/// fit), +40 MiB (the compile fits, the automaton's ~59 MB do not), every 2 MiB from +64 to
/// +96 MiB (across where the estimate first fits) and +160 MiB (all of it fits).
/// `NGX_MATCHES_AUTOMATON_SWEEP_KIB=S[:FROM:TO]` sweeps every S KiB from +FROM to +TO MiB
/// (default 0 to 160).
#[test]
fn a_reload_swept_across_the_automaton_build_never_kills_the_master() {
    let custom = points_from_env("NGX_MATCHES_AUTOMATON_SWEEP_KIB", 0, 160);
    let normal = custom.is_none();
    let points = custom.unwrap_or_else(|| {
        [0, 40 * 1024]
            .into_iter()
            .chain((64 * 1024..=96 * 1024).step_by(2 * 1024))
            .chain([160 * 1024])
            .collect()
    });
    let (heavy, hit) = literal_heavy_file(150);
    let out = sweep("pressure-automaton-sweep", &heavy, &hit, &points);
    let count = |f: &dyn Fn(Outcome) -> bool| out.iter().filter(|(_, o)| f(*o)).count();
    let refused = count(&|o| o == Outcome::Refused { inside: false });
    let inside = count(&|o| o == Outcome::Refused { inside: true });
    let without = count(&|o| matches!(o, Outcome::Loaded { automaton: true, .. }));
    let with = count(&|o| matches!(o, Outcome::Loaded { automaton: false, index: false }));
    eprintln!(
        "{refused} refused, {inside} refused inside an estimated build, {without} loaded \
         without the automaton, {with} loaded with it ({} points)",
        out.len()
    );
    // A build that ran out inside (`inside`) was refused with the old list answering and the
    // master alive (asserted per point by `sweep`); none did in the runs measured.
    if !normal {
        return;
    }
    assert!(refused > 0, "no point refused: {out:?}");
    assert!(without > 0, "no point loaded without the automaton: {out:?}");
    assert!(with > 0, "no point loaded with the automaton: {out:?}");
    // Where the estimate first fits, the automaton is built with the least room: the first
    // point that loads with it, and the point just below it (left out, or refused) are both
    // in the run.
    let first_with = out
        .iter()
        .position(|(_, o)| matches!(o, Outcome::Loaded { automaton: false, index: false }))
        .unwrap();
    assert!(
        first_with > 0
            && matches!(
                out[first_with - 1].1,
                Outcome::Loaded { automaton: true, .. } | Outcome::Refused { .. }
            ),
        "{out:?}"
    );
}

/// The reserve refused at request time: a `$http_matches` compile in a worker whose address
/// space has no room left for the allocator's 16 MiB reserve answers 500 with an `[error]`
/// that says so (the compile refuses before it parses the list: `Scope::open` is spent without
/// its reserve), the worker lives, and with the limit lifted the same value compiles (an out
/// of memory result is never cached).
#[test]
fn a_request_time_compile_without_the_reserve_is_a_500_and_the_worker_lives() {
    let conf = &format!("http_matches_max_memory 64m;\n{VAR_SERVER}");
    // The worker runs as root, as the test does: prlimit on another user's process needs
    // CAP_SYS_RESOURCE, which a container may not give.
    let n = Nginx::start_keeping_bodies("pressure-no-reserve", conf);
    let warm = r#"[{"any":true,"redirectPath":"/ok"}]"#;
    assert_eq!(n.get("/v", &[("x-list", warm)]).body, "ok\n");
    // 200 regex entries (~16 KB): its parse alone would allocate megabytes.
    let entries: Vec<String> = (0..200)
        .map(|i| {
            format!(r#"{{"headers":["x:RegularExpression:^v{i}\\.[0-9]+$"],"redirectPath":"/ok"}}"#)
        })
        .chain([r#"{"any":true,"redirectPath":"/ok"}"#.to_owned()])
        .collect();
    let list = format!("[{}]", entries.join(","));
    let worker = common::worker_pid(&n);
    let set_as = |value: String| {
        let ok = Command::new("prlimit")
            .arg(format!("--pid={worker}"))
            .arg(format!("--as={value}:unlimited"))
            .status()
            .expect("prlimit");
        assert!(ok.success());
    };
    // The soft limit only (the hard one stays unlimited, so it can be lifted again). Room for the request (pools, buffers), not for the 16 MiB reserve.
    set_as(((vm_size_kib(worker) + 4 * 1024) * 1024).to_string());
    let r = n.get("/v", &[("x-list", &list)]);
    set_as("unlimited".to_owned());
    assert_eq!(r.status, 500, "{}", n.error_log());
    let log = n.error_log();
    assert!(
        log.contains("[error]") && log.contains("refused the allocator's 16 MiB reserve"),
        "{log}"
    );
    assert!(!log.contains("exited on signal"), "{log}");
    assert_eq!(common::worker_pid(&n), worker, "the same worker");
    assert_eq!(n.get("/v", &[("x-list", &list)]).body, "ok\n", "{}", n.error_log());
    assert_eq!(common::worker_pid(&n), worker);
    n.finish();
}
