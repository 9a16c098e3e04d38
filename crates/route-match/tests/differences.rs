//! Each place where this engine deliberately differs from `httpmatches.js`, one named test
//! each, plus the semantics the contract adds (sections 3-5).

mod common;

use common::{Req, list, one, run, show};
use route_match::{Outcome, Syntax, compile_file, compile_list};

#[test]
fn repeated_header_lines_any_line_can_match() {
    // njs joined repeated lines and compared only the first one.
    let l = one(r#""headers":["version:Exact:v2"]"#);
    assert_eq!(run(&l, &Req::new("GET").h("version", "v1").h("version", "v2")), "-> /hit");
    let re = one(r#""headers":["x:RegularExpression:^ab+c$"]"#);
    assert_eq!(run(&re, &Req::new("GET").h("x", "q").h("x", "abbc")), "-> /hit");
}

#[test]
fn whitespace_after_commas_is_trimmed() {
    // njs split on "," with no trim, so " v2" never equalled "v2".
    let l = one(r#""headers":["version:Exact:v2"]"#);
    assert_eq!(run(&l, &Req::new("GET").h("version", "v1, v2")), "-> /hit");
    assert_eq!(run(&l, &Req::new("GET").h("version", "v1,\t v2 \t,v3")), "-> /hit");
    let re = one(r#""headers":["x:RegularExpression:^abc$"]"#);
    assert_eq!(run(&re, &Req::new("GET").h("x", "zz,   abc")), "-> /hit");
    // Trimming is OWS only (SP, HTAB): other bytes stay.
    assert_eq!(run(&l, &Req::new("GET").h("version", "v1,\x0bv2")), "404");
}

#[test]
fn whole_line_values_containing_commas_match() {
    // njs only compared comma elements, so a value with a comma could never match exactly.
    let l = one(r#""headers":["accept:Exact:text/html, application/json"]"#);
    assert_eq!(run(&l, &Req::new("GET").h("Accept", "text/html, application/json")), "-> /hit");
    let re = one(r#""headers":["x:RegularExpression:^a, b$"]"#);
    assert_eq!(run(&re, &Req::new("GET").h("x", "a, b")), "-> /hit");
}

#[test]
fn args_are_not_re_encoded() {
    // njs rebuilt the query string with qs.stringify; the engine's outcome carries only the
    // path, so the module hands NGINX the request's own args (checked byte for byte end to end).
    let l = list(r#"[{"params":["TEST=Exact=v2 "],"redirectPath":"/r"}]"#);
    match l.evaluate(&Req::new("GET").q("b=2&TEST=v2+&a=%7e")) {
        Outcome::Redirect { entry: 0, path: "/r" } => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn prototype_names_are_ordinary_names() {
    // njs: a header match on `constructor` was a permanent 500; a param match on it never matched.
    let h = one(r#""headers":["constructor:Exact:x"]"#);
    assert_eq!(run(&h, &Req::new("GET").h("constructor", "x")), "-> /hit");
    assert_eq!(run(&h, &Req::new("GET")), "404");
    let p = one(r#""params":["constructor=Exact=c","__proto__=Exact=x","toString=Exact=t"]"#);
    let req = Req::new("GET").q("constructor=c&__proto__=x&toString=t");
    assert_eq!(run(&p, &req), "-> /hit");
}

#[test]
fn empty_first_param_counts_as_absent_even_if_repeated() {
    // njs: `?a=` failed every regex but `?a=&a=x` tested "" and matched `.*`.
    let l = one(r#""params":["a=RegularExpression=.*"]"#);
    assert_eq!(run(&l, &Req::new("GET").q("a=")), "404");
    assert_eq!(run(&l, &Req::new("GET").q("a=&a=x")), "404");
    assert_eq!(run(&l, &Req::new("GET").q("a")), "404");
    assert_eq!(run(&l, &Req::new("GET").q("a=0")), "-> /hit");
}

#[test]
fn bad_regex_is_an_error_when_reached_even_without_the_header() {
    // njs compiled per request and failed only when the header was present.
    let c = compile_list(br#"[{"headers":["x:RegularExpression:(["]}]"#, Syntax::Auto).unwrap();
    assert_eq!(c.warnings.len(), 1);
    assert!(c.warnings[0].message.contains("missing terminating ]"), "{:?}", c.warnings);
    assert!(show(c.list.evaluate(&Req::new("GET"))).starts_with("500 entry 0 is invalid"));
}

#[test]
fn header_names_case_insensitive_dash_and_underscore_differ() {
    let l = one(r#""headers":["X-Version:Exact:v2"]"#);
    assert_eq!(run(&l, &Req::new("GET").h("x-VERSION", "v2")), "-> /hit");
    assert_eq!(run(&l, &Req::new("GET").h("x_version", "v2")), "404");
    assert_eq!(run(&l, &Req::new("GET").h("x-versio", "v2")), "404");
}

#[test]
fn empty_header_value_fails() {
    let l = one(r#""headers":["x:RegularExpression:.*"]"#);
    assert_eq!(run(&l, &Req::new("GET").h("x", "")), "404");
    assert_eq!(run(&l, &Req::new("GET").h("x", "").h("x", "y")), "-> /hit");
}

#[test]
fn method_is_byte_exact_head_is_not_get() {
    let l = one(r#""method":"GET""#);
    assert_eq!(run(&l, &Req::new("HEAD")), "404");
    assert_eq!(run(&l, &Req::new("GETX")), "404");
    assert_eq!(run(&l, &Req::new("GET")), "-> /hit");
}

#[test]
fn first_match_wins_and_later_entries_are_never_evaluated() {
    // Malformed in any syntax: no separator at all.
    let bad = r#"{"headers":["x"],"redirectPath":"/bad"}"#;
    let good = r#"{"headers":["x:Exact:y"],"redirectPath":"/good"}"#;
    let any = r#"{"any":true,"redirectPath":"/any"}"#;
    assert_eq!(run(&format!("[{any},{bad}]"), &Req::new("GET")), "-> /any");
    assert!(run(&format!("[{bad},{any}]"), &Req::new("GET")).starts_with("500 entry 0"));
    assert_eq!(run(&format!("[{good},{bad}]"), &Req::new("GET").h("x", "y")), "-> /good");
}

#[test]
fn entry_with_no_conditions_or_empty_lists_matches_everything() {
    assert_eq!(run(r#"[{"redirectPath":"/x"}]"#, &Req::new("PUT")), "-> /x");
    assert_eq!(
        run(r#"[{"headers":[],"params":[],"redirectPath":"/x"}]"#, &Req::new("PUT")),
        "-> /x"
    );
}

#[test]
fn syntax_is_decided_per_source() {
    // One typed string makes the whole source typed: the untyped string is then malformed.
    let src = r#"[{"params":["a=Exact=1"],"redirectPath":"/t"},{"params":["arg=a=b"],"redirectPath":"/u"}]"#;
    let c = compile_list(src.as_bytes(), Syntax::Auto).unwrap();
    assert_eq!(c.warnings.len(), 1);
    assert!(c.warnings[0].message.contains("unknown match type \"a\""), "{:?}", c.warnings);
    // Untyped source: `arg=a=b` is name `arg`, value `a=b`.
    let u = r#"[{"params":["arg=a=b"],"redirectPath":"/u"}]"#;
    assert_eq!(run(u, &Req::new("GET").q("arg=a%3Db")), "-> /u");
    // The override wins over the guess.
    let forced = compile_list(u.as_bytes(), Syntax::Typed).unwrap();
    assert_eq!(forced.warnings.len(), 1);
    let forced =
        compile_list(br#"[{"params":["v=Exact=1"],"redirectPath":"/u"}]"#, Syntax::Untyped);
    assert_eq!(show(forced.unwrap().list.evaluate(&Req::new("GET").q("v=Exact%3D1"))), "-> /u");
}

#[test]
fn header_values_may_contain_colons_and_params_equals() {
    let l = one(r#""headers":["referer:Exact:http://a:8080/x"],"params":["q=Exact=a=b"]"#);
    assert_eq!(run(&l, &Req::new("GET").h("Referer", "http://a:8080/x").q("q=a=b")), "-> /hit");
}

#[test]
fn params_decode_and_compare_case_sensitively() {
    let l = one(r#""params":["na me=Exact=v/1 2"]"#);
    assert_eq!(run(&l, &Req::new("GET").q("na+me=v%2F1%202")), "-> /hit");
    assert_eq!(run(&l, &Req::new("GET").q("NA+me=v%2F1%202")), "404");
    // Invalid escapes stay literal; `;` is data.
    let l = one(r#""params":["p=Exact=%zz;x"]"#);
    assert_eq!(run(&l, &Req::new("GET").q("p=%zz;x")), "-> /hit");
}

#[test]
fn regex_is_unanchored_search() {
    let l = one(r#""headers":["ua:RegularExpression:Firefox/1[0-9]{2}"]"#);
    assert_eq!(
        run(&l, &Req::new("GET").h("User-Agent", "x").h("ua", "Mozilla Firefox/128.0")),
        "-> /hit"
    );
}

#[test]
fn odd_bytes_are_data() {
    let mut req = Req::new("GET");
    req.headers.push((b"x\xff".to_vec(), b"\x00\xfe,\xff".to_vec()));
    req.query = b"%ff=%00&k=\xfe".to_vec();
    let l = one(r#""headers":["x-a:RegularExpression:."],"params":["k=Exact=v"]"#);
    assert_eq!(run(&l, &req), "404");
    // Matched in place (PCRE2_MATCH_INVALID_UTF), never copied: an invalid byte is not the
    // U+FFFD njs saw, and matches no item of a pattern; the valid text around it does.
    let l = one(r#""params":["k=RegularExpression=^\ufffd$"]"#);
    assert_eq!(run(&l, &req), "404", "invalid UTF-8 is not U+FFFD");
    let l = one(r#""params":["k=RegularExpression=."]"#);
    assert_eq!(run(&l, &req), "404", "an invalid byte matches no item");
    req.query = b"k=v1\xfe".to_vec();
    let l = one(r#""params":["k=RegularExpression=^v[0-9]"]"#);
    assert_eq!(run(&l, &req), "-> /hit", "valid text before an invalid byte matches");
}

#[test]
fn catastrophic_regex_is_no_match_and_reported() {
    let l = list(
        r#"[{"headers":["x:RegularExpression:(a+)+$"],"redirectPath":"/slow"},{"any":true,"redirectPath":"/any"}]"#,
    );
    let mut value = "a".repeat(64 * 1024);
    value.push('!');
    let req = Req::new("GET").h("x", &value);
    assert_eq!(show(l.evaluate(&req)), "-> /any");
    let failures = req.regex_failures.borrow();
    assert_eq!(failures.len(), 1, "reported once per evaluation: {failures:?}");
    assert!(failures[0].starts_with("0 (a+)+$ "), "{failures:?}");
    assert!(failures[0].contains("match limit"), "{failures:?}");
}

#[test]
fn redirect_path_shape_is_checked_at_load() {
    for (path, why) in
        [("coffee", "must start with"), ("/a?b=1", "has a \"?\""), ("@", "must start with")]
    {
        let src = format!(r#"[{{"any":true,"redirectPath":"{path}"}}]"#);
        let c = compile_list(src.as_bytes(), Syntax::Auto).unwrap();
        assert!(c.warnings[0].message.contains(why), "{path}: {:?}", c.warnings);
    }
    assert_eq!(run(r#"[{"any":true,"redirectPath":"@named"}]"#, &Req::new("GET")), "-> @named");
}

#[test]
fn malformed_fields_are_invalid_entries_with_warnings() {
    let src = br#"[
        {"method":1,"redirectPath":"/a"},
        {"headers":"x:Exact:y","redirectPath":"/b"},
        {"params":[1],"redirectPath":"/c"},
        {"any":"yes","redirectPath":"/d"},
        {"redirectPath":5},
        {"headers":["bad name:Exact:y"],"redirectPath":"/e"},
        {"method":"GET"},
        {"any":true,"redirectPath":"/ok"}]"#;
    let c = compile_list(src, Syntax::Auto).unwrap();
    let got: Vec<String> = c.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        got,
        [
            "$[0]: \"method\" must be a string, not 1",
            "$[1]: \"headers\" must be an array of strings, not \"x:Exact:y\"",
            "$[2]: \"params\" has a non-string item 1",
            "$[3]: \"any\" must be a boolean, not \"yes\"",
            "$[4]: \"redirectPath\" must be a string, not 5",
            "$[5]: invalid header match \"bad name:Exact:y\": header name has the character ' '",
            "$[6]: no redirectPath",
        ]
    );
}

#[test]
fn file_shares_identical_lists_and_reports_each_once() {
    let src = br#"{
        "1_0": [{"headers":["v:Bogus:x"],"redirectPath":"/a"},{"any":true,"redirectPath":"/b"}],
        "2_0": [{"headers":["v:Bogus:x"],"redirectPath":"/a"},{"any":true,"redirectPath":"/b"}],
        "SSL_1_0": [{"headers":["v:Exact:x"],"redirectPath":"/a"}]}"#;
    let f = compile_file(src, Syntax::Auto).unwrap();
    assert_eq!((f.len(), f.distinct()), (3, 2));
    let got: Vec<String> = f.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        got,
        ["$[\"1_0\"][0]: invalid header match \"v:Bogus:x\": unknown match type \"Bogus\" \
          (expected Exact or RegularExpression) (the same list is under 1 other key(s))"]
    );
    let req = Req::new("GET").h("v", "x");
    assert_eq!(show(f.get(b"SSL_1_0").unwrap().evaluate(&req)), "-> /a");
    assert!(show(f.get(b"2_0").unwrap().evaluate(&req)).starts_with("500"));
    assert!(compile_file(b"{}", Syntax::Auto).unwrap().is_empty());
}
