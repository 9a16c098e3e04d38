//! Every test vector of NGF's `httpmatches.test.js` (HEAD, gen c typed strings, and the
//! blog-era gen a untyped strings) and the extra vectors recorded against real nginx + njs,
//! expressed in this engine's semantics (contract sections 3-4). Where we deliberately differ
//! from njs the row says so; the named tests in `differences.rs` cover each difference.

mod common;

use common::{Req, list, one, run, show};
use route_match::{Syntax, compile_file, compile_list};

fn typed(json: &str, req: &Req) -> String {
    show(compile_list(json.as_bytes(), Syntax::Typed).unwrap().list.evaluate(req))
}

// ---- HEAD (gen c): testMatch -------------------------------------------------------------

#[test]
fn head_test_match() {
    let get = || Req::new("GET");
    let rows: &[(&str, Req, &str)] = &[
        (r#""any":true"#, get(), "-> /hit"),
        (r#""method":"GET""#, get(), "-> /hit"),
        (r#""headers":["header:Exact:value"]"#, get().h("header", "value"), "-> /hit"),
        (r#""params":["key=Exact=value"]"#, get().q("key=value"), "-> /hit"),
        (
            r#""method":"GET","headers":["header:Exact:value"],"params":["key=Exact=value"]"#,
            get().h("header", "value").q("key=value"),
            "-> /hit",
        ),
        (r#""method":"POST""#, get(), "404"),
        (r#""method":"GET","headers":["header:Exact:value"]"#, get(), "404"),
        (
            r#""method":"GET","headers":["header:Exact:value"],"params":["key=Exact=value"]"#,
            get().h("header", "value"),
            "404",
        ),
        (
            r#""headers":["malformedheader"]"#,
            get(),
            "500 entry 0 is invalid: invalid header match \"malformedheader\": expected name:value",
        ),
        (
            r#""params":["keyvalue"]"#,
            get(),
            "500 entry 0 is invalid: invalid query parameter match \"keyvalue\": expected name=value",
        ),
    ];
    for (i, (fields, req, want)) in rows.iter().enumerate() {
        assert_eq!(run(&one(fields), req), *want, "testMatch row {}", i + 1);
    }
}

// ---- HEAD: findWinningMatch --------------------------------------------------------------

const HEADER: &str = r#"{"headers":["header:Exact:value"],"redirectPath":"/header"}"#;
const QP: &str = r#"{"params":["key=Exact=value"],"redirectPath":"/qp"}"#;
const METHOD: &str = r#"{"method":"POST","redirectPath":"/method"}"#;
const ANY: &str = r#"{"any":true,"redirectPath":"/any"}"#;
const BAD: &str = r#"{"headers":["malformed"],"redirectPath":"/bad"}"#;

#[test]
fn head_find_winning_match() {
    let l = format!("[{HEADER},{QP},{METHOD},{ANY}]");
    let r = run(&l, &Req::new("POST").q("key=value"));
    assert_eq!(r, "-> /qp", "row 1: the first satisfied entry wins, not the method one");
    assert_eq!(run(&format!("[{HEADER},{QP},{METHOD}]"), &Req::new("GET")), "404", "row 2");
    assert_eq!(
        run(&format!("[{HEADER},{QP},{BAD}]"), &Req::new("GET")),
        "500 entry 2 is invalid: invalid header match \"malformed\": expected name:Exact:value or \
         name:RegularExpression:value",
        "row 3"
    );
}

// ---- HEAD: headersMatch ------------------------------------------------------------------

const MULTI: &str = r#""headers":["header1:Exact:VALUE1","header2:RegularExpression:Header-[a-z]{1}","header3:Exact:value3"]"#;

#[test]
fn head_headers_match() {
    let get = || Req::new("GET");
    // Rows 1-3 throw in njs. Here a source is typed or untyped as a whole: alone, `name:value`
    // is a valid untyped header (row 1); in a typed source it is malformed.
    assert_eq!(run(&one(r#""headers":["name:value"]"#), &get()), "404", "row 1, untyped source");
    assert_eq!(
        typed(&one(r#""headers":["name:value"]"#), &get()),
        "500 entry 0 is invalid: invalid header match \"name:value\": expected name:Exact:value \
         or name:RegularExpression:value",
        "row 1, typed source"
    );
    assert!(
        run(&one(r#""headers":["wrong=delimiter"]"#), &get())
            .starts_with("500 entry 0 is invalid: invalid header match \"wrong=delimiter\""),
        "row 2"
    );
    assert_eq!(
        typed(&one(r#""headers":["key:Incorrect:val"]"#), &get().h("key", "val")),
        "500 entry 0 is invalid: invalid header match \"key:Incorrect:val\": unknown match type \
         \"Incorrect\" (expected Exact or RegularExpression)",
        "row 3"
    );
    let rows: &[(Req, &str)] = &[
        (get().h("header1", "VALUE1").h("header2", "value2").h("header3", "wrong-value"), "404"),
        (get().h("header1", "value1").h("header2", "value2").h("header3", "value3"), "404"),
        (get().h("header1", "VALUE1").h("header2", "Header-a").h("header3", "value3"), "-> /hit"),
    ];
    for (i, (req, want)) in rows.iter().enumerate() {
        assert_eq!(run(&one(MULTI), req), *want, "row {}", i + 4);
    }
    let mv = one(r#""headers":["multiValueHeader:Exact:val3"]"#);
    assert_eq!(run(&mv, &get().h("multiValueHeader", "val1,val2,val3,val4,val5")), "-> /hit");
    let referer = one(r#""headers":["Referer:Exact:https://example.com/path"]"#);
    assert_eq!(run(&referer, &get().h("Referer", "https://example.com/path")), "-> /hit", "row 8");
    let zoom = one(r#""headers":["Referer:RegularExpression:^https://zoom\\.us(/|$)"]"#);
    assert_eq!(run(&zoom, &get().h("Referer", "https://zoom.us/meeting")), "-> /hit", "row 9");
    assert_eq!(run(&zoom, &get().h("Referer", "https://invalid.com")), "404", "row 10");
}

// ---- HEAD: paramsMatch -------------------------------------------------------------------

/// P: `Arg1=Exact=value1`, `arg2=Exact=value2=SOME=other=value`, `arg3=Exact===value3&*1(*+`.
const P_TYPED: &str = r#""params":["Arg1=Exact=value1","arg2=Exact=value2=SOME=other=value","arg3=Exact===value3&*1(*+"]"#;
const P_UNTYPED: &str =
    r#""params":["Arg1=value1","arg2=value2=SOME=other=value","arg3===value3&*1(*+"]"#;
/// arg2 and arg3 as a client sends them (`&` and `+` percent-encoded in the value).
const ARG2: &str = "arg2=value2=SOME=other=value";
const ARG3: &str = "arg3=%3D%3Dvalue3%26*1(*%2B";

fn params_rows(p: &str, era: &str) {
    let q = |s: String| Req::new("GET").q(&s);
    let rows: Vec<(usize, Req, &str)> = vec![
        (5, q(format!("{ARG2}&{ARG3}")), "404"),
        (6, q(format!("Arg1=value1&{ARG2}&arg3=")), "404"),
        (7, q(format!("Arg1=Arg1%3Dnot-value-1&{ARG2}&{ARG3}")), "404"),
        (8, q(format!("Arg1=VALUE1&{ARG2}&{ARG3}")), "404"),
        (9, q(format!("Arg1=value1&{ARG2}&ARG3=%3D%3Dvalue3%26*1(*%2B")), "404"),
        (10, q(format!("Arg1=value1&{ARG2}&{ARG3}")), "-> /hit"),
        (11, q(format!("Arg1=value1&Arg1=value2&{ARG2}&{ARG3}")), "-> /hit"),
        (14, q(format!("Arg1=value2&Arg1=value1&{ARG2}&{ARG3}")), "404"),
    ];
    for (row, req, want) in rows {
        assert_eq!(run(&one(p), &req), want, "{era} paramsMatch row {row}");
    }
}

#[test]
fn head_params_match() {
    let get = || Req::new("GET");
    assert!(run(&one(r#""params":["=Exact=nokey"]"#), &get()).contains("empty name"), "row 1");
    assert!(run(&one(r#""params":["novalue=Exact="]"#), &get()).contains("empty value"), "row 2");
    assert!(run(&one(r#""params":["keyval"]"#), &get()).contains("expected name=value"), "row 3");
    assert!(
        typed(&one(r#""params":["key=Incorrect=val"]"#), &get())
            .contains("invalid query parameter match \"key=Incorrect=val\": unknown match type"),
        "row 4"
    );
    params_rows(P_TYPED, "HEAD");
    let re = one(r#""params":["key=RegularExpression=Query-[a-z]{1}"]"#);
    assert_eq!(run(&re, &get().q("key=Query-a")), "-> /hit", "row 12");
    assert_eq!(run(&re, &get().q("key=value")), "404", "row 13");
    let ver = one(r#""params":["version=RegularExpression=^v[0-9]+\\.[0-9]+$"]"#);
    assert_eq!(run(&ver, &get().q("version=v1.2")), "-> /hit", "row 15");
    assert_eq!(run(&ver, &get().q("version=v1.2-beta")), "404", "row 16");
}

// ---- HEAD: redirectForMatchList and extractMatchesFromRequest ----------------------------

const HDR_M: &str = r#"{"headers":["header1:Exact:VALUE1","header2:Exact:value2","header3:Exact:value3"],"redirectPath":"/headers"}"#;
const ALL_M: &str = r#"{"method":"GET","headers":["header1:Exact:value1","header2:Exact:value2"],"params":["Arg1=Exact=value1","arg2=Exact=value2=SOME=other=value"],"redirectPath":"/a-match"}"#;

#[test]
fn head_redirect_for_match_list() {
    // Row 1: a null list is not a list at all: refused when it is loaded.
    let e = compile_list(b"null", Syntax::Auto).unwrap_err();
    assert_eq!(e.message(), "invalid type: null, expected an array of match entries at $");
    assert!(run(r#"[{"headers":["malformedheader"]}]"#, &Req::new("GET")).starts_with("500"));
    assert_eq!(run(r#"[{"method":"POST"}]"#, &Req::new("GET")), "404", "row 3");
    assert_eq!(
        run(r#"[{"method":"GET"}]"#, &Req::new("GET")),
        "500 entry 0 matched but has no redirectPath",
        "row 4"
    );
    let qp = format!(r#"{{{P_TYPED},"redirectPath":"/params"}}"#);
    let l = format!("[{HDR_M},{qp},{ALL_M},{ANY}]");
    let req = Req::new("GET")
        .h("header1", "value1")
        .h("header2", "value2")
        .q("Arg1=value1&arg2=value2=SOME=other=value");
    // njs re-encoded the args into the redirect; the engine only picks the entry, and the
    // module passes the original query string through (tested end to end).
    assert_eq!(run(&l, &req), "-> /a-match", "row 5");
}

#[test]
fn head_extract_and_verify() {
    let f = compile_file(br#"{"test":[{"match":"value"}]}"#, Syntax::Auto).unwrap();
    assert!(f.get(b"test").is_some(), "extract row 4: unknown fields are ignored");
    assert!(f.get(b"other").is_none(), "extract row 2: unknown key");
    let e = compile_file(br#"{"test":{}}"#, Syntax::Auto).unwrap_err();
    assert!(e.message().contains("expected an array of match entries at $[\"test\"]"), "row 3");
    assert!(compile_list(br#""{}""#, Syntax::Auto).is_err(), "verify row 1: a string");
    let e = compile_list(b"[]", Syntax::Auto).unwrap_err();
    assert_eq!(e.message(), "the match list at $ is empty", "verify row 2");
    assert!(compile_list(br#"[{"any":true}]"#, Syntax::Auto).is_ok(), "verify row 3");
}

// ---- Blog era (gen a, untyped) -----------------------------------------------------------

#[test]
fn blog_era_test_match_and_winner() {
    let get = || Req::new("GET");
    assert_eq!(run(&one(r#""headers":["header:value"]"#), &get().h("header", "value")), "-> /hit");
    assert_eq!(run(&one(r#""params":["key=value"]"#), &get().q("key=value")), "-> /hit");
    assert_eq!(
        run(
            &one(r#""method":"GET","headers":["header:value"],"params":["key=value"]"#),
            &get().h("header", "value")
        ),
        "404"
    );
    let header = r#"{"headers":["header:value"],"redirectPath":"/header"}"#;
    let qp = r#"{"params":["key=value"],"redirectPath":"/qp"}"#;
    let l = format!("[{header},{qp},{METHOD},{ANY}]");
    assert_eq!(run(&l, &Req::new("POST").q("key=value")), "-> /qp");
    assert!(run(&format!("[{header},{qp},{BAD}]"), &get()).starts_with("500 entry 2 is invalid"));
}

#[test]
fn blog_era_headers_match() {
    let get = || Req::new("GET");
    // Row 1 (`too:many:colons`) threw in njs; here the value may hold colons (a URL does).
    let colons = one(r#""headers":["too:many:colons"]"#);
    assert_eq!(run(&colons, &get()), "404");
    assert_eq!(run(&colons, &get().h("too", "many:colons")), "-> /hit");
    assert!(run(&one(r#""headers":["wrong=delimiter"]"#), &get()).starts_with("500"));
    let multi = one(r#""headers":["header1:VALUE1","header2:value2","header3:value3"]"#);
    let h = |a: &str, c: &str| get().h("header1", a).h("header2", "value2").h("header3", c);
    assert_eq!(run(&multi, &h("VALUE1", "wrong")), "404", "row 3");
    assert_eq!(run(&multi, &h("value1", "value3")), "404", "row 4");
    assert_eq!(run(&multi, &h("VALUE1", "value3")), "-> /hit", "row 5");
    let mv = one(r#""headers":["multiValueHeader:val3"]"#);
    assert_eq!(run(&mv, &get().h("multiValueHeader", "val1,val2,val3,val4,val5")), "-> /hit");
}

#[test]
fn blog_era_params_match() {
    let get = || Req::new("GET");
    assert!(run(&one(r#""params":["=nokey"]"#), &get()).contains("empty name"));
    assert!(run(&one(r#""params":["novalue="]"#), &get()).contains("empty value"));
    assert!(run(&one(r#""params":["keyval"]"#), &get()).contains("expected name=value"));
    params_rows(P_UNTYPED, "blog era");
}

#[test]
fn blog_era_redirect() {
    let hdr = r#"{"headers":["header1:VALUE1","header2:value2","header3:value3"],"redirectPath":"/headers"}"#;
    let qp = format!(r#"{{{P_UNTYPED},"redirectPath":"/params"}}"#);
    let all = r#"{"method":"GET","headers":["header1:value1","header2:value2"],"params":["Arg1=value1","arg2=value2=SOME=other=value"],"redirectPath":"/a-match"}"#;
    let req = Req::new("GET")
        .h("header1", "value1")
        .h("header2", "value2")
        .q("Arg1=value1&arg2=value2=SOME=other=value");
    assert_eq!(run(&format!("[{hdr},{qp},{all},{ANY}]"), &req), "-> /a-match");
    assert_eq!(
        run(r#"[{"method":"GET"}]"#, &Req::new("GET")),
        "500 entry 0 matched but has no redirectPath"
    );
}

// ---- Extra vectors from real nginx + njs (reference section 3.3) -------------------------

const LIST_1_0: &str = r#"[
 {"method":"POST","redirectPath":"/r0"},
 {"headers":["version:Exact:v2"],"redirectPath":"/r1"},
 {"params":["TEST=Exact=v2"],"redirectPath":"/r2"},
 {"headers":["x-re:RegularExpression:^ab+c$"],"redirectPath":"/r3"},
 {"params":["re=RegularExpression=^v[0-9]+$"],"redirectPath":"/r4"},
 {"any":true,"redirectPath":"/r5"}]"#;

#[test]
fn real_nginx_vectors() {
    let l = list(LIST_1_0);
    let get = || Req::new("GET");
    // (request, njs answer, our answer); they differ only where njs had a bug.
    let rows: Vec<(&str, Req, &str, &str)> = vec![
        ("GET", get(), "/r5", "/r5"),
        ("POST", Req::new("POST"), "/r0", "/r0"),
        ("TEST=v2&b=2", get().q("TEST=v2&b=2"), "/r2", "/r2"),
        ("version: v2", get().h("version", "v2"), "/r1", "/r1"),
        ("Version: v2", get().h("Version", "v2"), "/r1", "/r1"),
        ("version: V2", get().h("version", "V2"), "/r5", "/r5"),
        ("two lines v1, v2", get().h("version", "v1").h("version", "v2"), "/r5", "/r1"),
        ("two lines v2, v1", get().h("version", "v2").h("version", "v1"), "/r1", "/r1"),
        ("version: v1,v2", get().h("version", "v1,v2"), "/r1", "/r1"),
        ("version: v1, v2", get().h("version", "v1, v2"), "/r5", "/r1"),
        ("x-re: abbbc", get().h("x-re", "abbbc"), "/r3", "/r3"),
        ("x-re: zz,abc", get().h("x-re", "zz,abc"), "/r3", "/r3"),
        ("x-re: abc, zz", get().h("x-re", "abc, zz"), "/r3", "/r3"),
        ("x-re: zz, abc", get().h("x-re", "zz, abc"), "/r5", "/r3"),
        ("x-re: q + x-re: abc", get().h("x-re", "q").h("x-re", "abc"), "/r5", "/r3"),
        ("TEST=v2&TEST=v3", get().q("TEST=v2&TEST=v3"), "/r2", "/r2"),
        ("TEST=v3&TEST=v2", get().q("TEST=v3&TEST=v2"), "/r5", "/r5"),
        ("TEST=v%32", get().q("TEST=v%32"), "/r2", "/r2"),
        ("test=v2", get().q("test=v2"), "/r5", "/r5"),
        ("TEST=v2+", get().q("TEST=v2+"), "/r5", "/r5"),
        ("re=v12", get().q("re=v12"), "/r4", "/r4"),
    ];
    for (what, req, njs, ours) in rows {
        assert_eq!(show(l.evaluate(&req)), format!("-> {ours}"), "{what} (njs: {njs})");
    }
    assert_eq!(run(&one(r#""method":"get""#), &get()), "404", "method is case-sensitive");
    assert_eq!(
        run(r#"[null]"#, &get()),
        "500 entry 0 is invalid: entry is not a JSON object: null"
    );
    assert_eq!(
        run(r#"[{"redirectPath":""}]"#, &get()),
        "500 entry 0 matched but has no redirectPath"
    );
}
