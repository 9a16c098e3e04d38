//! What NGINX makes of a request before any `location` sees it: the request line's method
//! and target, the `Host` header and the header names it keeps. Written from NGINX 1.28's
//! `ngx_http_parse_request_line`, `ngx_http_parse_complex_uri` (with `merge_slashes on`, the
//! default, on a system whose path separator is `/`), `ngx_http_validate_host` and
//! `ngx_http_parse_header_line` (with `underscores_in_headers off` and
//! `ignore_invalid_headers on`, the defaults), so that `explain` looks up the location NGINX
//! looks up.
//!
//! - **Path (`$uri`)**: percent-decoded, every `%XX` but `%25` (`%`), `%23` (`#`) and `%3F`
//!   (`?`) then read as if it had been written so: `%2F` is a `/` and `%2e` a `.`, for
//!   the steps below too; `%00` and an invalid `%` are refused (400);
//! - runs of `/` merged into one; `.` segments dropped; a `..` segment drops the one before it,
//!   and one above the root is refused (400);
//! - `?` ends the path (the query follows, as sent, up to a `#`), `#` ends both;
//! - a control character (below 0x20, or 0x7f) or a space anywhere in the target is refused
//!   (400);
//!   bytes above 0x7f are kept as they are;
//! - an absolute target (`http://HOST[:PORT]/path`) names the host instead of `Host`.
//! - **Host**: lowercased, its port and one trailing `.` dropped; refused (400) when empty,
//!   with `..`, a `/` or a control character or space.
//! - **Methods**: upper-case letters, `_` and `-` only (else 400); `TRACE` and `CONNECT` are
//!   refused (405) before any location, once the target and the Host header were found valid.
//! - **Header names**: letters, digits and `-`; a header whose name has anything else (`_`
//!   among it) is ignored, as if not sent.

/// Why NGINX answers before any location: the status and what its error log says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub status: u16,
    pub why: &'static str,
}

fn bad(why: &'static str) -> Refused {
    Refused { status: 400, why }
}

/// A request target as NGINX reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Target {
    /// `$uri`: the decoded, normalised path the locations are matched against.
    pub uri: Vec<u8>,
    /// `$args`: the query as sent (not decoded), without the `?`.
    pub args: Vec<u8>,
    /// The host of an absolute target (`http://HOST/...`), validated and lowercased.
    pub host: Option<String>,
}

/// Reads a request target (what the request line has between the method and the version).
pub fn parse_target(raw: &[u8]) -> Result<Target, Refused> {
    if raw.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return Err(bad("client sent invalid request (a control character in the target)"));
    }
    // A space ends the target in the request line: what follows is not `HTTP/1.x`.
    if raw.contains(&b' ') {
        return Err(bad("client sent invalid request (a space in the target)"));
    }
    let (host, path) = match raw.first() {
        Some(b'/') => (None, raw.to_vec()),
        Some(c) if c.is_ascii_alphabetic() => absolute(raw)?,
        _ => return Err(bad("client sent invalid request (the target does not start with /)")),
    };
    let mut t = complex_uri(&path)?;
    t.host = host;
    Ok(t)
}

/// `scheme://host[:port]` then the path (`/` when there is none, before a query too):
/// (validated host, path).
fn absolute(raw: &[u8]) -> Result<(Option<String>, Vec<u8>), Refused> {
    let invalid = || bad("client sent invalid request (the absolute target)");
    let colon = raw.iter().position(|&b| b == b':').ok_or_else(invalid)?;
    let scheme_ok =
        raw[..colon].iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    let rest = raw[colon..].strip_prefix(b"://").filter(|_| scheme_ok).ok_or_else(invalid)?;
    // The host: letters, digits, `.` and `-` (or an IP literal in brackets); a port.
    let mut i = 0;
    if rest.first() == Some(&b'[') {
        let end = rest.iter().position(|&b| b == b']').ok_or_else(invalid)?;
        i = end + 1;
    } else {
        while i < rest.len() && (rest[i].is_ascii_alphanumeric() || matches!(rest[i], b'.' | b'-'))
        {
            i += 1;
        }
    }
    let host = validate_host(&rest[..i])?;
    let mut j = i;
    if rest.get(j) == Some(&b':') {
        j += 1;
        while j < rest.len() && rest[j].is_ascii_digit() {
            j += 1;
        }
    }
    let path = match rest.get(j) {
        None => b"/".to_vec(),
        Some(b'/') => rest[j..].to_vec(),
        Some(b'?') => [b"/", &rest[j..]].concat(),
        Some(_) => return Err(invalid()),
    };
    Ok((Some(host), path))
}

