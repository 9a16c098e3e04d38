//! Refusal at the mechanism: when the system refuses the allocator's reserve, every compile
//! entry (a list, a file in memory, a file on disk: what the module calls at load and per
//! request) refuses before it allocates anything of its input's size. This binary uses the
//! module's allocator, so the compile's allocations are counted as in NGINX, and it holds one
//! test only: the refusal is switched on for the whole process.

use alloc_meter::{Scope, refuse_reserve};
use pcre2_bounded::Metered;
use route_match::{Bounds, FileError, Syntax};

#[global_allocator]
static ALLOCATOR: Metered = Metered;

/// A list of `n` regex entries (~90 bytes each): its JSON tree alone is ~100x that.
fn list(n: usize) -> String {
    let e: Vec<String> = (0..n)
        .map(|i| {
            format!(r#"{{"headers":["x:RegularExpression:^v{i}\\.[0-9]+$"],"redirectPath":"/p"}}"#)
        })
        .collect();
    format!("[{}]", e.join(","))
}

#[test]
fn without_the_reserve_every_compile_entry_refuses_before_it_allocates() {
    let list = list(2000);
    let file = format!(r#"{{"k1":{list},"k2":[{{"any":true,"redirectPath":"/q"}}]}}"#);
    let path = std::env::temp_dir().join(format!("no-reserve-{}.json", std::process::id()));
    std::fs::write(&path, &file).unwrap();
    let bounds = Bounds { memory: 64 << 20, ..Bounds::default() };
    // With the reserve, each compiles, and allocates far more than the refusal may.
    let counted = Scope::open(usize::MAX);
    assert!(route_match::compile_list_within(list.as_bytes(), Syntax::Auto, bounds).is_ok());
    assert!(route_match::compile_file_at_within(&path, Syntax::Auto, bounds).is_ok());
    let compiling = counted.peak();
    drop(counted);
    assert!(compiling > 1 << 20, "a compile's peak: {compiling} bytes");

    refuse_reserve(true);
    let counted = Scope::open(usize::MAX);
    let a = route_match::compile_list_within(list.as_bytes(), Syntax::Auto, bounds);
    let b = route_match::compile_file(file.as_bytes(), Syntax::Auto);
    let c = route_match::compile_file_at_within(&path, Syntax::Auto, bounds);
    let refusing = counted.peak();
    drop(counted);
    refuse_reserve(false);
    let _ = std::fs::remove_file(&path);
    let (Err(a), Err(b), Err(FileError::Memory(c))) = (a, b, c) else {
        panic!("each entry refuses, the file on disk with a memory error")
    };
    for message in [a.message(), b.message(), c.as_str()] {
        assert!(message.contains("refused the allocator's 16 MiB reserve"), "{message}");
    }
    assert!(a.is_memory() && b.is_memory());
    // What the three refusals allocated at most at once: their error messages, not the input
    // (55 KB of JSON here, ~143x that as a tree).
    assert!(refusing < 4096, "the refusals' peak: {refusing} bytes (compiling: {compiling})");
}
