//! Estimate before parsing: a `$http_matches` or inline list is refused before it is parsed
//! when its JSON, times the most the parse and compile allocate per byte of it
//! ([`route_match::LIST_BYTES_PER_JSON_BYTE`]), does not fit in what is left of the limit. So a
//! refused list stays within the limit too (it went over by up to ~143x its JSON before:
//! serde_json's tree is built before any checkpoint). This binary uses the module's
//! allocator, so every allocation of a compile is counted, as in NGINX.

use pcre2_bounded::memory::{Metered, Scope};
use proptest::prelude::*;
use route_match::{Bounds, Syntax};

#[global_allocator]
static ALLOCATOR: Metered = Metered;

/// Compiles `json` under `limit` in a counting scope: (compiled?, peak bytes of the compile).
fn compile_peak(json: &str, limit: usize) -> (Result<(), String>, usize) {
    let scope = Scope::open(usize::MAX);
    let bounds = Bounds { memory: limit, ..Bounds::default() };
    let r = route_match::compile_list_within(json.as_bytes(), Syntax::Auto, bounds)
        .map(|_| ())
        .map_err(|e| e.to_string());
    (r, scope.peak())
}

/// One entry of a shape the parse is expensive for (per byte of JSON).
fn entry(shape: u8, i: usize, depth: usize) -> String {
    match shape % 6 {
        // The smallest objects: one BTreeMap node (~600 bytes) per 8 bytes of JSON.
        0 => r#"{"a":0}"#.to_owned(),
        // Objects nested in an unknown field (kept in the tree until the entry is read).
        1 => format!(r#"{{"x":{}0{}}}"#, r#"{"":"#.repeat(depth), "}".repeat(depth)),
        // Arrays of small numbers.
        2 => format!(r#"{{"x":[{}]}}"#, vec!["0"; depth.max(1)].join(",")),
        // Arrays nested.
        3 => format!(r#"{{"x":{}0{}}}"#, "[".repeat(depth), "]".repeat(depth)),
        // Ordinary entries: regex, exact, params, method.
        4 => format!(
            r#"{{"headers":["x-v:RegularExpression:^v{i}\\.[0-9]+$","x-t:Exact:t{i}"],"params":["q=Exact={i}"],"method":"GET","redirectPath":"/p{i}"}}"#
        ),
        // Many short conditions.
        _ => format!(
            r#"{{"headers":[{}],"redirectPath":"/p"}}"#,
            (0..depth.max(1)).map(|k| format!(r#""h{k}:Exact:v""#)).collect::<Vec<_>>().join(",")
        ),
    }
}

fn list(shapes: &[(u8, usize)]) -> String {
    let e: Vec<String> = shapes.iter().enumerate().map(|(i, &(s, d))| entry(s, i, d)).collect();
    format!("[{}]", e.join(","))
}

/// The factor, measured: each shape alone, unbounded, peak per byte of JSON; the constant
/// must cover the worst with room.
#[test]
fn the_factor_covers_every_shape() {
    let mut worst = (0.0f64, 0u8);
    for shape in 0..6u8 {
        for depth in [1usize, 4, 16, 100] {
            for n in [1usize, 10, 300] {
                let json = list(&vec![(shape, depth); n]);
                let (_, peak) = compile_peak(&json, usize::MAX);
                let per_byte = peak as f64 / json.len() as f64;
                if per_byte > worst.0 {
                    worst = (per_byte, shape);
                }
            }
        }
    }
    eprintln!("worst peak per JSON byte: {:.1} (shape {})", worst.0, worst.1);
    assert!(worst.0 <= route_match::LIST_BYTES_PER_JSON_BYTE as f64, "{worst:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("ESTIMATE_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(48)))]

    /// Compiled peak <= the limit for generated lists, compiled or refused.
    #[test]
    fn the_peak_stays_within_the_limit_refused_or_not(
        shapes in proptest::collection::vec((0u8..6, 1usize..64), 1..200),
        limit_kib in 16usize..8192,
    ) {
        let json = list(&shapes);
        let limit = limit_kib << 10;
        let (r, peak) = compile_peak(&json, limit);
        prop_assert!(peak <= limit, "peak {} > limit {} ({} bytes of JSON, {:?})", peak, limit, json.len(), r.err());
    }
}
