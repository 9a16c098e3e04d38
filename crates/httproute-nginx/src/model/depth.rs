//! A linear pre-scan of a manifest file for flow nesting (`[`, `{`), before the YAML parser
//! sees it: libyaml's scanner does work proportional to the nesting depth for every token, so
//! deep nesting costs quadratic time (400 KB of `[a, ` took over a minute). Deeper than
//! [`MAX_DEPTH`] is refused here, in one pass over the bytes.
//!
//! The scan is conservative: it skips quoted scalars, comments and block scalars (`|`, `>`),
//! and counts a `[` or `{` in block context only where a node can start (so `a: x[1` is a
//! plain scalar, as YAML reads it). It can over-count only in exotic plain scalars; what it
//! passes, the parser's own recursion limit (128) still bounds.

/// The deepest flow nesting accepted. Kubernetes objects nest about 20 levels at most
/// (`managedFields` included); each level adds to the parser's cost per token, and the
/// parser's own recursion limit (128, block and flow levels together) still applies after.
pub const MAX_DEPTH: usize = 64;

/// `Err((line, column))` (1-based) of the first `[` or `{` deeper than [`MAX_DEPTH`].
pub fn check(text: &str) -> Result<(), (usize, usize)> {
    let b = text.as_bytes();
    let (mut i, mut depth, mut line, mut line_start) = (0usize, 0usize, 1usize, 0usize);
    // In block context: whether the next non-space byte may start a node.
    let mut node_start = true;
    while i < b.len() {
        let c = b[i];
        let prev = if i == 0 { b'\n' } else { b[i - 1] };
        match c {
            b'\n' => {
                line += 1;
                line_start = i + 1;
                node_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' if matches!(prev, b' ' | b'\t' | b'\n' | b'\r') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'\'' | b'"' if depth > 0 || node_start => {
                i += 1;
                while i < b.len() {
                    match b[i] {
                        b'\\' if c == b'"' => i += 1,
                        b'\'' if c == b'\'' && b.get(i + 1) == Some(&b'\'') => i += 1,
                        q if q == c => break,
                        b'\n' => {
                            line += 1;
                            line_start = i + 1;
                        }
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                node_start = false;
                continue;
            }
            b'[' | b'{' if depth > 0 || node_start => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err((line, i - line_start + 1));
                }
                node_start = false;
            }
            b']' | b'}' if depth > 0 => {
                depth -= 1;
            }
            b'|' | b'>' if depth == 0 && node_start => {
                // A block scalar: the lines after this one that are indented more than it
                // (or blank) are its content.
                let indent = b[line_start..].iter().take_while(|&&x| x == b' ').count();
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                while i < b.len() {
                    // `i` is at a newline.
                    let next = i + 1;
                    let spaces = b[next..].iter().take_while(|&&x| x == b' ').count();
                    let rest = b.get(next + spaces).copied();
                    if spaces > indent || matches!(rest, Some(b'\n' | b'\r')) {
                        line += 1;
                        line_start = next;
                        i = next;
                        while i < b.len() && b[i] != b'\n' {
                            i += 1;
                        }
                    } else {
                        break;
                    }
                }
                continue;
            }
            // `- `, `? `, `: `: a node may follow.
            b'-' | b'?' | b':'
                if depth == 0
                    && matches!(b.get(i + 1), None | Some(b' ' | b'\t' | b'\n' | b'\r')) =>
            {
                node_start = true;
                i += 1;
                continue;
            }
            // `&anchor` and `!tag` before a node.
            b'&' | b'!' if depth == 0 && node_start => {
                while i < b.len() && !matches!(b[i], b' ' | b'\t' | b'\n') {
                    i += 1;
                }
                continue;
            }
            _ if depth == 0 => node_start = false,
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_flow_nesting_is_refused_where_it_gets_too_deep() {
        assert_eq!(check(&"[".repeat(2_000_000)), Err((1, MAX_DEPTH + 1)));
        assert_eq!(
            check(&format!("a:\n  b: {}", "{a: ".repeat(1000))),
            Err((2, 6 + 4 * MAX_DEPTH))
        );
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(check(&ok), Ok(()));
        // Balanced nesting, however long the file, is fine.
        assert_eq!(check(&"[[1], {a: [2]}]\n".repeat(100_000)), Ok(()));
    }

    #[test]
    fn brackets_in_scalars_comments_and_block_scalars_do_not_count() {
        let deep = "[".repeat(500);
        for text in [
            format!("a: \"{deep}\"\n"),
            format!("a: '{deep}'\n"),
            format!("a: 'it''s {deep}'\n"),
            format!("a: \"\\\"{deep}\"\n"),
            format!("a: 1 # {deep}\n"),
            format!("# {deep}\nb: 2\n"),
            format!("a: x{deep}\n"),
            format!("a: x {deep}\n"),
            format!("a: |\n  {deep}\n\n  {deep}\nb: 2\n"),
            format!("- >-\n    {deep}\n- x\n"),
            format!("{{\"a\": \"{deep}\"}}"),
        ] {
            assert_eq!(check(&text), Ok(()), "{text}");
        }
        // After a block scalar, nesting counts again.
        let text = format!("a: |\n  x\nb: {deep}\n");
        assert_eq!(check(&text), Err((3, 4 + MAX_DEPTH)));
        // JSON nesting counts.
        assert!(check(&format!("{{\"a\": {}", "[".repeat(200))).is_err());
    }
}
