//! The query string, decoded once per request and only when a param condition needs it.
//!
//! Split on `&` only (`;` is data); each segment splits at its first `=` (no `=`: empty value);
//! names and values are decoded (`+` -> space, `%XX` -> byte, invalid escapes kept literally).
//! Lookups return the first occurrence of a name.

use core::ops::Range;

/// A decoded query string: all names and values in one buffer, an index sorted by name.
#[derive(Debug, Default)]
pub(crate) struct Params {
    buf: Vec<u8>,
    /// (name, value) ranges into `buf`, stably sorted by name: the first of equal names is the
    /// first occurrence in the query string.
    items: Vec<(Range<usize>, Range<usize>)>,
}

impl Params {
    pub(crate) fn parse(raw: &[u8]) -> Params {
        let mut p = Params { buf: Vec::with_capacity(raw.len()), items: Vec::new() };
        for seg in raw.split(|&b| b == b'&') {
            if seg.is_empty() {
                continue;
            }
            let (name, value) = match memchr::memchr(b'=', seg) {
                Some(i) => (&seg[..i], &seg[i + 1..]),
                None => (seg, &[][..]),
            };
            let n = p.decode_into(name);
            let v = p.decode_into(value);
            p.items.push((n, v));
        }
        let buf = &p.buf;
        p.items.sort_by(|a, b| buf[a.0.clone()].cmp(&buf[b.0.clone()]));
        p
    }

    fn decode_into(&mut self, s: &[u8]) -> Range<usize> {
        let start = self.buf.len();
        let mut i = 0;
        while i < s.len() {
            let b = s[i];
            match b {
                b'+' => self.buf.push(b' '),
                b'%' => match (s.get(i + 1).and_then(hex), s.get(i + 2).and_then(hex)) {
                    (Some(h), Some(l)) => {
                        self.buf.push(h << 4 | l);
                        i += 3;
                        continue;
                    }
                    _ => self.buf.push(b'%'),
                },
                _ => self.buf.push(b),
            }
            i += 1;
        }
        start..self.buf.len()
    }

    /// The value of the first occurrence of `name`, if any.
    pub(crate) fn first(&self, name: &[u8]) -> Option<&[u8]> {
        let buf = &self.buf;
        let i = self.items.partition_point(|(n, _)| &buf[n.clone()] < name);
        let (n, v) = self.items.get(i)?;
        (&buf[n.clone()] == name).then(|| &buf[v.clone()])
    }
}

fn hex(b: &u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_keeps_first_occurrence() {
        let p = Params::parse(b"a=1&A=2&a=3&TEST=v%32&sp=a+b&bad=%zz%4&pct=%&&novalue&=x&e=");
        assert_eq!(p.first(b"a"), Some(&b"1"[..]));
        assert_eq!(p.first(b"A"), Some(&b"2"[..]));
        assert_eq!(p.first(b"TEST"), Some(&b"v2"[..]));
        assert_eq!(p.first(b"sp"), Some(&b"a b"[..]));
        assert_eq!(p.first(b"bad"), Some(&b"%zz%4"[..]));
        assert_eq!(p.first(b"pct"), Some(&b"%"[..]));
        assert_eq!(p.first(b"novalue"), Some(&b""[..]));
        assert_eq!(p.first(b""), Some(&b"x"[..]));
        assert_eq!(p.first(b"e"), Some(&b""[..]));
        assert_eq!(p.first(b"missing"), None);
    }

    #[test]
    fn semicolon_is_data_and_names_are_decoded() {
        let p = Params::parse(b"a=1;b=2&n%61me=v&x%3Dy=z");
        assert_eq!(p.first(b"a"), Some(&b"1;b=2"[..]));
        assert_eq!(p.first(b"name"), Some(&b"v"[..]));
        assert_eq!(p.first(b"x=y"), Some(&b"z"[..]));
    }

    #[test]
    fn binary_bytes_decode() {
        let p = Params::parse(b"k=%00%ff%0A");
        assert_eq!(p.first(b"k"), Some(&b"\x00\xff\n"[..]));
    }
}