/// Where `ngx_http_parse_complex_uri` is within a path segment.
#[derive(Clone, Copy, PartialEq)]
enum Seg {
    Usual,
    Slash,
    Dot,
    DotDot,
}

/// `ngx_http_parse_complex_uri` with `merge_slashes on`: the path (up to `?` or `#`) decoded
/// and normalised, and the query.
pub fn complex_uri(raw: &[u8]) -> Result<Target, Refused> {
    let mut u: Vec<u8> = Vec::with_capacity(raw.len());
    let mut state = Seg::Usual;
    let mut i = 0;
    while i < raw.len() {
        let mut ch = raw[i];
        i += 1;
        // `%XX`: decoded, then read in the same state, except `%`, `#` and `?`, which stay
        // literal path bytes.
        if ch == b'%' {
            let hex = |b: Option<&u8>| b.and_then(|&b| (b as char).to_digit(16));
            let (Some(h), Some(l)) = (hex(raw.get(i)), hex(raw.get(i + 1))) else {
                return Err(bad("client sent invalid request (an invalid % escape)"));
            };
            i += 2;
            ch = (h * 16 + l) as u8;
            match ch {
                0 => return Err(bad("client sent invalid request (%00 in the path)")),
                b'%' | b'#' | b'?' => {
                    u.push(ch);
                    state = Seg::Usual;
                    continue;
                }
                _ => {}
            }
        } else if ch == b'?' || ch == b'#' {
            end_segment(state, &mut u)?;
            let rest = &raw[i..];
            let end = rest.iter().position(|&b| b == b'#').unwrap_or(rest.len());
            let args = if ch == b'?' { rest[..end].to_vec() } else { Vec::new() };
            return Ok(Target { uri: u, args, host: None });
        }
        state = step(state, ch, &mut u)?;
    }
    end_segment(state, &mut u)?;
    Ok(Target { uri: u, args: Vec::new(), host: None })
}

/// One (decoded) path byte: slashes merged, `.` and `..` segments resolved at their end.
fn step(state: Seg, ch: u8, u: &mut Vec<u8>) -> Result<Seg, Refused> {
    Ok(match (state, ch) {
        (Seg::Slash, b'/') => Seg::Slash,
        (Seg::Dot | Seg::DotDot, b'/') => {
            end_segment(state, u)?;
            Seg::Slash
        }
        (_, b'/') => {
            u.push(b'/');
            Seg::Slash
        }
        (Seg::Slash, b'.') => {
            u.push(b'.');
            Seg::Dot
        }
        (Seg::Dot, b'.') => {
            u.push(b'.');
            Seg::DotDot
        }
        (_, c) => {
            u.push(c);
            Seg::Usual
        }
    })
}

/// The end of a segment: a `.` one is dropped, a `..` one drops the segment before it
/// (`u` ends with "/.."; NGINX's `u -= 4` and walk back).
fn end_segment(state: Seg, u: &mut Vec<u8>) -> Result<(), Refused> {
    let above_root = || bad("client sent invalid request (a .. segment above the root)");
    match state {
        Seg::Dot => {
            u.pop();
        }
        Seg::DotDot => {
            let k = u.len().checked_sub(4).ok_or_else(above_root)?;
            let slash = u[..=k].iter().rposition(|&b| b == b'/').ok_or_else(above_root)?;
            u.truncate(slash + 1);
        }
        Seg::Usual | Seg::Slash => {}
    }
    Ok(())
}

