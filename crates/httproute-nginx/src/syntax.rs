//! NGINX's word syntax: how a word of nginx.conf is written and what NGINX's parser cannot
//! take ([`word`], the one judge of words). The writer ([`crate::conf`]) writes every word
//! through it; the plan's validator (`plan/words.rs`) asks it of every tenant value before
//! anything is written ([`check_word`]). It names no other file of the crate.

use std::borrow::Cow;
use std::fmt::Write as _;

/// NGINX holds one configuration word in its 4 KiB read buffer (with the byte that ends it).
pub const MAX_WORD: usize = 4094;

/// The variable that holds a literal `$`.
pub const DOLLAR_VAR: &str = "httproute_dollar";

/// The fields a location's path and a server's name come from (in the errors of their words).
pub const PATH_FIELD: &str = "HTTPRoute spec.rules[].matches[].path.value";
pub const HOSTNAME_FIELD: &str =
    "hostname (HTTPRoute spec.hostnames[], Gateway spec.listeners[].hostname)";

/// One piece of a word.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Text of the generator itself: keywords, numbers, regex syntax, names it made up.
    Code(Cow<'static, str>),
    /// `$NAME`: a variable the generator defines, or one of NGINX's.
    Var(Cow<'static, str>),
    /// `${NAME}`: the same, always in braces.
    BracedVar(Cow<'static, str>),
    /// Bytes from the manifests or the command line, named by the field they came from.
    Data { field: Cow<'static, str>, text: String },
    /// Data matched literally inside a regular expression: every byte but letters, digits, `/`
    /// and `-` is escaped with `\` for PCRE.
    RegexData { field: Cow<'static, str>, text: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// Bare when it can be, else in double quotes.
    Auto,
    Double,
    Single,
}

/// A word of a directive.
#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    parts: Parts,
    style: Style,
}

/// A word's parts: most words are one, held without an allocation of their own.
#[derive(Debug, Clone, PartialEq)]
enum Parts {
    One(Part),
    Many(Vec<Part>),
}

impl Parts {
    fn as_slice(&self) -> &[Part] {
        match self {
            Parts::One(p) => std::slice::from_ref(p),
            Parts::Many(v) => v,
        }
    }
}

impl Arg {
    fn one(p: Part) -> Arg {
        Arg { parts: Parts::One(p), style: Style::Auto }
    }
    pub fn code(s: impl Into<Cow<'static, str>>) -> Arg {
        Arg::one(Part::Code(s.into()))
    }
    pub fn var(name: impl Into<Cow<'static, str>>) -> Arg {
        Arg::one(Part::Var(name.into()))
    }
    pub fn data(field: impl Into<Cow<'static, str>>, text: impl Into<String>) -> Arg {
        Arg::one(Part::Data { field: field.into(), text: text.into() })
    }
    pub fn parts(mut parts: Vec<Part>) -> Arg {
        match parts.len() {
            // One part is held as [`Arg::code`] and the others hold it (`==` compares them).
            1 => Arg::one(parts.remove(0)),
            _ => Arg { parts: Parts::Many(parts), style: Style::Auto },
        }
    }
    /// The generator's text, when that is all the word is (a directive's name, an operator).
    pub(crate) fn as_code(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Code(c)] => Some(c),
            _ => None,
        }
    }
    /// Always in double quotes.
    pub fn quoted(mut self) -> Arg {
        self.style = Style::Double;
        self
    }
    /// Always in single quotes.
    pub fn single_quoted(mut self) -> Arg {
        self.style = Style::Single;
        self
    }
}

/// Shorthands for parts.
pub fn code(s: impl Into<Cow<'static, str>>) -> Part {
    Part::Code(s.into())
}
pub fn var(name: impl Into<Cow<'static, str>>) -> Part {
    Part::Var(name.into())
}
pub fn braced_var(name: impl Into<Cow<'static, str>>) -> Part {
    Part::BracedVar(name.into())
}
pub fn data(field: impl Into<Cow<'static, str>>, text: impl Into<String>) -> Part {
    Part::Data { field: field.into(), text: text.into() }
}
pub fn regex_data(field: impl Into<Cow<'static, str>>, text: impl Into<String>) -> Part {
    Part::RegexData { field: field.into(), text: text.into() }
}

/// What a block holds: its entries are read differently by NGINX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// Directives (`http`, `server`, `location`, `if`, `upstream`...).
    Directives,
    /// `map` entries: a key (a string, a regex with `~`, or a special word) and a value that
    /// takes variables.
    Map,
    /// `geo` and `split_clients` entries: values are plain strings.
    Plain,
}

