//! What a location of `http_matches` says when a request has no list, or a `$http_matches`
//! value is refused before it is compiled (`var_cache::no_list`, `var_cache::refusal`).

use route_match::var_cache::{no_list, refusal};

#[test]
fn no_list_says_what_the_file_and_match_key_are() {
    let tail = ", and $http_matches is not set here";
    let start = "no match list for this request: no inline list, ";
    assert_eq!(no_list(false, true), format!("{start}no http_matches_load{tail}"));
    assert_eq!(no_list(true, false), format!("{start}$match_key is never set{tail}"));
    assert_eq!(no_list(true, true), format!("{start}$match_key is not set or empty here{tail}"));
}

#[test]
fn a_client_value_or_one_past_the_size_is_refused_shown_bounded() {
    assert_eq!(refusal(b"[]", false, 2), None);
    let client = refusal(b"[]", true, 100).unwrap();
    assert!(client.starts_with("$http_matches holds the client's \"Matches\" request header"));
    let long = vec![b'x'; 100];
    let why = refusal(&long, false, 99).unwrap();
    assert!(
        why.starts_with("$http_matches is 100 bytes, more than http_matches_var_max_size (99)"),
        "{why}"
    );
    // At most 64 bytes of the value are shown.
    assert!(why.len() < 200 && !why.contains(&"x".repeat(65)), "{why}");
}
