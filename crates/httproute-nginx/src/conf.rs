//! A typed writer for nginx.conf: the only way the generator produces configuration text.
//!
//! A configuration is a tree of [`Node`]s: directives (whose words are [`Arg`]s, the first one
//! the directive's name), blocks, comments and blank lines. Every word is written by
//! `syntax::word` (quoting, a data `$` never a variable: [`DOLLAR_GEO`], words that would change
//! what a directive means escaped or refused); variables are written only by the generator.
//! Comments are escaped onto one line. Rendering also returns the tree of words as NGINX's
//! parser will read it back ([`Stmt`]), which the tests and the fuzz target compare with an
//! independent reader ([`crate::conf_reader`]), and each line's owner ([`Rendered::lines`]).

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
    /// The object it was written for (its block's directives inherit it): `None`, the
    /// enclosing directive's.
    provenance: Option<Provenance>,
}

/// Where a directive comes from, for what a word NGINX cannot take costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provenance {
    /// The generator or the operator (options): an unwritable word is an error of the run.
    Run,
    /// A tenant's object, by the caller's number for it: an unwritable word in it is recorded
    /// in [`Rendered::refused`] and rendering goes on (the caller decides what to leave out
    /// from these before it writes: `crate::emit`'s `decide`).
    Object(u32),
}

impl Directive {
    pub fn new(name: &'static str) -> Directive {
        // Room for the words most directives have (grown, a second allocation).
        let mut words = Vec::with_capacity(3);
        words.push(Arg::code(name));
        Directive { words, condition: false, block: None, provenance: None }
    }
    /// An entry whose first word is not a directive name (a `map` key).
    pub fn entry(first: Arg) -> Directive {
        Directive { words: vec![first], condition: false, block: None, provenance: None }
    }
    /// Written for `p` (with everything in its block, unless a directive there says
    /// otherwise).
    pub fn from(mut self, p: Provenance) -> Directive {
        self.provenance = Some(p);
        self
    }
    /// Sets the provenance of a directive that has none.
    pub fn set_provenance_if_none(&mut self, p: Provenance) {
        self.provenance.get_or_insert(p);
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
    /// Words of tenant objects ([`Provenance::Object`]) NGINX cannot take: (object, why), in
    /// the order met. Not empty: `text` holds `""` in their place and must not be used.
    pub refused: Vec<(u32, String)>,
    /// The owner of each line of `text` (index 0 is line 1): the provenance of the innermost
    /// directive written on it (a block's closing `}` is its directive's), `None` for a line
    /// of no directive's or of one without provenance (the run's). NGINX names the line of
    /// a directive it refuses (`in FILE:LINE`): [`Rendered::owner_of_line`] says whose it is.
    pub lines: Vec<Option<Provenance>>,
}

impl Rendered {
    /// Whose directive line `line` (1-based, as NGINX counts) of the text holds: `None` for
    /// the run's own lines and for a line past the end.
    pub fn owner_of_line(lines: &[Option<Provenance>], line: usize) -> Option<Provenance> {
        lines.get(line.checked_sub(1)?).copied().flatten()
    }
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
    /// The provenance of the directives being written, innermost last.
    provenance: Vec<Provenance>,
    refused: Vec<(u32, String)>,
    /// Only the text: [`Rendered::tree`] stays empty (it costs more memory than the text).
    text_only: bool,
    /// [`Rendered::lines`] of the lines ended so far.
    lines: Vec<Option<Provenance>>,
    /// The owner of the line being written.
    line_owner: Option<Provenance>,
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
        self.end_lines();
        let (text, dollar, refused, lines) = (self.text, self.dollar, self.refused, self.lines);
        Ok(Rendered { text, tree, dollar, refused, lines })
    }

    /// A writer of blocks one at a time at `depth` ([`Writer::push`]), so each block's nodes
    /// can be freed as soon as it is written; [`Writer::close_into`] puts the text in its
    /// place. `text_only`: as [`Writer::render_text`].
    pub fn stream(text_only: bool) -> Writer {
        Writer { text_only, ..Writer::default() }
    }

