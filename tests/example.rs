//! The example that scripts/run.sh serves and the README shows answers as documented.

mod common;

use common::{Headers, Nginx};

#[test]
fn ngf_blog_example_routes_as_documented() {
    let root = env!("CARGO_MANIFEST_DIR");
    let http = std::fs::read_to_string(format!("{root}/nginx-conf/example/http.conf")).unwrap();
    let json = std::fs::read_to_string(format!("{root}/nginx-conf/example/matches.json")).unwrap();
    let n = Nginx::start("example", &http, &[("matches.json", &json)]);
    let cases: &[(&str, Headers, &str)] = &[
        ("/coffee", &[], "coffee-v1 answered /coffee\n"),
        ("/coffee", &[("version", "v2")], "coffee-v2 answered /coffee\n"),
        ("/coffee/latte?TEST=v2", &[], "coffee-v2 answered /coffee/latte?TEST=v2\n"),
        ("/coffee?TEST=v1", &[("version", "v1")], "coffee-v1 answered /coffee?TEST=v1\n"),
        ("/coffee?a=1&TEST=v2&b=%20x+y", &[], "coffee-v2 answered /coffee?a=1&TEST=v2&b=%20x+y\n"),
    ];
    for (target, headers, want) in cases {
        let r = n.get(target, headers);
        assert_eq!((r.status, r.body.as_str()), (200, *want), "{target} {headers:?}");
    }
    assert_eq!(n.get("/tea", &[]).status, 404);
    n.finish();
}
