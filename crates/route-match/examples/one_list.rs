//! The parse and compile of one list of 10,000 NGF-shaped entries (a regex and an exact
//! header, a param, a method each: ~1.35 MB of JSON), counted: `cargo run --profile ci -p
//! route-match --example one_list -- compile` prints the compile's peak heap (the module's
//! allocator, every allocation counted). Its instructions: the same under
//! `valgrind --tool=cachegrind`, less a run without `compile` (the JSON made only).

use alloc_meter::Scope;
use pcre2_bounded::Metered;
use route_match::Syntax;

#[global_allocator]
static ALLOCATOR: Metered = Metered;

fn main() {
    let entries: Vec<String> = (0..10_000)
        .map(|i| {
            format!(
                r#"{{"headers":["x-v:RegularExpression:^v{i}\\.[0-9]+$","x-t:Exact:t{i}"],"params":["q=Exact={i}"],"method":"GET","redirectPath":"/p{i}"}}"#
            )
        })
        .collect();
    let json = format!("[{}]", entries.join(","));
    drop(entries);
    if std::env::args().nth(1).as_deref() != Some("compile") {
        println!("{} bytes of JSON, not compiled", json.len());
        return;
    }
    let scope = Scope::open(usize::MAX);
    match route_match::compile_list(json.as_bytes(), Syntax::Auto) {
        Ok(c) => println!(
            "{} bytes of JSON: peak {} bytes, {} held ({} entries)",
            json.len(),
            scope.peak(),
            c.list.memory(),
            c.list.len()
        ),
        Err(e) => println!("refused: {e}"),
    }
}
