//! Messages the generator prints (stderr) or writes (status), escaped.

/// A message of the generator (a warning, an error, a condition's message) as it is printed:
/// control characters (a newline among them, U+0085 too) and the line and paragraph
/// separators are written as escapes, so that a manifest string quoted in it stays on its
/// line and no line of a log is of an author's choosing. Every message goes through it where it is printed
/// (stderr) or written (`--status`).
pub fn escape_message(m: &str) -> String {
    let mut out = String::with_capacity(m.len());
    for c in m.chars() {
        match c {
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                out.extend(c.escape_default());
            }
            c => out.push(c),
        }
    }
    out
}
