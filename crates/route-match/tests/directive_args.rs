//! What the module's directives take from the engine, pure: the `syntax=` option split from
//! the other arguments, the empty inline list, and the `[emerg]` text of a file that does not
//! load (with the memory bound shown as bytes or `off`).

use route_match::{FileError, Syntax, bound_text, is_empty_list, split_syntax};

fn args<'a>(a: &[&'a str]) -> Vec<&'a [u8]> {
    a.iter().map(|s| s.as_bytes()).collect()
}

#[test]
fn syntax_is_split_from_the_other_arguments_the_last_one_wins() {
    let (s, rest) = split_syntax(args(&["m.json"])).unwrap();
    assert_eq!((s, rest), (Syntax::Auto, args(&["m.json"])));
    let (s, rest) = split_syntax(args(&["syntax=untyped", "[]", "syntax=typed"])).unwrap();
    assert_eq!((s, rest), (Syntax::Typed, args(&["[]"])));
    let (s, rest) = split_syntax(args(&[])).unwrap();
    assert_eq!((s, rest.len()), (Syntax::Auto, 0));
    let e = split_syntax(args(&["a", "syntax=loose"])).unwrap_err();
    assert_eq!(e, r#"invalid "syntax=loose": use auto, typed or untyped"#);
    assert!(split_syntax([&b"syntax=\xff"[..]]).unwrap_err().contains("syntax=\u{fffd}"));
}

#[test]
fn only_the_empty_array_is_the_empty_list() {
    for yes in ["[]", " [ \n\t\r] "] {
        assert!(is_empty_list(yes.as_bytes()), "{yes:?}");
    }
    for no in ["", "[", "[1]", "[ ]x", "[{}]", "{}"] {
        assert!(!is_empty_list(no.as_bytes()), "{no:?}");
    }
}

#[test]
fn a_file_that_does_not_load_says_why_and_the_bound() {
    let io = FileError::Io(std::io::Error::from(std::io::ErrorKind::NotFound));
    assert!(io.describe("/m.json", 5, 0).starts_with(r#"cannot read "/m.json": "#));
    let memory = FileError::Memory("out of memory at key \"k\"".into());
    assert_eq!(
        memory.describe("/m.json", usize::MAX, 42),
        "cannot compile \"/m.json\": out of memory at key \"k\" (http_matches_max_memory off; \
         42 bytes already taken by lists compiled before it)"
    );
    assert!(memory.describe("/m.json", 1024, 0).contains("(http_matches_max_memory 1024; 0 bytes"));
    let parse = route_match::compile_file(b"[", Syntax::Auto).unwrap_err();
    let text = FileError::Parse(parse).describe("/m.json", 0, 0);
    assert!(text.starts_with(r#"invalid "/m.json": "#), "{text}");
    assert_eq!((bound_text(usize::MAX), bound_text(0)), ("off".to_owned(), "0".to_owned()));
}

#[test]
fn max_memory_takes_a_size_or_off_then_a_pattern_size() {
    // A size as NGINX reads one, here: digits, then an optional `k`.
    let size = |v: &[u8]| {
        let (digits, unit) = match v.strip_suffix(b"k") {
            Some(d) => (d, 1024),
            None => (v, 1),
        };
        core::str::from_utf8(digits).ok()?.parse::<usize>().ok().map(|n| n * unit)
    };
    let m = |a: &[&str]| route_match::memory_args(&args(a), size).map_err(|e| e.to_vec());
    assert_eq!(m(&["64k"]), Ok((65536, None)));
    assert_eq!(m(&["off"]), Ok((usize::MAX, None)));
    assert_eq!(m(&["off", "pattern=2k"]), Ok((usize::MAX, Some(2048))));
    for (bad, refused) in [
        (&["0"][..], "0"),
        (&["x"], "x"),
        (&["pattern=1k"], "pattern=1k"),
        (&["1k", "2k"], "2k"),
        (&["1k", "off"], "off"),
        (&["1k", "pattern=off"], "pattern=off"),
        (&["1k", "pattern=0"], "pattern=0"),
    ] {
        assert_eq!(m(bad), Err(refused.as_bytes().to_vec()), "{bad:?}");
    }
}