    /// Writes the text pushed so far to `out` and forgets it, with its lines' owners (a
    /// streamed configuration is not checked by `nginx -t` line by line): the writer then
    /// holds one block at a time.
    pub fn drain_to(&mut self, out: &mut dyn std::io::Write) -> Result<(), String> {
        out.write_all(self.text.as_bytes()).map_err(|e| e.to_string())?;
        self.text.clear();
        self.lines.clear();
        Ok(())
    }

    /// The words refused so far (each with its provenance number).
    pub fn refused(&self) -> &[(u32, String)] {
        &self.refused
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
    /// `}`, which must end `outer`'s text): its text, line owners, refusals and tree (`tree`,
    /// the pushed statements) join `outer`'s. The text is moved, not copied: `outer`'s goes in
    /// front of it.
    pub fn close_into(mut self, outer: &mut Rendered, tree: Vec<Stmt>) -> Result<(), String> {
        self.end_lines();
        let Some(head) = outer.text.strip_suffix("}\n") else {
            return Err("generator bug: the outer block does not end the text".into());
        };
        let close = outer.lines.pop().flatten();
        self.text.insert_str(0, head);
        self.text.push_str("}\n");
        outer.text = self.text;
        self.lines.splice(0..0, std::mem::take(&mut outer.lines));
        self.lines.push(close);
        outer.lines = self.lines;
        outer.dollar |= self.dollar;
        outer.refused.append(&mut self.refused);
        if let Some(Stmt { block: Some(inner), .. }) = outer.tree.last_mut() {
            inner.extend(tree);
        }
        Ok(())
    }

    /// Ends the line being written: `\n` and its owner.
    fn newline(&mut self) {
        self.text.push('\n');
        self.lines.push(self.line_owner.take());
    }

    /// The owner of a last line without `\n`, if any.
    fn end_lines(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.lines.push(self.line_owner.take());
        }
    }

