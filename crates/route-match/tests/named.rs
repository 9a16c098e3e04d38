//! `MatchList::unknown_named`: the load's check of `@name` redirect paths against the named
//! locations the module found (a path, not a `@name`, is never checked).

use route_match::{Syntax, compile_list};

const LIST: &str = r#"[{"headers":["y:Exact:1"],"redirectPath":"@gone"},
 {"headers":["y:Exact:2"],"redirectPath":"/plain"},
 {"headers":["y:Exact:3"],"redirectPath":"@here"},
 {"any":true,"redirectPath":"@gone"}]"#;

#[test]
fn each_unknown_name_is_a_warning_of_its_entry() {
    let list = compile_list(LIST.as_bytes(), Syntax::Auto).unwrap().list;
    let asked = core::cell::RefCell::new(Vec::new());
    let defined = |n: &[u8]| {
        asked.borrow_mut().push(String::from_utf8_lossy(n).into_owned());
        n == b"@here"
    };
    let w = list.unknown_named(None, defined, "this server does not define");
    let shown: Vec<String> = w.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            r#"$[0]: redirectPath "@gone" names a location that this server does not define"#,
            r#"$[3]: redirectPath "@gone" names a location that this server does not define"#,
        ]
    );
    assert_eq!(*asked.borrow(), ["@gone", "@here", "@gone"], "only @names are looked up");
}

#[test]
fn a_files_list_names_its_key_and_all_known_gives_none() {
    let list = compile_list(LIST.as_bytes(), Syntax::Auto).unwrap().list;
    let w = list.unknown_named(Some(b"k"), |n| n == b"@here", "no server defines");
    assert_eq!(w.len(), 2);
    assert_eq!(
        w[1].to_string(),
        r#"$["k"][3]: redirectPath "@gone" names a location that no server defines"#
    );
    assert!(list.unknown_named(Some(b"k"), |_| true, "no server defines").is_empty());
}
