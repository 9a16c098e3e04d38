//! An `ImmediateResponse`'s header lines cost a bounded amount of memory whatever their number
//! (issue #47): the allocations made decoding one, counted by this test's own allocator, are
//! the same at n and 2n lines past the cap.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use epp_proto::msg::{
    self, CappedHeaders, IMMEDIATE_HEADER_BYTES, IMMEDIATE_LINES, ProcessingResponse, Response,
};
use epp_proto::{MAX_MESSAGE, Outcome, decode};
use prost::Message;

/// The system allocator, counting this thread's allocations (calls and bytes).
struct Counting;

thread_local! {
    static COUNT: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

// SAFETY: every call is System's; the count is a const-initialized thread local (no
// allocation, no reentry).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = COUNT.try_with(|c| {
            let (n, bytes) = c.get();
            c.set((n + 1, bytes + layout.size()));
        });
        // SAFETY: as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// One frame: an `ImmediateResponse` 429 with `lines` header lines of `value_len` bytes each.
fn immediate(lines: usize, value_len: usize) -> Vec<u8> {
    let line = |i: usize| msg::HeaderValueOption {
        header: Some(msg::HeaderValue {
            key: format!("x-{i}"),
            value: String::new(),
            raw_value: vec![b'v'; value_len],
        }),
    };
    let headers =
        CappedHeaders { set_headers: (0..lines).map(line).collect(), ..Default::default() };
    let m = ProcessingResponse {
        response: Some(Response::ImmediateResponse(msg::ImmediateResponse {
            status: Some(msg::HttpStatus { code: 429 }),
            headers: Some(headers),
            body: b"shed\n".to_vec(),
            details: String::new(),
        })),
        dynamic_metadata: None,
    };
    let body = m.encode_to_vec();
    assert!(body.len() <= MAX_MESSAGE);
    [&[0][..], &(body.len() as u32).to_be_bytes(), &body].concat()
}

/// The outcome's (lines kept, lines dropped) and the allocations (calls, bytes) decoding made.
fn decode_counted(frame: &[u8]) -> ((usize, usize), (usize, usize)) {
    let before = COUNT.with(Cell::get);
    let outcome = decode(frame, MAX_MESSAGE, Some((0, "")));
    let after = COUNT.with(Cell::get);
    let Outcome::Immediate { status: 429, headers, dropped, .. } = outcome else {
        panic!("{outcome:?}")
    };
    ((headers.len(), dropped), (after.0 - before.0, after.1 - before.1))
}

#[test]
fn immediate_header_lines_cost_the_same_at_n_and_2n_lines_past_the_cap() {
    let n = 20_000;
    let (kept, small) = decode_counted(&immediate(n, 1));
    assert_eq!(kept, (IMMEDIATE_LINES, n - IMMEDIATE_LINES));
    let (kept, large) = decode_counted(&immediate(2 * n, 1));
    assert_eq!(kept, (IMMEDIATE_LINES, 2 * n - IMMEDIATE_LINES));
    assert_eq!(small, large, "allocations (calls, bytes) at {n} and {} lines", 2 * n);
    // A few allocations per line kept, not per line sent.
    assert!(small.0 <= 8 * IMMEDIATE_LINES, "{small:?}");
}

#[test]
fn immediate_header_bytes_are_capped_too() {
    // Lines of 10 KiB: six fit in 64 KiB, the rest are dropped.
    let (kept, _) = decode_counted(&immediate(10, 10 << 10));
    let fit = IMMEDIATE_HEADER_BYTES / ((10 << 10) + 16);
    assert_eq!(kept, (fit, 10usize.saturating_sub(fit)));
    // Under both caps, every line is kept.
    let (kept, _) = decode_counted(&immediate(IMMEDIATE_LINES, 100));
    assert_eq!(kept, (IMMEDIATE_LINES, 0));
}
