//! `MatchList::memory` (what the module's `$http_matches` cache counts against its byte
//! budget) against the heap the compiled list really holds: Rust's allocations counted by a
//! wrapping allocator, each with malloc's 16-byte header and rounding, plus PCRE2's code as
//! PCRE2 reports it. The estimate must not undercount, nor overcount by more than half.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

/// Live bytes as malloc holds them: size + 8-byte header, rounded up to 16, at least 32.
static LIVE: AtomicIsize = AtomicIsize::new(0);

fn held(size: usize) -> isize {
    ((size + 8).div_ceil(16) * 16).max(32) as isize
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(held(l.size()), Ordering::Relaxed);
        // SAFETY: same layout contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(held(l.size()), Ordering::Relaxed);
        // SAFETY: `p` came from `alloc` with this layout.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn pattern(i: usize) -> String {
    format!("^(ab|cd){{8}}v{i}[0-9]{{1,3}}$")
}

fn list_json(regexes: usize, exact: usize) -> String {
    let mut e: Vec<String> = (0..regexes)
        .map(|i| {
            format!(
                r#"{{"headers":["x-h{i}:RegularExpression:{}"],"redirectPath":"/t/r{i}"}}"#,
                pattern(i)
            )
        })
        .collect();
    e.extend((0..exact).map(|i| {
        format!(r#"{{"method":"GET","headers":["x-e{i}:Exact:v-{i}"],"params":["p{i}=Exact=q{i}"],"redirectPath":"/t/e{i}"}}"#)
    }));
    e.push(r#"{"any":true,"redirectPath":"/t/any"}"#.to_owned());
    format!("[{}]", e.join(","))
}

#[test]
fn memory_estimate_covers_the_heap_the_list_holds() {
    for (regexes, exact) in [(0, 2), (3, 0), (10, 100), (0, 1000), (50, 50)] {
        let json = list_json(regexes, exact);
        let compiled =
            route_match::compile_list(json.as_bytes(), route_match::Syntax::Auto).unwrap();
        // Measure what dropping it frees: everything it holds, nothing of the compiler's.
        let list = compiled.list;
        let estimate = list.memory();
        // PCRE2's own allocations (code, JIT) are not Rust's: as PCRE2 reports them.
        let pcre: usize = (0..regexes)
            .map(|i| {
                let source = pattern(i);
                let text = (source.len() + 8).div_ceil(16) * 16;
                route_match::Pattern::new(&source).unwrap().memory() - text.max(32)
            })
            .sum();
        let before = LIVE.load(Ordering::SeqCst);
        drop(list);
        let rust = (before - LIVE.load(Ordering::SeqCst)) as usize;
        let real = rust + pcre;
        eprintln!(
            "{regexes} regex + {exact} exact: estimate {estimate}, real {real} (rust {rust}, pcre2 {pcre})"
        );
        assert!(estimate >= real, "{regexes}/{exact}: estimate {estimate} < real {real}");
        assert!(
            estimate <= real * 3 / 2,
            "{regexes}/{exact}: estimate {estimate} > 1.5 x real {real}"
        );
    }
}
