//! Randomized: arbitrary bytes as header names, values and query strings never panic and
//! always give one of the three outcomes; arbitrary list text never panics the compiler.

mod common;

use common::{Req, list};
use proptest::prelude::*;
use route_match::{Outcome, Syntax, compile_file, compile_list};

const LIST: &str = r#"[
 {"method":"POST","redirectPath":"/r0"},
 {"headers":["version:Exact:v2","x:RegularExpression:^a.*,?b$"],"redirectPath":"/r1"},
 {"params":["TEST=Exact=v2","a b=RegularExpression=[%]"],"redirectPath":"/r2"},
 {"headers":["x-re:RegularExpression:(a+)+$"],"params":["k=Exact=v"],"redirectPath":"/r3"},
 {"headers":["x:Bogus:y"],"redirectPath":"/r4"},
 {"any":true,"redirectPath":"/r5"}]"#;

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..max),
        // Bytes that mean something to the parsers, to get past the first checks often.
        proptest::collection::vec(
            prop::sample::select(b"aAbvV2x-_ ,\t=&%+;:0fF\xff\x00TESTk".to_vec()),
            0..max
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_requests_never_panic(
        method in bytes(8),
        headers in proptest::collection::vec((bytes(12), bytes(40)), 0..8),
        query in bytes(80),
    ) {
        let l = list(LIST);
        let req = Req { method, headers, query, ..Req::default() };
        match l.evaluate(&req) {
            Outcome::Redirect { entry, path } => prop_assert_eq!(path, format!("/r{entry}")),
            Outcome::NoMatch => prop_assert!(false, "the list ends with any: true"),
            Outcome::Error(e) => prop_assert!(e.to_string().starts_with("entry 4 is invalid"), "{}", e),
        }
    }

    #[test]
    fn arbitrary_list_text_never_panics(text in bytes(200), fields in bytes(60)) {
        let _ = compile_list(&text, Syntax::Auto);
        let _ = compile_file(&text, Syntax::Auto);
        // Arbitrary strings inside a well-formed shape reach the entry compiler.
        let s = String::from_utf8_lossy(&fields).replace(['"', '\\'], "");
        let src = format!(r#"[{{"headers":["{s}"],"params":["{s}"],"method":"{s}","redirectPath":"/{s}"}}]"#);
        for syntax in [Syntax::Auto, Syntax::Typed, Syntax::Untyped] {
            if let Ok(c) = compile_list(src.as_bytes(), syntax) {
                let _ = c.list.evaluate(&Req::new("GET").h(&s, &s).q(&s));
            }
        }
    }
}
