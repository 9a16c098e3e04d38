//! The `path` condition: an extension of the NGF format that `httproute-nginx` writes for
//! Gateway API paths one NGINX location cannot express (regular expressions, and prefix
//! fallbacks next to them). NGF never wrote it; njs ignored unknown fields.

mod common;

use common::{Req, list, one, run};
use route_match::{Syntax, compile_list};

fn at(path: &str) -> Req {
    Req::new("GET").p(path)
}

#[test]
fn exact_is_the_whole_path_byte_for_byte() {
    let l = one(r#""path":"Exact:/a/b""#);
    assert_eq!(run(&l, &at("/a/b")), "-> /hit");
    for miss in ["/a/b/", "/a", "/A/b", "/a/bc"] {
        assert_eq!(run(&l, &at(miss)), "404", "{miss}");
    }
}

#[test]
fn prefix_is_whole_segments_and_ignores_a_trailing_slash() {
    for cond in ["PathPrefix:/a", "PathPrefix:/a/"] {
        let l = one(&format!(r#""path":"{cond}""#));
        for hit in ["/a", "/a/", "/a/b", "/a//b"] {
            assert_eq!(run(&l, &at(hit)), "-> /hit", "{cond} {hit}");
        }
        for miss in ["/ab", "/", "/b/a", "/A"] {
            assert_eq!(run(&l, &at(miss)), "404", "{cond} {miss}");
        }
    }
    let root = one(r#""path":"PathPrefix:/""#);
    for hit in ["/", "/a", "/ab/c"] {
        assert_eq!(run(&root, &at(hit)), "-> /hit", "{hit}");
    }
}

#[test]
fn regex_is_an_unanchored_search_like_the_other_regexes() {
    let l = one(r#""path":"RegularExpression:/v[0-9]+/""#);
    assert_eq!(run(&l, &at("/api/v2/users")), "-> /hit");
    assert_eq!(run(&l, &at("/api/vx/users")), "404");
    let anchored = one(r#""path":"RegularExpression:^/api/v[0-9]+$""#);
    assert_eq!(run(&anchored, &at("/api/v12")), "-> /hit");
    assert_eq!(run(&anchored, &at("/x/api/v12")), "404");
    // Invalid UTF-8 in the path is data.
    let mut odd = Req::new("GET");
    odd.path = b"/\xff\x00/v1/".to_vec();
    assert_eq!(run(&l, &odd), "-> /hit");
}

#[test]
fn path_is_one_more_condition_all_of_which_must_hold() {
    let l = r#"[
        {"path":"PathPrefix:/tea","method":"POST","redirectPath":"/r0"},
        {"path":"RegularExpression:^/tea/[0-9]+$","headers":["v:Exact:2"],"redirectPath":"/r1"},
        {"path":"PathPrefix:/tea","redirectPath":"/r2"}
    ]"#;
    assert_eq!(run(l, &Req::new("POST").p("/tea/1")), "-> /r0");
    assert_eq!(run(l, &Req::new("GET").p("/tea/1").h("v", "2")), "-> /r1");
    assert_eq!(run(l, &Req::new("GET").p("/tea/x").h("v", "2")), "-> /r2");
    assert_eq!(run(l, &Req::new("GET").p("/coffee").h("v", "2")), "404");
}

#[test]
fn path_is_typed_in_an_untyped_source_too() {
    // Blog-era untyped strings elsewhere do not change how `path` is read.
    let l = r#"[{"headers":["v:2"],"path":"PathPrefix:/a","redirectPath":"/hit"}]"#;
    assert_eq!(run(l, &at("/a/x").h("v", "2")), "-> /hit");
    assert_eq!(run(l, &at("/b").h("v", "2")), "404");
}

#[test]
fn a_malformed_path_makes_the_entry_invalid_with_a_warning() {
    let cases = [
        (r#""Prefix:/a""#, "unknown match type \"Prefix\""),
        (r#""/a""#, "expected Exact:/path"),
        (r#""Exact:a""#, "must start with \"/\""),
        (r#""RegularExpression:(""#, "invalid regular expression \"(\""),
        (r#""RegularExpression:""#, "empty pattern"),
        ("7", "\"path\" must be a string"),
    ];
    for (value, want) in cases {
        let json = format!(
            r#"[{{"path":{value},"redirectPath":"/bad"}},{{"any":true,"redirectPath":"/ok"}}]"#
        );
        let c = compile_list(json.as_bytes(), Syntax::Auto).unwrap();
        assert_eq!(c.warnings.len(), 1, "{value}");
        assert!(c.warnings[0].message.contains(want), "{value}: {}", c.warnings[0]);
        let shown = common::show(c.list.evaluate(&at("/a")));
        assert!(shown.starts_with("500 entry 0 is invalid"), "{value}: {shown}");
    }
    // null is absent, like the other fields.
    assert_eq!(run(&one(r#""path":null"#), &at("/zz")), "-> /hit");
    let _ = list(r#"[{"path":"Exact:/","redirectPath":"/x"}]"#);
}
