//! An nginx.conf reader that follows NGINX's own tokenizer (`ngx_conf_read_token` of
//! src/core/ngx_conf_file.c, 1.28), written apart from [`crate::conf`] so that the tests and
//! the fuzz target can check what the writer wrote against how NGINX will read it: words
//! separated by spaces, tabs, CR and LF; `;` ends a directive, `{` opens a block and `}` closes
//! it; `#` at the start of a word comments to the end of the line; a word in `"` or `'` ends at
//! its quote, which must be followed by a separator (or `)`, which then starts a word); `\`
//! keeps the next byte in the word, and when the word is stored `\"`, `\'` and `\\` become the
//! byte they escape, `\t`, `\r` and `\n` a tab, CR and LF; `${` does not open a block.

use crate::conf::Stmt;

enum End {
    Semicolon,
    Open,
    Close,
    Eof,
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    line: usize,
}

/// The directives of `text`, as NGINX's parser reads them, or the first error with its line.
pub fn read(text: &str) -> Result<Vec<Stmt>, String> {
    let mut r = Reader { b: text.as_bytes(), pos: 0, line: 1 };
    let stmts = r.block(0)?;
    Ok(stmts)
}

impl Reader<'_> {
    fn block(&mut self, depth: usize) -> Result<Vec<Stmt>, String> {
        let mut out = Vec::new();
        loop {
            let (words, end) = self.words()?;
            match end {
                End::Semicolon => out.push(Stmt { words, block: None }),
                End::Open => {
                    let inner = self.block(depth + 1)?;
                    out.push(Stmt { words, block: Some(inner) });
                }
                End::Close if depth > 0 => return Ok(out),
                End::Close => return Err(format!("line {}: unexpected \"}}\"", self.line)),
                End::Eof if depth == 0 => return Ok(out),
                End::Eof => {
                    return Err(format!(
                        "line {}: unexpected end of file, expecting \"}}\"",
                        self.line
                    ));
                }
            }
        }
    }

    /// The words of one directive and what ended it.
    fn words(&mut self) -> Result<(Vec<String>, End), String> {
        let mut words: Vec<String> = Vec::new();
        let mut need_space = false;
        let mut last_space = true;
        let mut comment = false;
        let mut escaped = false;
        let mut dq = false;
        let mut sq = false;
        let mut variable = false;
        let mut start = 0;
        loop {
            let Some(&ch) = self.b.get(self.pos) else {
                if !words.is_empty() || !last_space {
                    return Err(format!(
                        "line {}: unexpected end of file, expecting \";\" or \"}}\"",
                        self.line
                    ));
                }
                return Ok((words, End::Eof));
            };
            self.pos += 1;
            if ch == b'\n' {
                self.line += 1;
                comment = false;
            }
            if comment {
                continue;
            }
            if escaped {
                escaped = false;
                continue;
            }
            let space = matches!(ch, b' ' | b'\t' | b'\r' | b'\n');
            if need_space {
                if space {
                    last_space = true;
                    need_space = false;
                    continue;
                }
                match ch {
                    b';' => return Ok((words, End::Semicolon)),
                    b'{' => return Ok((words, End::Open)),
                    b')' => {
                        last_space = true;
                        need_space = false;
                    }
                    _ => return Err(format!("line {}: unexpected {:?}", self.line, ch as char)),
                }
            }
            if last_space {
                start = self.pos - 1;
                if space {
                    continue;
                }
                match ch {
                    b';' | b'{' => {
                        if words.is_empty() {
                            return Err(format!("line {}: unexpected {:?}", self.line, ch as char));
                        }
                        return Ok((words, if ch == b'{' { End::Open } else { End::Semicolon }));
                    }
                    b'}' => {
                        if !words.is_empty() {
                            return Err(format!("line {}: unexpected \"}}\"", self.line));
                        }
                        return Ok((words, End::Close));
                    }
                    b'#' => {
                        comment = true;
                        continue;
                    }
                    b'\\' => {
                        escaped = true;
                        last_space = false;
                        continue;
                    }
                    b'"' => {
                        start += 1;
                        dq = true;
                        last_space = false;
                        continue;
                    }
                    b'\'' => {
                        start += 1;
                        sq = true;
                        last_space = false;
                        continue;
                    }
                    b'$' => {
                        variable = true;
                        last_space = false;
                        continue;
                    }
                    _ => last_space = false,
                }
                continue;
            }
            if ch == b'{' && variable {
                continue;
            }
            variable = false;
            if ch == b'\\' {
                escaped = true;
                continue;
            }
            if ch == b'$' {
                variable = true;
                continue;
            }
            let mut found = false;
            if dq {
                if ch == b'"' {
                    dq = false;
                    need_space = true;
                    found = true;
                }
            } else if sq {
                if ch == b'\'' {
                    sq = false;
                    need_space = true;
                    found = true;
                }
            } else if space || ch == b';' || ch == b'{' {
                last_space = true;
                found = true;
            }
            if found {
                words.push(unescape(&self.b[start..self.pos - 1])?);
                if ch == b';' {
                    return Ok((words, End::Semicolon));
                }
                if ch == b'{' {
                    return Ok((words, End::Open));
                }
            }
        }
    }
}

fn unescape(raw: &[u8]) -> Result<String, String> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' && i + 1 < raw.len() {
            match raw[i + 1] {
                b'"' | b'\'' | b'\\' => {
                    out.push(raw[i + 1]);
                    i += 2;
                    continue;
                }
                b't' => {
                    out.push(b'\t');
                    i += 2;
                    continue;
                }
                b'r' => {
                    out.push(b'\r');
                    i += 2;
                    continue;
                }
                b'n' => {
                    out.push(b'\n');
                    i += 2;
                    continue;
                }
                _ => {}
            }
        }
        out.push(raw[i]);
        i += 1;
    }
    String::from_utf8(out).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(words: &[&str], block: Option<Vec<Stmt>>) -> Stmt {
        Stmt { words: words.iter().map(|w| w.to_string()).collect(), block }
    }

    #[test]
    fn reads_like_nginx() {
        let t = "a b;\n# c { d;\nx \"q\\\"r\" 'y z' { if ($v = \"\") { return 1; } }\nm ${a}b;";
        assert_eq!(
            read(t).unwrap(),
            vec![
                s(&["a", "b"], None),
                s(
                    &["x", "q\"r", "y z"],
                    Some(vec![s(
                        &["if", "($v", "=", "", ")"],
                        Some(vec![s(&["return", "1"], None)])
                    )])
                ),
                s(&["m", "${a}b"], None),
            ]
        );
        // `\;` keeps `;` in the word; NGINX stores it with its backslash.
        assert_eq!(read("a \\;b;").unwrap(), vec![s(&["a", "\\;b"], None)]);
        assert_eq!(read("a \"\\n\";").unwrap(), vec![s(&["a", "\n"], None)]);
        assert!(read("a \"b\"c;").is_err());
        assert!(read("a {").is_err());
        assert!(read("}").is_err());
        assert!(read("a").is_err());
        // `{` after a variable's closing brace opens a block.
        assert!(read("m ${a}{b};").is_err());
    }
}