    /// The line being written holds a directive of the current provenance (the innermost
    /// met on a line wins).
    fn owns_line(&mut self) {
        self.line_owner = self.provenance.last().copied().filter(|p| *p != Provenance::Run);
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
                    let stmt = self.directive(d, kind, depth)?;
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

    /// One directive, without its line's indentation and end, under its provenance.
    fn directive(
        &mut self,
        d: &Directive,
        parent: BlockKind,
        depth: usize,
    ) -> Result<Stmt, String> {
        if let Some(p) = d.provenance {
            self.provenance.push(p);
        }
        self.owns_line();
        let stmt = self.directive_words(d, parent, depth);
        if d.provenance.is_some() {
            self.provenance.pop();
        }
        stmt
    }

    /// A word NGINX cannot take: recorded for the tenant object it came from (rendering goes
    /// on with `""` in its place), or the run's error.
    fn refuse(&mut self, why: String) -> Result<(), String> {
        match self.provenance.last() {
            Some(Provenance::Object(o)) => {
                self.refused.push((*o, why));
                self.text.push_str("\"\"");
                self.value.clear();
                Ok(())
            }
            Some(Provenance::Run) | None => Err(why),
        }
    }

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
            if let Err(why) = word_to(a, pos, &mut self.dollar, &mut self.value, &mut self.text) {
                self.refuse(why)?;
            }
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
                self.owns_line();
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
            let stmt = self.directive(child, b.kind, depth)?;
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

    /// A word a tenant object's directive cannot hold is that object's, wherever it is in the
    /// object's block; the same word outside any object, or under [`Provenance::Run`] inside
    /// one, is the run's error.
    #[test]
    fn refused_words_are_their_objects() {
        let long = "x".repeat(MAX_WORD + 1);
        let bad = |f: &'static str| Directive::new("add_header").data(f, "a\nb").into();
        let nodes: Vec<Node> = vec![
            Directive::new("location")
                .code("/a")
                .block(vec![
                    Directive::new("return").code("200").into(),
                    Directive::new("if")
                        .block(vec![bad("inner"), Directive::new("x").data("long", long).into()])
                        .into(),
                ])
                .from(Provenance::Object(7))
                .into(),
            Directive::new("location")
                .code("/b")
                .block(vec![bad("other")])
                .from(Provenance::Object(9))
                .into(),
            Directive::new("ok").code("1").into(),
        ];
        let r = Writer::render(&nodes).unwrap();
        let owners: Vec<u32> = r.refused.iter().map(|(o, _)| *o).collect();
        assert_eq!(owners, [7, 7, 9], "{:?}", r.refused);
        assert!(r.refused[0].1.starts_with("inner: "), "{:?}", r.refused);
        assert!(r.refused[1].1.starts_with("long: "), "{:?}", r.refused);
        assert!(Writer::render(&[bad("f")]).is_err());
        let run = Directive::new("location")
            .code("/c")
            .block(vec![Directive::new("x").data("f", "a\0").from(Provenance::Run).into()])
            .from(Provenance::Object(1));
        assert!(Writer::render(&[run.into()]).is_err());
    }

    /// Every line's owner is the provenance of the innermost directive on it, as NGINX will
    /// name the line: blocks on several lines, blocks on one line, closing braces, comments
    /// and the run's own directives (no owner).
    #[test]
    fn each_line_is_owned_by_the_innermost_directive_on_it() {
        let o = Provenance::Object;
        let nodes: Vec<Node> = vec![
            Node::Comment("top".into()),
            Directive::new("http")
                .block(vec![
                    Directive::new("a").into(),
                    Node::Blank,
                    Directive::new("server")
                        .block(vec![
                            Directive::new("location")
                                .code("/x")
                                .inline(vec![Directive::new("return").code("404").into()])
                                .from(o(3))
                                .into(),
                            Directive::new("location")
                                .code("/y")
                                .block(vec![
                                    Directive::new("b").into(),
                                    Directive::new("c").from(Provenance::Run).into(),
                                    Directive::new("d").from(o(5)).into(),
                                ])
                                .from(o(4))
                                .into(),
                        ])
                        .into(),
                ])
                .into(),
        ];
        for r in [Writer::render(&nodes).unwrap(), Writer::render_text(&nodes).unwrap()] {
            let lines: Vec<&str> = r.text.lines().collect();
            assert_eq!(r.lines.len(), lines.len(), "{}", r.text);
            let owners: Vec<(&str, Option<Provenance>)> = lines
                .iter()
                .enumerate()
                .map(|(i, l)| (l.trim(), Rendered::owner_of_line(&r.lines, i + 1)))
                .collect();
            assert_eq!(
                owners,
                [
                    ("# top", None),
                    ("http {", None),
                    ("a;", None),
                    ("", None),
                    ("server {", None),
                    ("location /x { return 404; }", Some(o(3))),
                    ("location /y {", Some(o(4))),
                    ("b;", Some(o(4))),
                    ("c;", None),
                    ("d;", Some(o(5))),
                    ("}", Some(o(4))),
                    ("}", None),
                    ("}", None),
                ]
            );
            assert_eq!(Rendered::owner_of_line(&r.lines, 0), None);
            assert_eq!(Rendered::owner_of_line(&r.lines, lines.len() + 1), None);
        }
    }

    /// Blocks written one at a time into an outer block ([`Writer::stream`]) give what one
    /// render of the whole tree gives: text, line owners, tree, refusals, `$`.
    #[test]
    fn streamed_blocks_are_the_whole_render() {
        let o = Provenance::Object;
        let server = |i: u32, bad: &str| -> Vec<Node> {
            vec![
                Node::Blank,
                Directive::new("server")
                    .block(vec![
                        Directive::new("listen").code("80").from(o(i)).into(),
                        Node::Comment(format!("server {i}")),
                        Directive::new("add_header")
                            .code("x")
                            .data("f", bad.to_owned())
                            .from(o(i + 1))
                            .into(),
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
        let servers = [server(1, "x"), server(3, "a\nb"), server(5, "$y")];
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
            assert_eq!(outer.lines, whole.lines);
            assert_eq!(outer.tree, whole.tree);
            assert_eq!(outer.refused, whole.refused);
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
