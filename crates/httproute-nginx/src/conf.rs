//! A typed writer for nginx.conf: the only way the generator produces configuration text.
//!
//! A configuration is a tree of [`Node`]s: directives (whose words are [`Arg`]s, the first one
//! the directive's name), blocks, comments and blank lines. Every word is written by
//! `syntax::word` (quoting, a data `$` never a variable: [`DOLLAR_GEO`], words that would change
//! what a directive means escaped or refused); variables are written only by the generator.
//! Comments are escaped onto one line. Rendering also returns the tree of words as NGINX's
//! parser will read it back ([`Stmt`]), which the tests and the fuzz target compare with an
//! independent reader ([`crate::conf_reader`]). A word NGINX cannot take is an error of the
//! run: tenant words are judged before anything is written (`plan/words.rs`), so the writer
//! meeting one is a bug of the generator.

use std::borrow::Cow;
use std::fmt::Write as _;

pub use crate::syntax::{
    Arg, BlockKind, DOLLAR_VAR, MAX_WORD, Part, Pos, braced_var, check_word, code, data,
    is_var_name, regex_data, unwritable, var,
};
use crate::syntax::{position, word_to};

/// Defines `$httproute_dollar` as `$`: geo values are not compiled as complex values.
pub fn dollar_geo() -> Node {
    Directive::new("geo")
        .var(DOLLAR_VAR)
        .block(vec![Directive::new("default").arg(Arg::code("$").quoted()).into()])
        .into()
}

/// The same, as text (for documentation).
pub const DOLLAR_GEO: &str = "geo $httproute_dollar { default \"$\"; }";

#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    kind: BlockKind,
    /// On the directive's line: `{ a; b; }`.
    inline: bool,
    nodes: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Directive {
    words: Vec<Arg>,
    /// `if (...)`: the words after the name are a condition in parentheses.
    condition: bool,
    block: Option<Block>,
}