/// Where a word is in its directive, for what NGINX makes of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pos {
    /// Compiled with variables (a complex value): a data `$` must not be written as `$`.
    Variables,
    /// Taken as it is.
    Literal,
    /// The key of a `map` entry.
    MapKey,
    /// The path of a `location`.
    LocationPath,
    /// A name of `server_name`.
    ServerName,
}

/// Whether NGINX compiles word `i` (0 is the name) of directive `name` with variables, for the
/// directives the generator writes. Unknown directives are taken to: a literal `$` is then
/// still never a variable.
pub(crate) fn position(parent: BlockKind, name: Option<&str>, i: usize, n: usize) -> Pos {
    match parent {
        BlockKind::Map if i == 0 => return Pos::MapKey,
        BlockKind::Map => return Pos::Variables,
        BlockKind::Plain => return Pos::Literal,
        BlockKind::Directives => {}
    }
    let Some(name) = name else { return Pos::Variables };
    if i == 0 {
        return Pos::Literal;
    }
    match (name, i) {
        ("location", _) if i == n - 1 => Pos::LocationPath,
        ("server_name", _) => Pos::ServerName,
        // Plain strings: paths read at start, names, addresses, numbers, flags.
        (
            "load_module"
            | "worker_processes"
            | "pid"
            | "error_log"
            | "worker_connections"
            | "client_body_temp_path"
            | "proxy_temp_path"
            | "fastcgi_temp_path"
            | "uwsgi_temp_path"
            | "scgi_temp_path"
            | "http_matches_load"
            | "http_matches_reload_report"
            | "http_matches"
            | "resolver"
            | "resolver_timeout"
            | "upstream"
            | "server"
            | "listen"
            | "location"
            | "mirror"
            | "proxy_hide_header"
            | "grpc_hide_header"
            | "proxy_http_version"
            | "proxy_next_upstream"
            | "proxy_next_upstream_tries"
            | "proxy_next_upstream_timeout"
            | "proxy_connect_timeout"
            | "proxy_send_timeout"
            | "proxy_read_timeout"
            | "grpc_connect_timeout"
            | "grpc_send_timeout"
            | "grpc_read_timeout"
            | "http2"
            | "ssl_reject_handshake"
            | "internal"
            | "hostnames"
            | "default"
            | "map"
            | "geo"
            | "split_clients"
            | "http_matches_module",
            _,
        ) if !matches!((name, i), ("map" | "split_clients", 1)) => Pos::Literal,
        // The source of a map or split_clients is a complex value; the variable defined is not.
        ("map" | "split_clients", 1) => Pos::Variables,
        // Header names; `always`.
        ("add_header" | "proxy_set_header" | "grpc_set_header", 1) => Pos::Literal,
        ("add_header", 3) => Pos::Literal,
        // The status code; the regex of rewrite and its flag; the variable set.
        ("return", 1) if n > 2 => Pos::Literal,
        ("rewrite", 1 | 3) => Pos::Literal,
        ("set", 1) => Pos::Literal,
        // `if (VAR OP OPERAND)`: see `Writer::directive`.
        ("if", 2) => Pos::Literal,
        _ => Pos::Variables,
    }
}

/// What the writer makes of word `a` at `pos`, without writing it: the error naming the field
/// when NGINX cannot take it (a control character of data, past [`MAX_WORD`] bytes, a path or
/// server name it would read otherwise). The one judge of words: `crate::plan`'s validator
/// asks it for every tenant word before anything is written.
pub fn check_word(a: &Arg, pos: Pos) -> Result<(), String> {
    thread_local! {
        /// [`word_to`]'s buffers, reused: the plan asks of every tenant word.
        static BUFFERS: std::cell::RefCell<(String, String)> = Default::default();
    }
    BUFFERS.with_borrow_mut(|(value, out)| {
        out.clear();
        word_to(a, pos, &mut false, value, out)
    })
}

/// What a byte of a word asks for ([`classes`]): quotes to stay one word of data (a space,
/// tab, `;`, brace, `#`, quote or backslash).
const QUOTE: u8 = 1;
/// An ASCII control character but the tab ([`unwritable`]).
const CONTROL: u8 = 2;
/// The tab (a control character in the generator's own text).
const TAB: u8 = 4;
/// A byte of a character above U+007F.
const WIDE: u8 = 8;
/// `$`: a variable's in the generator's text, escaped in data where NGINX reads variables.
const DOLLAR: u8 = 16;

