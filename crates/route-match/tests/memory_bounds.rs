//! Compiling within memory bounds: this test binary uses the module's allocator
//! (`pcre2_bounded::memory::Metered`), so every allocation of a compile is counted, as in
//! NGINX.

use pcre2_bounded::memory::Metered;
use route_match::{Bounds, FileError, Syntax};

#[global_allocator]
static ALLOCATOR: Metered = Metered;

fn file(keys: usize, entry: impl Fn(usize) -> String) -> std::path::PathBuf {
    let mut json = String::from("{");
    for i in 0..keys {
        if i > 0 {
            json.push(',');
        }
        json += &format!(r#""k{i}":[{}]"#, entry(i));
    }
    json.push('}');
    let path =
        std::env::temp_dir().join(format!("memory-bounds-{}-{keys}.json", std::process::id()));
    std::fs::write(&path, json).unwrap();
    path
}

#[test]
fn a_file_over_the_bound_is_refused_with_what_was_being_compiled() {
    let path =
        file(20_000, |i| format!(r#"{{"headers":["x:Exact:v{i}"],"redirectPath":"/r{i}"}}"#));
    let unbounded = route_match::compile_file_at(&path, Syntax::Auto).unwrap();
    let need = unbounded.iter().next().unwrap().1.memory();
    drop(unbounded);
    let tight = Bounds { memory: need / 2, ..Bounds::default() };
    match route_match::compile_file_at_within(&path, Syntax::Auto, tight) {
        Err(FileError::Memory(m)) => {
            assert!(m.contains("more memory than allowed"), "{m}");
            assert!(m.contains(&format!("the limit of {} bytes was reached", need / 2)), "{m}");
        }
        other => panic!("{other:?}"),
    }
    // Within a bound with room, the same file compiles.
    let roomy = Bounds { memory: need * 4 + (1 << 20), ..Bounds::default() };
    assert!(route_match::compile_file_at_within(&path, Syntax::Auto, roomy).is_ok());
    let _ = std::fs::remove_file(&path);
}

#[test]
fn huge_patterns_stop_at_the_bound_not_after_compiling_them_all() {
    // 2,000 patterns of ~52 KB each (~100 MB): refused within about the bound.
    let path = file(2_000, |i| {
        format!(
            r#"{{"headers":["x:RegularExpression:(?:ab|cd){{3000}}N{i}"],"redirectPath":"/r"}}"#
        )
    });
    let bound = Bounds { memory: 8 << 20, ..Bounds::default() };
    let scope = pcre2_bounded::memory::Scope::open(usize::MAX);
    let r = route_match::compile_file_at_within(&path, Syntax::Auto, bound);
    assert!(
        matches!(&r, Err(FileError::Memory(m)) if m.contains("more memory than allowed")),
        "{r:?}"
    );
    drop(r);
    assert!(scope.used() < 1 << 20, "{} bytes left allocated after the refusal", scope.used());
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_pattern_over_its_own_bound_is_a_malformed_entry() {
    let json = br#"[{"headers":["x:RegularExpression:(?:ab|cd){3000}N"],"redirectPath":"/a"},
        {"any":true,"redirectPath":"/b"}]"#;
    let bounds = Bounds { memory: usize::MAX, pattern: 16 * 1024 };
    let c = route_match::compile_list_within(json, Syntax::Auto, bounds).unwrap();
    assert_eq!(c.warnings.len(), 1);
    assert!(c.warnings[0].message.contains("more than the 16384 bytes"), "{}", c.warnings[0]);
}

#[test]
fn a_list_over_the_bound_is_a_memory_error() {
    let json = br#"[{"headers":["x:RegularExpression:(?:ab|cd){3000}N"],"redirectPath":"/a"}]"#;
    let bounds = Bounds { memory: 20_000, pattern: usize::MAX };
    let e = route_match::compile_list_within(json, Syntax::Auto, bounds).unwrap_err();
    assert!(e.is_memory(), "{e}");
}
