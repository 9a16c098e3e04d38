//! Paths given on the command line that NGINX is to read.

/// A file path NGINX is to read (`--module`, `--certificate`): refused when it has a byte
/// NGINX's configuration syntax gives a meaning (`;`, braces, quotes, `$`, `#`, white space,
/// control characters) or is empty.
pub(crate) fn check_path(option: &str, p: &str) -> Result<(), String> {
    let bad = p.chars().find(|c| {
        !(c.is_alphanumeric()
            || matches!(c, '/' | '.' | '_' | '-' | '+' | '~' | '@' | ',' | '=' | ':' | '%'))
    });
    match bad {
        _ if p.is_empty() => Err(format!("{option}: empty path")),
        Some(c) => Err(format!(
            "{option} {p:?}: the path has the character {c:?}; use a path of letters, digits \
             and /._-+~@,=:%"
        )),
        None => Ok(()),
    }
}
