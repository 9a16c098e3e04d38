//! Heap held by compiled lists: `cargo run --release -p route-match --example memory`.
//! Compiles a matches.json of 10,000 lists x 10 entries (the shape of `scripts/bench/bench.sh`'s
//! load test: GET + 2 exact headers + 1 exact param per entry) and prints the live heap after
//! compiling, per entry, counted by a wrapping global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static BLOCKS: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(l.size() as isize, Ordering::Relaxed) + l.size() as isize;
        BLOCKS.fetch_add(1, Ordering::Relaxed);
        PEAK.fetch_max(live as usize, Ordering::Relaxed);
        // SAFETY: same layout contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        BLOCKS.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: `p` came from `alloc` with this layout.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn main() {
    let (lists, per) = (10_000, 10);
    let mut json = String::from("{");
    for k in 0..lists {
        if k > 0 {
            json.push(',');
        }
        json.push_str(&format!("\"{k}_0\":["));
        for i in 0..per {
            if i > 0 {
                json.push(',');
            }
            json.push_str(&format!(
                r#"{{"method":"GET","headers":["x-tenant:Exact:t{i}","x-env:Exact:prod"],"params":["v=Exact={i}"],"redirectPath":"/internal/l{k}"}}"#
            ));
        }
        json.push(']');
    }
    json.push('}');
    let text_bytes = json.len();
    let before = LIVE.load(Ordering::Relaxed);
    let blocks_before = BLOCKS.load(Ordering::Relaxed);
    PEAK.store(before as usize, Ordering::Relaxed);
    let file = route_match::compile_file(json.as_bytes(), route_match::Syntax::Auto).unwrap();
    let live = LIVE.load(Ordering::Relaxed) - before;
    let blocks = BLOCKS.load(Ordering::Relaxed) - blocks_before;
    let entries = (lists * per) as isize;
    println!("input: {lists} lists x {per} entries, {text_bytes} bytes of JSON");
    println!(
        "live heap after compiling: {live} bytes in {blocks} blocks: {} bytes and {:.1} blocks per entry",
        live / entries,
        blocks as f64 / entries as f64
    );
    println!(
        "peak while compiling: {} bytes above the input",
        PEAK.load(Ordering::Relaxed) - before as usize
    );
    assert_eq!(file.len(), lists);
}