/// [`QUOTE`], [`CONTROL`], [`TAB`], [`WIDE`], [`DOLLAR`] of each byte.
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = match b as u8 {
            b' ' | b';' | b'{' | b'}' | b'#' | b'"' | b'\'' | b'\\' => QUOTE,
            b'\t' => QUOTE | TAB,
            0..=0x1f | 0x7f => CONTROL,
            0x80.. => WIDE,
            b'$' => DOLLAR,
            _ => 0,
        };
        b += 1;
    }
    t
};

/// The classes of `v`'s bytes, together: one pass over a word.
fn classes(v: &str) -> u8 {
    v.bytes().fold(0, |c, b| c | CLASS[usize::from(b)])
}

/// Characters that make a word need quotes to stay one word of data.
fn needs_quotes(v: &str, classes: u8) -> bool {
    v.is_empty() || classes & QUOTE != 0
}

/// Whether NGINX's parser cannot take byte-for-byte what `c` is as data: the ASCII control
/// characters but the tab (a newline ends a comment and is taken raw inside quotes, `\r` is
/// a separator, NUL ends the C string NGINX makes of a word; none of them is a valid byte of
/// a header, a path or a name). The tab is written `\t`, which NGINX's parser turns back into
/// a tab in every word. NGINX reads bytes: a character above U+007F (U+0085 among them) is
/// bytes of 0x80 and more in UTF-8, which its parser takes as they are.
pub fn unwritable(c: char) -> bool {
    c.is_ascii_control() && c != '\t'
}

/// Rejects what NGINX's parser cannot read back as data: see [`unwritable`].
fn check_bytes(field: &str, text: &str, classes: u8) -> Result<(), String> {
    // An ASCII control character is one byte of UTF-8 and no part of another character.
    if classes & CONTROL == 0 {
        return Ok(());
    }
    if let Some(c) = text.chars().find(|&c| unwritable(c)) {
        return Err(format!(
            "{field}: {:?} holds the control character U+{:04X}, which nginx.conf cannot hold \
             as data",
            truncate(text),
            c as u32
        ));
    }
    Ok(())
}

fn truncate(s: &str) -> Cow<'_, str> {
    if s.len() <= 80 {
        return Cow::Borrowed(s);
    }
    let mut end = 80;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}...", &s[..end]))
}