/// `ngx_http_validate_host`: the host NGINX selects a server by.
pub fn validate_host(raw: &[u8]) -> Result<String, Refused> {
    let invalid = || bad("client sent invalid host header");
    #[derive(PartialEq)]
    enum S {
        Usual,
        Literal,
        Rest,
    }
    let mut state = S::Usual;
    let mut dot_pos: Option<usize> = None;
    let mut host_len = raw.len();
    for (i, &ch) in raw.iter().enumerate() {
        match ch {
            b'.' => {
                if i > 0 && dot_pos == Some(i - 1) {
                    return Err(invalid());
                }
                dot_pos = Some(i);
            }
            b':' if state == S::Usual => {
                host_len = i;
                state = S::Rest;
            }
            b'[' if i == 0 => state = S::Literal,
            b']' if state == S::Literal => {
                host_len = i + 1;
                state = S::Rest;
            }
            b':' | b'[' | b']' => {}
            b'/' => return Err(invalid()),
            c if c <= 0x20 || c == 0x7f => return Err(invalid()),
            _ => {}
        }
    }
    if host_len > 0 && dot_pos == Some(host_len - 1) {
        host_len -= 1;
    }
    if host_len == 0 {
        return Err(invalid());
    }
    Ok(String::from_utf8_lossy(&raw[..host_len]).to_ascii_lowercase())
}

/// Whether the request line's method is one NGINX reads: upper-case letters, `_` and `-`.
pub fn check_method_syntax(m: &str) -> Result<(), Refused> {
    if m.is_empty() || !m.bytes().all(|b| b.is_ascii_uppercase() || b == b'_' || b == b'-') {
        return Err(bad("client sent invalid method"));
    }
    Ok(())
}

/// A method NGINX passes to the locations, or why not (checked after the request line and
/// the headers were read: a bad target or Host is a 400 first).
pub fn check_method(m: &str) -> Result<(), Refused> {
    check_method_syntax(m)?;
    if m == "TRACE" || m == "CONNECT" {
        return Err(Refused { status: 405, why: "client sent TRACE or CONNECT method" });
    }
    Ok(())
}

