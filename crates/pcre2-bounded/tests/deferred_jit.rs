//! Deferred JIT (`defer_jit`): a pattern compiled in a process that must not keep JIT code
//! (NGINX's master) is measured as if JIT-compiled, keeps no JIT code there, and is
//! JIT-compiled at its first match in a process that keeps JIT code (a worker), within the
//! process's JIT allowance. The crate's switches are process-wide: one test, in order.

use std::sync::Arc;

use alloc_meter as memory;
use pcre2_bounded::{
    CompileError, Limits, MatchError, Regex, defer_jit, deferred_jit_bytes, jit_allowance,
    set_jit_allowance, take_jit_refusals,
};

const WIDE: Limits = Limits { match_steps: 10_000_000, depth: 10_000_000, heap_kib: 20_000_000 };

/// Patterns and subjects whose answers, and whose step-limit verdicts, are compared.
const CASES: &[(&str, &[u8])] = &[
    ("^v[0-9]+\\.[0-9]+$", b"v12.3"),
    ("^v[0-9]+\\.[0-9]+$", b"v12.x"),
    ("(?i)^eu-west-[0-9]+$", b"EU-WEST-3"),
    ("a.b", b"a\xffb"),
    ("^(a+)+$", b"aaaaaaaaaaaaaaaaaaaaaaaa!"),
];

fn verdicts(re: &Regex, subject: &[u8]) -> Vec<Result<bool, MatchError>> {
    [2, 64, 1024, 200_000]
        .iter()
        .map(|&s| re.is_match(subject, Limits { match_steps: s, ..WIDE }))
        .collect()
}

#[test]
fn deferred_patterns_keep_no_jit_where_deferred_and_match_as_jit_compiled_ones() {
    // Eager, the default: JIT code made at compile.
    let eager: Vec<Regex> = CASES.iter().map(|(p, _)| Regex::new(p).unwrap()).collect();
    assert!(eager.iter().all(Regex::is_jit), "this PCRE2 has no JIT: nothing to test");

    // The master: compiled without JIT code, measured and counted the same.
    assert!(memory::begin_load());
    defer_jit(true);
    let deferred: Vec<Regex> = CASES.iter().map(|(p, _)| Regex::new(p).unwrap()).collect();
    for (e, d) in eager.iter().zip(&deferred) {
        assert_eq!(e.memory(), d.memory(), "{e:?} {d:?}");
        assert!(d.is_deferred() && !d.is_jit(), "{d:?}");
    }
    let jit_total = jit_total_of(&deferred);
    assert_eq!(jit_total, jit_total_of(&eager));
    assert!(jit_total > 0);
    assert_eq!(deferred_jit_bytes(), jit_total, "the load's deferred JIT bytes");
    // The per-pattern bound refuses what it refused with the JIT code made.
    for max in [256, 1024, 4096, 16 * 1024] {
        for p in ["(?:ab|cd){300}N", "^v[0-9]+$", "(?:ab|cd){3000}N"] {
            defer_jit(false);
            let e = Regex::with_max_memory(p, max).map(|r| r.memory());
            defer_jit(true);
            let d = Regex::with_max_memory(p, max).map(|r| r.memory());
            assert_eq!(e, d, "{p} within {max}");
        }
    }
    assert!(matches!(
        Regex::with_max_memory("(?:ab|cd){3000}N", 16 * 1024),
        Err(CompileError::TooLarge { .. })
    ));
    // Matched where JIT is deferred: the interpreter, nothing made, still deferred.
    for ((e, d), (_, s)) in eager.iter().zip(&deferred).zip(CASES) {
        assert_eq!(d.is_match(s, WIDE), e.is_match(s, WIDE));
        assert!(d.is_deferred(), "{d:?}");
    }
    assert!(!memory::end_load());

    // A worker: the first match makes the JIT code; every verdict is the JIT-compiled one's,
    // from the first match on (the step limits count the same unit).
    defer_jit(false);
    let before = jit_allowance();
    for ((e, d), (_, s)) in eager.iter().zip(&deferred).zip(CASES) {
        assert_eq!(verdicts(d, s), verdicts(e, s), "{e:?}");
        assert!(d.is_jit(), "{d:?}");
    }
    assert_eq!(take_jit_refusals(), 0);
    assert_eq!(before - jit_allowance(), jit_total);

    // An allowance too small for a pattern: it stays on the interpreter, answers the same,
    // its step limit still stops it, and the refusal is counted once.
    defer_jit(true);
    let big = Regex::new("^(a+)+$").unwrap();
    let small = Regex::new("^v[0-9]+$").unwrap();
    defer_jit(false);
    set_jit_allowance(0);
    let mut s = vec![b'a'; 24];
    s.push(b'!');
    assert_eq!(
        big.is_match(&s, Limits { match_steps: 1_000, ..WIDE }),
        Err(MatchError::MatchLimit)
    );
    assert_eq!(big.is_match(b"aaaa", WIDE), Ok(true));
    assert!(!big.is_jit() && !big.is_deferred(), "{big:?}");
    assert_eq!(take_jit_refusals(), 1);
    assert_eq!(take_jit_refusals(), 0);
    // Room for exactly one: the next pattern that fits gets it; the allowance is spent exactly.
    let one = jit_total_of(std::slice::from_ref(&small));
    set_jit_allowance(one);
    assert_eq!(small.is_match(b"v1", WIDE), Ok(true));
    assert!(small.is_jit());
    assert_eq!(jit_allowance(), 0);
    // Freeing a deferred pattern's JIT code gives its bytes back.
    drop(small);
    assert_eq!(jit_allowance(), one);

    // Many threads at a deferred pattern's first match: the JIT code is made once, and every
    // thread gets the same verdicts.
    set_jit_allowance(usize::MAX / 2);
    defer_jit(true);
    let shared = Arc::new(Regex::new("^(a|b)+c$").unwrap());
    defer_jit(false);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let re = Arc::clone(&shared);
            std::thread::spawn(move || {
                (0..200)
                    .map(|i| re.is_match(if i % 2 == 0 { b"ababc" } else { b"abab" }, WIDE))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for t in threads {
        let got = t.join().unwrap();
        assert!(got.iter().enumerate().all(|(i, r)| *r == Ok(i % 2 == 0)));
    }
    assert!(shared.is_jit());
    assert_eq!(usize::MAX / 2 - jit_allowance(), jit_total_of(std::slice::from_ref(&*shared)));
    assert_eq!(take_jit_refusals(), 0);
}

/// The JIT bytes of `patterns`, made or to be made.
fn jit_total_of(patterns: &[Regex]) -> usize {
    patterns.iter().map(|r| r.jit_bytes()).sum()
}