/// Whether `n` can be written as `$n`.
pub fn is_var_name(n: &str) -> bool {
    !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The one function that decides how a word is written: its text in nginx.conf and the
/// value NGINX's parser reads from it ([`word_to`] into new strings).
pub fn word(a: &Arg, pos: Pos, dollar: &mut bool) -> Result<(String, String), String> {
    let (mut written, mut value) = (String::new(), String::new());
    word_to(a, pos, dollar, &mut value, &mut written)?;
    Ok((written, value))
}

/// [`word`], its text appended to `out` (nothing appended on an error) and its value in
/// `value` (cleared first): the writer's buffers, so a word costs no allocation of its own.
pub fn word_to(
    a: &Arg,
    pos: Pos,
    dollar: &mut bool,
    value: &mut String,
    out: &mut String,
) -> Result<(), String> {
    value.clear();
    if let Some((sigil, text)) = bare(a)
        && sigil.len() + text.len() <= MAX_WORD
    {
        // Most words: a directive's name, an operator, a key, a variable.
        value.push_str(sigil);
        value.push_str(text);
        out.push_str(sigil);
        out.push_str(text);
        return Ok(());
    }
    let mut field: Option<&str> = None;
    // A variable's `${...}` is fine in a bare word; any other space, `;`, brace, `#`,
    // quote or backslash needs quotes.
    let parts = a.parts.as_slice();
    let mut needs = parts.is_empty();
    for (k, p) in parts.iter().enumerate() {
        match p {
            Part::Code(c) => {
                // ASCII text: its bytes are its characters.
                let k = classes(c);
                let control = if k & WIDE == 0 {
                    k & (CONTROL | TAB) != 0
                } else {
                    c.chars().any(char::is_control)
                };
                if control {
                    return Err(format!("generator bug: a control character in {c:?}"));
                }
                needs |= needs_quotes(c, k);
                value.push_str(c);
            }
            Part::Var(v) | Part::BracedVar(v) => {
                if !is_var_name(v) {
                    return Err(format!("generator bug: invalid variable name {v:?}"));
                }
                // `$a` followed by a name character would read a longer name.
                let next_is_name = parts.get(k + 1).is_some_and(|n| {
                    let first = match n {
                        Part::Code(c) => c.chars().next(),
                        Part::Var(_) | Part::BracedVar(_) => Some('$'),
                        Part::Data { text, .. } | Part::RegexData { text, .. } => {
                            text.chars().next()
                        }
                    };
                    first.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                });
                let braces = next_is_name || matches!(p, Part::BracedVar(_));
                value.push_str(if braces { "${" } else { "$" });
                value.push_str(v);
                if braces {
                    value.push('}');
                }
            }
            Part::Data { field: f, text } | Part::RegexData { field: f, text } => {
                let k = classes(text);
                check_bytes(f, text, k)?;
                field.get_or_insert(f);
                needs |= needs_quotes(text, k) || matches!(p, Part::RegexData { .. });
                let regex = matches!(p, Part::RegexData { .. });
                let first = value.is_empty();
                data_into(value, f, text, regex, pos, first, dollar)?;
                // A map key's leading `\`.
                needs |= value.starts_with('\\');
            }
        }
    }
    written_to(value, a.style, needs, field, out)
}

/// A lone word of the generator's that is written as it is, as `$` or nothing and its text:
/// [`word_to`] without its walk over parts (a word to quote, check or escape is not one).
fn bare(a: &Arg) -> Option<(&'static str, &str)> {
    match (&a.parts, a.style) {
        (Parts::One(Part::Code(c)), Style::Auto) if !c.is_empty() && classes(c) == 0 => {
            Some(("", c))
        }
        (Parts::One(Part::Var(v)), Style::Auto) if is_var_name(v) => Some(("$", v)),
        _ => None,
    }
}

/// Word `value` written in `style` (`needs`: quotes) to `out`, unless it passes [`MAX_WORD`]
/// (`field`: the first field of data it holds).
fn written_to(
    value: &str,
    style: Style,
    needs: bool,
    field: Option<&str>,
    out: &mut String,
) -> Result<(), String> {
    let start = out.len();
    match style {
        // A bare `${...}` is fine for NGINX, but crossplane reads on past its `}`: quoted.
        Style::Auto if !needs && !value.is_empty() && !braced(value) => out.push_str(value),
        Style::Auto | Style::Double => quote(value, '"', out),
        Style::Single => quote(value, '\'', out),
    }
    let written = out.len() - start;
    if written > MAX_WORD {
        out.truncate(start);
        return Err(format!(
            "{}: {written} bytes in one nginx.conf word; NGINX takes at most {MAX_WORD}",
            field.unwrap_or("generated text"),
        ));
    }
    Ok(())
}

/// Appends data `text` to the value of a word at `pos`.
fn data_into(
    value: &mut String,
    field: &str,
    text: &str,
    regex: bool,
    pos: Pos,
    first: bool,
    dollar: &mut bool,
) -> Result<(), String> {
    if first {
        match pos {
            Pos::MapKey
                if matches!(text, "default" | "hostnames" | "include" | "volatile")
                    || text.starts_with(['~', '\\']) =>
            {
                // NGINX strips one leading `\` of a key: the rest is taken as it is.
                value.push('\\');
            }
            Pos::LocationPath if !text.starts_with('/') => {
                return Err(format!(
                    "{field}: {:?} is not a path starting with \"/\"",
                    truncate(text)
                ));
            }
            Pos::ServerName if text.starts_with('~') || text.contains('$') => {
                return Err(format!(
                    "{field}: {:?} would not be a plain server name",
                    truncate(text)
                ));
            }
            _ => {}
        }
    }
    if !(regex || (pos == Pos::Variables && text.contains('$'))) {
        // Nothing escaped: the text as it is.
        value.push_str(text);
        return Ok(());
    }
    for c in text.chars() {
        if regex && !(c.is_ascii_alphanumeric() || c == '/' || c == '-') {
            value.push('\\');
        }
        if c == '$' && pos == Pos::Variables {
            *dollar = true;
            let _ = write!(value, "${{{DOLLAR_VAR}}}");
        } else {
            value.push(c);
        }
    }
    Ok(())
}

/// Whether `v` holds `${` (most words hold no `$` at all: one byte search).
fn braced(v: &str) -> bool {
    v.contains('$') && v.contains("${")
}

/// `v` in quotes `q`, with `\` and `q` escaped and a tab written `\t`, appended to `s`.
fn quote(v: &str, q: char, s: &mut String) {
    s.reserve(v.len() + 2);
    s.push(q);
    if !v.bytes().any(|b| b == b'\t' || b == b'\\' || char::from(b) == q) {
        // Nothing to escape (`q` is ASCII: a byte of its own in UTF-8).
        s.push_str(v);
        s.push(q);
        return;
    }
    for c in v.chars() {
        if c == '\t' {
            s.push_str("\\t");
            continue;
        }
        if c == '\\' || c == q {
            s.push('\\');
        }
        s.push(c);
    }
    s.push(q);
}