/// Whether NGINX keeps a request header of this name (else it is ignored, as not sent).
pub fn header_kept(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(raw: &str) -> Result<(String, String), u16> {
        parse_target(raw.as_bytes())
            .map(|t| {
                (String::from_utf8_lossy(&t.uri).into_owned(), String::from_utf8(t.args).unwrap())
            })
            .map_err(|e| e.status)
    }

    fn path(raw: &str) -> String {
        uri(raw).unwrap().0
    }

    #[test]
    fn dot_segments_and_their_encodings() {
        assert_eq!(path("/coffee/../tea"), "/tea");
        assert_eq!(path("/coffee/%2e%2e/tea"), "/tea");
        assert_eq!(path("/coffee/%2E./tea"), "/tea");
        assert_eq!(path("/coffee/.%2e"), "/");
        assert_eq!(path("/a/./b/."), "/a/b/");
        assert_eq!(path("/a/b/.."), "/a/");
        assert_eq!(path("/a/.b/..c/...d"), "/a/.b/..c/...d");
        assert_eq!(path("/a."), "/a.");
        assert_eq!(path("/a/.?x"), "/a/");
        assert_eq!(path("/a/b/..?x"), "/a/");
        assert_eq!(path("/a/b/..#f"), "/a/");
        assert_eq!(uri("/.."), Err(400));
        assert_eq!(uri("/a/../.."), Err(400));
        assert_eq!(uri("/%2e%2e/a"), Err(400));
        assert_eq!(uri("//.."), Err(400));
    }

    #[test]
    fn slashes_merge_and_percent_2f_is_a_slash() {
        assert_eq!(path("/coffee%2Flatte"), "/coffee/latte");
        assert_eq!(path("/coffee%2flatte"), "/coffee/latte");
        assert_eq!(path("//coffee///latte//"), "/coffee/latte/");
        assert_eq!(path("/a%2F%2Fb"), "/a/b");
        assert_eq!(path("/a/%2F../b"), "/b");
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(path("/my%20path/123"), "/my path/123");
        assert_eq!(path("/%41%62"), "/Ab");
        // %25, %23 and %3F stay literal bytes, never decoded twice or ending the path.
        assert_eq!(path("/a%252e"), "/a%2e");
        assert_eq!(uri("/a%3Fb?c=%3F"), Ok(("/a?b".into(), "c=%3F".into())));
        assert_eq!(path("/a%23b"), "/a#b");
        assert_eq!(path("/%FF"), "/\u{FFFD}");
        assert_eq!(parse_target(b"/%FF").unwrap().uri, b"/\xff");
        assert_eq!(uri("/a%00"), Err(400));
        assert_eq!(uri("/a%zz"), Err(400));
        assert_eq!(uri("/a%2"), Err(400));
        assert_eq!(uri("/a%"), Err(400));
        // After the `?`, nothing is checked or decoded.
        assert_eq!(uri("/a?%zz=%00"), Ok(("/a".into(), "%zz=%00".into())));
        assert_eq!(path("/a+b"), "/a+b");
    }

    #[test]
    fn query_and_fragment() {
        assert_eq!(uri("/a?x=1&y=2"), Ok(("/a".into(), "x=1&y=2".into())));
        assert_eq!(uri("/a?x=1#frag"), Ok(("/a".into(), "x=1".into())));
        assert_eq!(uri("/a#frag?x=1"), Ok(("/a".into(), "".into())));
        assert_eq!(uri("/a?"), Ok(("/a".into(), "".into())));
        assert_eq!(uri("/a?b?c"), Ok(("/a".into(), "b?c".into())));
    }

    #[test]
    fn targets_nginx_refuses() {
        assert_eq!(uri("*"), Err(400));
        assert_eq!(uri("a"), Err(400));
        assert_eq!(uri("/a\x01b"), Err(400));
        assert_eq!(uri("/a\x7f"), Err(400));
        assert_eq!(uri(""), Err(400));
        assert_eq!(uri("/my path"), Err(400));
    }

    #[test]
    fn absolute_targets_name_the_host() {
        let t = parse_target(b"http://Cafe.Example.com:8080/coffee/../tea?x").unwrap();
        assert_eq!(t.host.as_deref(), Some("cafe.example.com"));
        assert_eq!((t.uri, t.args), (b"/tea".to_vec(), b"x".to_vec()));
        assert_eq!(parse_target(b"http://h").unwrap().uri, b"/");
        assert_eq!(uri("http:/h/"), Err(400));
        assert_eq!(uri("http://h_x/"), Err(400));
    }

    #[test]
    fn hosts() {
        let h = |s: &str| validate_host(s.as_bytes()).map_err(|e| e.status);
        assert_eq!(h("Cafe.Example.COM"), Ok("cafe.example.com".into()));
        assert_eq!(h("cafe.example.com."), Ok("cafe.example.com".into()));
        assert_eq!(h("cafe.example.com.:8080"), Ok("cafe.example.com".into()));
        assert_eq!(h("cafe.example.com:8080"), Ok("cafe.example.com".into()));
        assert_eq!(h("[::1]:80"), Ok("[::1]".into()));
        assert_eq!(h(".a"), Ok(".a".into()));
        assert_eq!(h("a_b"), Ok("a_b".into()));
        assert_eq!(h("a..b"), Err(400));
        assert_eq!(h("a/b"), Err(400));
        assert_eq!(h("a b"), Err(400));
        assert_eq!(h(""), Err(400));
        assert_eq!(h("."), Err(400));
        assert_eq!(h(":80"), Err(400));
    }

    #[test]
    fn methods_and_headers() {
        assert_eq!(check_method("GET"), Ok(()));
        assert_eq!(check_method("M-SEARCH"), Ok(()));
        assert_eq!(check_method("get").unwrap_err().status, 400);
        assert_eq!(check_method("TRACE").unwrap_err().status, 405);
        assert_eq!(check_method("CONNECT").unwrap_err().status, 405);
        assert!(header_kept("X-Team"));
        assert!(!header_kept("x_team"));
        assert!(!header_kept("x.team"));
    }
}
