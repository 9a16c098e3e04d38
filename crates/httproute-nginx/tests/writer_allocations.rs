//! The writer's allocations, counted by this test's own allocator: writing a configuration's
//! text costs no allocation per word or directive (a word's text and value go into the
//! writer's buffers, `syntax::word_to`), only the growth of the text and its line owners: the
//! same count, within that growth, at n and 2n locations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use httproute_nginx::conf::{Arg, Directive, Node, Writer, code, data, var};

/// The system allocator, counting this thread's allocations.
struct Counting;

thread_local! {
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is System's; the count is a const-initialized thread local (no
// allocation, no reentry).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
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

/// `n` locations as emit writes a rule's: words of the generator, variables, data bare and
/// quoted (a space), one of several parts.
fn locations(n: usize) -> Vec<Node> {
    (0..n)
        .map(|i| {
            let pass = Arg::parts(vec![code("http://"), data("f", format!("up_{i}")), var("uri")]);
            Directive::new("location")
                .code("=")
                .data("path", format!("/svc-{i}/v 0"))
                .inline(vec![
                    Directive::new("internal").into(),
                    Directive::new("proxy_set_header").code("Host").var("host").into(),
                    Directive::new("add_header").data("name", "x-a").data("value", "b c").into(),
                    Directive::new("proxy_pass").arg(pass).into(),
                ])
                .into()
        })
        .collect()
}

/// The allocations of writing `n` locations' text (their nodes made before counting).
fn allocations(n: usize) -> usize {
    let nodes = locations(n);
    let before = COUNT.with(Cell::get);
    let text = Writer::render_text(&nodes).unwrap();
    let spent = COUNT.with(Cell::get) - before;
    assert_eq!(text.text.lines().count(), n);
    assert!(
        text.text.contains("location = \"/svc-1/v 0\" { internal; proxy_set_header Host $host;")
    );
    spent
}

#[test]
fn writing_text_costs_no_allocation_per_word() {
    let (n, twice) = (allocations(1000), allocations(2000));
    // 1,000 locations hold 13,000 words: one allocation each would be thousands. Doubling
    // them grows the text and the line owners once or twice each.
    assert!(n < 100, "{n} allocations for 1,000 locations");
    assert!(twice <= n + 4, "{n} allocations for 1,000 locations, {twice} for 2,000");
}
