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
        let mut t = Token { last_space: true, ..Token::default() };
        loop {
            let Some(&ch) = self.b.get(self.pos) else {
                if !words.is_empty() || !t.last_space {
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
                t.comment = false;
            }
            if t.comment {
                continue;
            }
            if t.escaped {
                t.escaped = false;
                continue;
            }
            if let Some(end) = self.byte(&mut t, ch, &mut words)? {
                return Ok((words, end));
            }
        }
    }

    fn unexpected(&self, ch: u8) -> String {
        format!("line {}: unexpected {:?}", self.line, ch as char)
    }

    /// One byte outside comments and escapes: the end of the directive when it ends here.
    fn byte(&self, t: &mut Token, ch: u8, words: &mut Vec<String>) -> Result<Option<End>, String> {
        let space = matches!(ch, b' ' | b'\t' | b'\r' | b'\n');
        if t.need_space {
            if space {
                t.last_space = true;
                t.need_space = false;
                return Ok(None);
            }
            match ch {
                b';' => return Ok(Some(End::Semicolon)),
                b'{' => return Ok(Some(End::Open)),
                b')' => {
                    t.last_space = true;
                    t.need_space = false;
                }
                _ => return Err(self.unexpected(ch)),
            }
        }
        if t.last_space {
            return self.word_start(t, ch, space, words.is_empty());
        }
        self.in_word(t, ch, space, words)
    }

    /// A byte after a separator: a word starts, or the directive ends.
    fn word_start(
        &self,
        t: &mut Token,
        ch: u8,
        space: bool,
        empty: bool,
    ) -> Result<Option<End>, String> {
        t.start = self.pos - 1;
        if space {
            return Ok(None);
        }
        match ch {
            b';' | b'{' if empty => return Err(self.unexpected(ch)),
            b';' => return Ok(Some(End::Semicolon)),
            b'{' => return Ok(Some(End::Open)),
            b'}' if !empty => return Err(format!("line {}: unexpected \"}}\"", self.line)),
            b'}' => return Ok(Some(End::Close)),
            b'#' => t.comment = true,
            b'\\' => t.escaped = true,
            b'"' | b'\'' => {
                t.start += 1;
                t.dq = ch == b'"';
                t.sq = ch == b'\'';
            }
            b'$' => t.variable = true,
            _ => {}
        }
        t.last_space = t.comment;
        Ok(None)
    }

    /// A byte within a word: the word ends at its quote or a separator (`;` and `{` end the
    /// directive too).
    fn in_word(
        &self,
        t: &mut Token,
        ch: u8,
        space: bool,
        words: &mut Vec<String>,
    ) -> Result<Option<End>, String> {
        if ch == b'{' && t.variable {
            return Ok(None);
        }
        t.variable = ch == b'$';
        if ch == b'\\' {
            t.escaped = true;
        }
        if ch == b'\\' || ch == b'$' {
            return Ok(None);
        }
        let quoted = t.dq || t.sq;
        let found = match (t.dq, t.sq) {
            (true, _) => ch == b'"',
            (_, true) => ch == b'\'',
            _ => space || ch == b';' || ch == b'{',
        };
        if !found {
            return Ok(None);
        }
        (t.dq, t.sq, t.need_space, t.last_space) = (false, false, quoted, !quoted);
        words.push(unescape(&self.b[t.start..self.pos - 1])?);
        Ok(match ch {
            b';' => Some(End::Semicolon),
            b'{' => Some(End::Open),
            _ => None,
        })
    }
}

/// Where the reader is within a directive: the flags of `ngx_conf_read_token`, and where the
/// current word starts.
#[derive(Default)]
struct Token {
    need_space: bool,
    last_space: bool,
    comment: bool,
    escaped: bool,
    dq: bool,
    sq: bool,
    variable: bool,
    start: usize,
}

fn unescape(raw: &[u8]) -> Result<String, String> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let escaped = match raw.get(i + 1).filter(|_| raw[i] == b'\\') {
            Some(&c @ (b'"' | b'\'' | b'\\')) => Some(c),
            Some(b't') => Some(b'\t'),
            Some(b'r') => Some(b'\r'),
            Some(b'n') => Some(b'\n'),
            _ => None,
        };
        out.push(escaped.unwrap_or(raw[i]));
        i += if escaped.is_some() { 2 } else { 1 };
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