impl Directive {
    pub fn new(name: &'static str) -> Directive {
        // Room for the words most directives have (grown, a second allocation).
        let mut words = Vec::with_capacity(3);
        words.push(Arg::code(name));
        Directive { words, condition: false, block: None }
    }
    /// An entry whose first word is not a directive name (a `map` key).
    pub fn entry(first: Arg) -> Directive {
        Directive { words: vec![first], condition: false, block: None }
    }
    /// `if (VAR OP OPERAND) { ... }`, or `if (VAR) { ... }` without an operator.
    pub fn if_(
        variable: impl Into<Cow<'static, str>>,
        op: Option<(&'static str, Arg)>,
    ) -> Directive {
        let mut d = Directive::new("if").var(variable);
        d.condition = true;
        if let Some((op, operand)) = op {
            d.words.push(Arg::code(op));
            d.words.push(operand);
        }
        d
    }
    pub fn arg(mut self, a: Arg) -> Directive {
        self.words.push(a);
        self
    }
    pub fn code(self, s: impl Into<Cow<'static, str>>) -> Directive {
        self.arg(Arg::code(s))
    }
    pub fn var(self, name: impl Into<Cow<'static, str>>) -> Directive {
        self.arg(Arg::var(name))
    }
    pub fn data(self, field: impl Into<Cow<'static, str>>, text: impl Into<String>) -> Directive {
        self.arg(Arg::data(field, text))
    }
    /// A block of lines.
    pub fn block(self, nodes: Vec<Node>) -> Directive {
        let kind = match self.name() {
            Some("map") => BlockKind::Map,
            Some("geo" | "split_clients") => BlockKind::Plain,
            _ => BlockKind::Directives,
        };
        self.with_block(Block { kind, inline: false, nodes })
    }
    /// A block on one line: `{ a; b; }`.
    pub fn inline(self, nodes: Vec<Node>) -> Directive {
        self.with_block(Block { kind: BlockKind::Directives, inline: true, nodes })
    }
    /// The lines of its block (to add one before rendering).
    pub fn block_nodes_mut(&mut self) -> Option<&mut Vec<Node>> {
        self.block.as_mut().map(|b| &mut b.nodes)
    }
    fn with_block(mut self, b: Block) -> Directive {
        self.block = Some(b);
        self
    }
    fn name(&self) -> Option<&str> {
        self.words.first()?.as_code()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Directive(Directive),
    /// `# text` on a line of its own.
    Comment(String),
    /// An empty line.
    Blank,
}

impl From<Directive> for Node {
    fn from(d: Directive) -> Node {
        Node::Directive(d)
    }
}

/// A directive as NGINX's parser reads it: its words (unescaped, unquoted) and its block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stmt {
    pub words: Vec<String>,
    pub block: Option<Vec<Stmt>>,
}

/// The text of a configuration and the tree NGINX will read from it.
#[derive(Debug)]
pub struct Rendered {
    pub text: String,
    pub tree: Vec<Stmt>,
    /// Some data `$` was written as `${httproute_dollar}`: [`dollar_geo`] must be defined.
    pub dollar: bool,
}

/// Longest comment text: NGINX reads a comment through its 4 KiB word buffer too.
pub const MAX_COMMENT: usize = 240;

/// The text of comment `s` appended to `out`: control characters and `\` escaped, so it
/// stays on its line, and cut at [`MAX_COMMENT`] bytes.
fn comment_into(s: &str, out: &mut String) {
    if s.len() <= MAX_COMMENT && s.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'\\') {
        // Printable ASCII but `\`, short enough (most comments): as it is.
        out.push_str(s);
        return;
    }
    let start = out.len();
    for c in s.chars() {
        if out.len() - start >= MAX_COMMENT {
            out.push_str("...");
            break;
        }
        match c {
            '\\' => out.push_str("\\\\"),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
}

/// The writer: renders nodes into text and the tree NGINX will read.
#[derive(Default)]
pub struct Writer {
    text: String,
    dollar: bool,
    /// Only the text: [`Rendered::tree`] stays empty (it costs more memory than the text).
    text_only: bool,
    /// The value of the word being written ([`word_to`]'s buffer, reused).
    value: String,
}

impl Writer {
    pub fn render(nodes: &[Node]) -> Result<Rendered, String> {
        Writer::stream(false).whole(nodes)
    }

    /// [`Writer::render`] without the tree: what a generator run writes to disk.
    pub fn render_text(nodes: &[Node]) -> Result<Rendered, String> {
        Writer::stream(true).whole(nodes)
    }

    fn whole(mut self, nodes: &[Node]) -> Result<Rendered, String> {
        let tree = self.nodes(nodes, BlockKind::Directives, 0)?;
        Ok(Rendered { text: self.text, tree, dollar: self.dollar })
    }

    /// A writer of blocks one at a time at `depth` ([`Writer::push`]), so each block's nodes
    /// can be freed as soon as it is written; [`Writer::close_into`] puts the text in its
    /// place. `text_only`: as [`Writer::render_text`].
    pub fn stream(text_only: bool) -> Writer {
        Writer { text_only, ..Writer::default() }
    }

    /// Writes the text pushed so far to `out` and forgets it: the writer then holds one block
    /// at a time.
    pub fn drain_to(&mut self, out: &mut dyn std::io::Write) -> Result<(), String> {
        out.write_all(self.text.as_bytes()).map_err(|e| e.to_string())?;
        self.text.clear();
        Ok(())
    }

    /// Some data `$` was written as `${httproute_dollar}` so far ([`Rendered::dollar`]).
    pub fn dollar_written(&self) -> bool {
        self.dollar
    }

    /// Writes `nodes` at `depth` after what was written so far.
    pub fn push(
        &mut self,
        nodes: &[Node],
        depth: usize,
        tree: &mut Vec<Stmt>,
    ) -> Result<(), String> {
        tree.extend(self.nodes(nodes, BlockKind::Directives, depth)?);
        Ok(())
    }

    /// What was pushed, as the last lines of the last block of `outer` (before its closing
    /// `}`, which must end `outer`'s text): its text and tree (`tree`, the pushed statements)
    /// join `outer`'s. The text is moved, not copied: `outer`'s goes in front of it.
    pub fn close_into(mut self, outer: &mut Rendered, tree: Vec<Stmt>) -> Result<(), String> {
        let Some(head) = outer.text.strip_suffix("}\n") else {
            return Err("generator bug: the outer block does not end the text".into());
        };
        self.text.insert_str(0, head);
        self.text.push_str("}\n");
        outer.text = self.text;
        outer.dollar |= self.dollar;
        if let Some(Stmt { block: Some(inner), .. }) = outer.tree.last_mut() {
            inner.extend(tree);
        }
        Ok(())
    }

    fn newline(&mut self) {
        self.text.push('\n');
    }

    fn nodes(
        &mut self,
        nodes: &[Node],
        kind: BlockKind,
        depth: usize,
    ) -> Result<Vec<Stmt>, String> {
        let mut tree = Vec::new();
        for n in nodes {
            match n {
                Node::Blank => self.newline(),
                Node::Comment(c) => {
                    self.indent(depth);
                    self.text.push_str("# ");
                    comment_into(c, &mut self.text);
                    self.newline();
                }
                Node::Directive(d) => {
                    self.indent(depth);
                    let stmt = self.directive_words(d, kind, depth)?;
                    if !self.text_only {
                        tree.push(stmt);
                    }
                    self.newline();
                }
            }
        }
        Ok(tree)
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.text.push_str("    ");
        }
    }

    /// One directive, without its line's indentation and end. A word NGINX cannot take is an
    /// error.
    fn directive_words(
        &mut self,
        d: &Directive,
        parent: BlockKind,
        depth: usize,
    ) -> Result<Stmt, String> {
        let name = d.name();
        let n = d.words.len();
        // The words of the tree (none when only the text is made).
        let tree = !self.text_only;
        let mut words = Vec::with_capacity(if tree { n } else { 0 });
        for (i, a) in d.words.iter().enumerate() {
            if i > 0 {
                self.text.push(' ');
            }
            let pos = if d.condition && i == 3 {
                // `~`, `!~`...: a regex, compiled as it is; `=`, `!=`: a value with variables.
                let op = d.words.get(2).and_then(Arg::as_code);
                if op.is_some_and(|o| o.contains('~')) { Pos::Literal } else { Pos::Variables }
            } else {
                position(parent, name, i, n)
            };
            if d.condition && i == 1 {
                self.text.push('(');
            }
            let start = self.text.len();
            word_to(a, pos, &mut self.dollar, &mut self.value, &mut self.text)?;
            if d.condition && i == 1 {
                if tree {
                    words.push(format!("({}", self.value));
                }
            } else if tree {
                words.push(self.value.clone());
            }
            if d.condition && i == n - 1 {
                // After a quoted word, `)` is a word of its own; else it ends the word.
                let written = &self.text[start..];
                let own = written.ends_with(['"', '\'']) && written.len() > 1;
                self.text.push(')');
                if tree && own {
                    words.push(")".to_owned());
                } else if tree {
                    words.last_mut().expect("a word").push(')');
                }
            }
        }
        let block = match &d.block {
            None => {
                self.text.push(';');
                None
            }
            Some(b) if b.inline => Some(self.inline(b, depth)?),
            Some(b) => {
                self.text.push_str(" {");
                self.newline();
                let inner = self.nodes(&b.nodes, b.kind, depth + 1)?;
                self.indent(depth);
                self.text.push('}');
                Some(inner)
            }
        };
        Ok(Stmt { words, block })
    }

    /// A block on one line: `{ a; b; }`.
    fn inline(&mut self, b: &Block, depth: usize) -> Result<Vec<Stmt>, String> {
        self.text.push_str(" {");
        let mut inner = Vec::new();
        for node in &b.nodes {
            let Node::Directive(child) = node else {
                return Err("generator bug: a comment or blank line in a block on one line".into());
            };
            self.text.push(' ');
            let stmt = self.directive_words(child, b.kind, depth)?;
            if !self.text_only {
                inner.push(stmt);
            }
        }
        self.text.push_str(" }");
        Ok(inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(d: Directive) -> Result<Rendered, String> {
        Writer::render(&[d.into()])
    }

    fn text(d: Directive) -> String {
        one(d).unwrap().text
    }

    #[test]
    fn plain_words_stay_bare_and_specials_are_quoted() {
        assert_eq!(
            text(Directive::new("server_name").data("f", "a.example")),
            "server_name a.example;\n"
        );
        assert_eq!(
            text(Directive::new("listen").data("f", "127.0.0.1;x")),
            "listen \"127.0.0.1;x\";\n"
        );
        for (input, written) in [
            ("a b", "\"a b\""),
            ("{", "\"{\""),
            ("}", "\"}\""),
            ("#x", "\"#x\""),
            ("a\"b", "\"a\\\"b\""),
            ("a'b", "\"a'b\""),
            ("a\\nb", "\"a\\\\nb\""),
            ("", "\"\""),
            // NGINX's parser turns `\t` back into a tab, in any word.
            ("a\tb", "\"a\\tb\""),
            // Bytes above 0x7F are taken as they are.
            ("x\u{85}y", "x\u{85}y"),
        ] {
            assert_eq!(
                text(Directive::new("proxy_hide_header").data("f", input)),
                format!("proxy_hide_header {written};\n"),
                "{input:?}"
            );
        }
    }

    #[test]
    fn control_characters_are_errors_naming_the_field() {
        for bad in ["a\nb", "a\rb", "a\0b", "\u{7f}", "\u{1b}"] {
            let e = one(Directive::new("add_header").data("spec.rules[0].name", bad)).unwrap_err();
            assert!(e.starts_with("spec.rules[0].name: "), "{e}");
            assert!(e.contains("control character"), "{e}");
        }
    }

    /// Every character but the unwritable ones, in every kind of word position, reads back
    /// as itself (a tab through `\t`, U+0085 and other characters above U+007F as bytes).
    #[test]
    fn tabs_and_characters_above_ascii_read_back_as_data() {
        for v in ["a\tb", "\t", "x\u{85}", "\u{9f}\u{2028}\\\t\"'", "/p\u{85}/\t"] {
            for d in [
                Directive::new("add_header").data("f", v).arg(Arg::data("g", v).quoted()),
                Directive::new("location").code("=").data("f", format!("/{v}")),
                Directive::new("if").arg(Arg::parts(vec![regex_data("f", v)]).quoted()),
            ] {
                let r = one(d).unwrap();
                let back = crate::conf_reader::read(&r.text).unwrap();
                assert_eq!(back, r.tree, "{v:?}: {}", r.text);
            }
        }
    }

    /// A word NGINX cannot take is an error of the run wherever it is (inside a block, on a
    /// block's one line): nothing is written in its place.
    #[test]
    fn an_unwritable_word_in_a_block_is_an_error() {
        let long = "x".repeat(MAX_WORD + 1);
        let bad = |f: &'static str| Directive::new("add_header").data(f, "a\nb").into();
        let inner = |n: Node| Directive::new("location").code("/a").block(vec![n]).into();
        let e = Writer::render(&[inner(bad("inner"))]).unwrap_err();
        assert!(e.starts_with("inner: "), "{e}");
        let e = Writer::render_text(&[inner(Directive::new("x").data("long", long).into())]);
        assert!(e.unwrap_err().starts_with("long: "));
        let one_line = Directive::new("location").code("/c").inline(vec![bad("f")]);
        assert!(Writer::render(&[one_line.into()]).is_err());
    }

    /// Blocks written one at a time into an outer block ([`Writer::stream`]) give what one
    /// render of the whole tree gives: text, tree, `$`.
    #[test]
    fn streamed_blocks_are_the_whole_render() {
        let server = |i: u32, value: &str| -> Vec<Node> {
            vec![
                Node::Blank,
                Directive::new("server")
                    .block(vec![
                        Directive::new("listen").code("80").into(),
                        Node::Comment(format!("server {i}")),
                        Directive::new("add_header").code("x").data("f", value.to_owned()).into(),
                    ])
                    .into(),
            ]
        };
        let top = |inner: Vec<Node>| -> Vec<Node> {
            vec![
                Node::Comment("top".into()),
                Directive::new("http")
                    .block(vec![Directive::new("a").into()].into_iter().chain(inner).collect())
                    .into(),
            ]
        };
        let servers = [server(1, "x"), server(3, "a b"), server(5, "$y")];
        for text_only in [false, true] {
            let render = if text_only { Writer::render_text } else { Writer::render };
            let whole = render(&top(servers.concat())).unwrap();
            let mut w = Writer::stream(text_only);
            let mut tree = Vec::new();
            for s in &servers {
                w.push(s, 1, &mut tree).unwrap();
            }
            assert!(w.dollar_written());
            let mut outer = render(&top(Vec::new())).unwrap();
            w.close_into(&mut outer, tree).unwrap();
            assert_eq!(outer.text, whole.text);
            assert_eq!(outer.tree, whole.tree);
            assert_eq!(outer.dollar, whole.dollar);
        }
    }

    #[test]
    fn a_data_dollar_is_never_a_variable() {
        let r =
            one(Directive::new("add_header").data("f", "x-$tenant").data("g", "$host")).unwrap();
        assert_eq!(r.text, "add_header x-$tenant \"${httproute_dollar}host\";\n");
        assert!(r.dollar);
        // Where NGINX takes the word as it is, `$` stays.
        let r = one(Directive::new("location").code("=").data("f", "/a$b")).unwrap();
        assert_eq!(r.text, "location = /a$b;\n");
        assert!(!r.dollar);
        let r = one(Directive::new("set").var("v").data("f", "${a}")).unwrap();
        assert_eq!(r.text, "set $v \"${httproute_dollar}{a}\";\n");
        // Variables are written by the generator; one followed by a name character is braced.
        let r = one(Directive::new("return").code("302").arg(Arg::parts(vec![
            var("scheme"),
            code("://"),
            var("host"),
            data("f", "x"),
        ])))
        .unwrap();
        assert_eq!(r.text, "return 302 \"$scheme://${host}x\";\n");
    }

    #[test]
    fn words_that_change_a_directive_are_escaped_or_refused() {
        let map = Directive::new("map").var("a").var("b").block(vec![
            Directive::entry(Arg::data("k", "default")).data("v", "x").into(),
            Directive::entry(Arg::data("k", "~re")).data("v", "y").into(),
            Directive::entry(Arg::data("k", "plain")).data("v", "$z").into(),
        ]);
        let r = one(map).unwrap();
        assert_eq!(
            r.text,
            "map $a $b {\n    \"\\\\default\" x;\n    \"\\\\~re\" y;\n    plain \"${httproute_dollar}z\";\n}\n"
        );
        assert_eq!(r.tree[0].block.as_ref().unwrap()[0].words, ["\\default", "x"]);
        let e = one(Directive::new("location").data("path", "~ /x")).unwrap_err();
        assert!(e.starts_with("path: "), "{e}");
        let e = one(Directive::new("server_name").data("hostname", "~.*")).unwrap_err();
        assert!(e.starts_with("hostname: "), "{e}");
    }

    #[test]
    fn comments_stay_on_their_line() {
        let r = Writer::render(&[
            Node::Comment("rule (x\n location = /pwned { alias /etc/passwd; }\\)".into()),
            Directive::new("a").into(),
        ])
        .unwrap();
        assert_eq!(r.text, "# rule (x\\u{a} location = /pwned { alias /etc/passwd; }\\\\)\na;\n");
        assert_eq!(r.tree.len(), 1);
    }

    #[test]
    fn conditions_and_inline_blocks() {
        let d = Directive::new("location").code("=").code("/x").inline(vec![
            Directive::new("internal").into(),
            Directive::if_("v", Some(("=", Arg::code("").quoted())))
                .inline(vec![Directive::new("return").code("500").into()])
                .into(),
            Directive::if_("v", Some(("=", Arg::code("503"))))
                .inline(vec![Directive::new("return").code("503").into()])
                .into(),
        ]);
        let r = one(d).unwrap();
        assert_eq!(
            r.text,
            "location = /x { internal; if ($v = \"\") { return 500; } if ($v = 503) { return 503; } }\n"
        );
        let inner = r.tree[0].block.as_ref().unwrap();
        assert_eq!(inner[1].words, ["if", "($v", "=", "", ")"]);
        assert_eq!(inner[2].words, ["if", "($v", "=", "503)"]);
    }

    #[test]
    fn long_comments_are_cut() {
        let r = Writer::render(&[Node::Comment("x".repeat(5000))]).unwrap();
        assert_eq!(r.text.len(), 2 + MAX_COMMENT + 3 + 1);
    }

    #[test]
    fn long_words_are_errors() {
        let e = one(Directive::new("add_header").data("f", "a".repeat(5000))).unwrap_err();
        assert!(e.starts_with("f: 5000 bytes"), "{e}");
    }

    #[test]
    fn regex_data_is_literal() {
        let re = Arg::parts(vec![code("^"), regex_data("h", "a.b$"), code("$")]).quoted();
        let r = one(Directive::if_("v", Some(("!~", re))).inline(vec![])).unwrap();
        assert_eq!(r.text, "if ($v !~ \"^a\\\\.b\\\\$$\") { }\n");
        assert_eq!(r.tree[0].words, ["if", "($v", "!~", "^a\\.b\\$$", ")"]);
    }
}
