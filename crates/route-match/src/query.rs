//! The query string, decoded once per request and only when a param condition needs it.
//!
//! Split on `&` only (`;` is data); each segment splits at its first `=` (no `=`: empty value);
//! names and values are decoded (`+` -> space, `%XX` -> byte, invalid escapes kept literally).
//! Lookups return the first occurrence of a name.

/// Pairs kept without allocating; a query with more spills into a Vec.
const INLINE: usize = 4;
/// From this many pairs on, lookups go through a sorted index instead of a scan.
const SORT_FROM: usize = 16;

/// Where a decoded name or value lies: in the raw query (nothing to decode) or, with
/// [`DECODED`] set in `end`, in `buf`. Offsets are u32 (a query over 2 GiB is cut there;
/// NGINX's own limit is far lower).
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    start: u32,
    end: u32,
}

const DECODED: u32 = 1 << 31;

/// The bytes that end a name (`=`), a pair (`&`) or need decoding (`%`, `+`).
const SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    t[b'&' as usize] = true;
    t[b'=' as usize] = true;
    t[b'%' as usize] = true;
    t[b'+' as usize] = true;
    t
};

/// Bytes of decoded text and spilled pairs a thread keeps for its next query (the largest
/// query it decoded, up to this): a query with escapes or more than [`INLINE`] pairs then
/// allocates nothing per request (issue #46: no heap allocation per request in NGINX).
const KEEP: usize = 64 << 10;

/// Decoded text and spilled pairs of a query.
#[derive(Debug, Default)]
struct Buffers {
    buf: Vec<u8>,
    spill: Vec<(Span, Span)>,
}

std::thread_local! {
    /// The buffers of the last query that needed them, empty, for the next one.
    static SCRATCH: core::cell::Cell<Option<Box<Buffers>>> = const { core::cell::Cell::new(None) };
}

/// A decoded query string. A segment without `%` or `+` is borrowed from the raw query; only
/// the others are decoded into `buf`. A query of at most [`INLINE`] pairs without escapes
/// touches no buffer; the others borrow the thread's ([`SCRATCH`]) and give it back.
/// The buffers are one pointer (the first query of a thread that needs them allocates them),
/// so that a `Params` is small; an evaluation makes one empty and fills it in place
/// ([`Params::fill`]), never moving it (issue #46).
#[derive(Debug)]
pub(crate) struct Params<'q> {
    raw: &'q [u8],
    inline: [(Span, Span); INLINE],
    n: usize,
    /// `buf`: decoded text; `spill`: every pair, once there are more than INLINE, stably
    /// sorted by name when there are SORT_FROM or more (see `sorted`), so the first of equal
    /// names is still the first occurrence. `None` while the query has neither: then every
    /// span lies in `raw`.
    heap: Option<Box<Buffers>>,
}

// Made in every evaluation (empty): small enough for a few stores.
const _: () = assert!(core::mem::size_of::<Params<'_>>() <= 96);

impl Drop for Params<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some(h) = self.heap.take() {
            give_back(h);
        }
    }
}

/// Empties the buffers of a query and keeps them for the thread's next one (up to [`KEEP`]
/// bytes each).
#[cold]
#[inline(never)]
fn give_back(mut h: Box<Buffers>) {
    h.buf.clear();
    h.spill.clear();
    let keep = |bytes: usize| bytes <= KEEP;
    if !keep(h.buf.capacity()) {
        h.buf = Vec::new();
    }
    if !keep(h.spill.capacity() * core::mem::size_of::<(Span, Span)>()) {
        h.spill = Vec::new();
    }
    // A thread that is exiting has no scratch left: the buffers are freed here.
    let _ = SCRATCH.try_with(|s| s.set(Some(h)));
}

impl<'q> Params<'q> {
    /// Number of (name, value) pairs.
    pub(crate) fn len(&self) -> usize {
        self.n.max(self.spill().len())
    }

    /// Heap bytes this query uses (decoded bytes and the spilled pairs).
    pub(crate) fn heap_bytes(&self) -> usize {
        let buf = self.heap.as_ref().map_or(0, |h| h.buf.len());
        buf + core::mem::size_of_val(self.spill())
    }

    /// The spilled pairs (empty while they fit `inline`).
    fn spill(&self) -> &[(Span, Span)] {
        self.heap.as_ref().map_or(&[][..], |h| &h.spill)
    }

    /// Takes the thread's buffers, once, before the first byte or pair goes to the heap.
    #[inline(never)]
    fn take_scratch(&mut self) -> &mut Buffers {
        self.heap.get_or_insert_with(|| {
            SCRATCH.try_with(|s| s.take()).ok().flatten().unwrap_or_default()
        })
    }

    /// An empty query: nothing decoded yet (see [`Params::fill`]).
    #[inline]
    pub(crate) fn new() -> Params<'q> {
        Params { raw: &[], inline: Default::default(), n: 0, heap: None }
    }

    #[cfg(test)]
    pub(crate) fn parse(raw: &'q [u8]) -> Params<'q> {
        let mut p = Params::new();
        p.fill(raw);
        p
    }

    /// Decodes `raw` into this empty query ([`Params::new`]), in place.
    pub(crate) fn fill(&mut self, raw: &'q [u8]) {
        debug_assert!(self.n == 0 && self.heap.is_none());
        let raw = &raw[..raw.len().min((DECODED - 1) as usize)];
        self.raw = raw;
        let p = self;
        // One pass: segment start, its first `=`, and whether name or value needs decoding.
        // Ordinary bytes are skipped by a table lookup each.
        let (mut start, mut eq, mut escaped_name, mut escaped_value) = (0, None, false, false);
        let mut i = 0;
        loop {
            while i < raw.len() && !SPECIAL[raw[i] as usize] {
                i += 1;
            }
            match raw.get(i) {
                Some(b'=') if eq.is_none() => eq = Some(i),
                Some(b'=') => {}
                Some(b'%' | b'+') if eq.is_none() => escaped_name = true,
                Some(b'%' | b'+') => escaped_value = true,
                end => {
                    if i > start {
                        let (name, value) = match eq {
                            Some(e) => ((start, e), (e + 1, i)),
                            None => ((start, i), (i, i)),
                        };
                        let item = (p.span(name, escaped_name), p.span(value, escaped_value));
                        p.push(item);
                    }
                    if end.is_none() {
                        break;
                    }
                    (start, eq, escaped_name, escaped_value) = (i + 1, None, false, false);
                }
            }
            i += 1;
        }
        if p.sorted() {
            let mut spill =
                p.heap.as_mut().map(|h| core::mem::take(&mut h.spill)).unwrap_or_default();
            spill.sort_by(|a, b| p.bytes(&a.0).cmp(p.bytes(&b.0)));
            if let Some(h) = &mut p.heap {
                h.spill = spill;
            }
        }
    }

    /// Whether lookups use the sorted index (many pairs) rather than a scan in query order.
    fn sorted(&self) -> bool {
        self.spill().len() >= SORT_FROM
    }

    fn push(&mut self, item: (Span, Span)) {
        if self.n < INLINE && self.spill().is_empty() {
            self.inline[self.n] = item;
            self.n += 1;
        } else {
            let inline = self.inline;
            let h = self.take_scratch();
            if h.spill.is_empty() {
                h.spill.extend_from_slice(&inline);
            }
            h.spill.push(item);
        }
    }

    fn items(&self) -> &[(Span, Span)] {
        match &self.heap {
            Some(h) if !h.spill.is_empty() => &h.spill,
            _ => &self.inline[..self.n],
        }
    }

    fn bytes(&self, s: &Span) -> &[u8] {
        let r = s.start as usize..(s.end & !DECODED) as usize;
        if s.end & DECODED != 0 {
            self.heap.as_ref().and_then(|h| h.buf.get(r)).unwrap_or_default()
        } else {
            &self.raw[r]
        }
    }

    /// The span of raw[start..end], decoded into `buf` first if `escaped`.
    #[inline]
    fn span(&mut self, (start, end): (usize, usize), escaped: bool) -> Span {
        if escaped {
            self.decode(start, end)
        } else {
            Span { start: start as u32, end: end as u32 }
        }
    }

    /// Decodes raw[start..end] into `buf`.
    #[inline(never)]
    fn decode(&mut self, start: usize, end: usize) -> Span {
        let s = &self.raw[start..end];
        let buf = &mut self.take_scratch().buf;
        let start = buf.len();
        let mut i = 0;
        while i < s.len() {
            let b = s[i];
            match b {
                b'+' => buf.push(b' '),
                b'%' => match (s.get(i + 1).and_then(hex), s.get(i + 2).and_then(hex)) {
                    (Some(h), Some(l)) => {
                        buf.push(h << 4 | l);
                        i += 3;
                        continue;
                    }
                    _ => buf.push(b'%'),
                },
                _ => buf.push(b),
            }
            i += 1;
        }
        // A decoded string is never longer than its raw form, so it fits the same bound.
        Span { start: start as u32, end: buf.len() as u32 | DECODED }
    }

    /// The value of the first occurrence of `name`, if any.
    #[inline(always)]
    pub(crate) fn first(&self, name: &[u8]) -> Option<&[u8]> {
        if self.heap.is_some() {
            return self.first_buffered(name);
        }
        // At most INLINE pairs, none decoded: a scan of spans in `raw`.
        let raw = |s: &Span| self.raw.get(s.start as usize..s.end as usize).unwrap_or_default();
        let pairs = self.inline.get(..self.n).unwrap_or_default();
        pairs.iter().find(|(n, _)| crate::bytes::eq(raw(n), name)).map(|(_, v)| raw(v))
    }

    /// [`Params::first`] of a query with decoded or spilled pairs.
    #[inline(never)]
    fn first_buffered(&self, name: &[u8]) -> Option<&[u8]> {
        let items = self.items();
        let found = if self.sorted() {
            let i = items.partition_point(|(n, _)| self.bytes(n) < name);
            items.get(i).filter(|(n, _)| crate::bytes::eq(self.bytes(n), name))
        } else {
            items.iter().find(|(n, _)| crate::bytes::eq(self.bytes(n), name))
        };
        found.map(|(_, v)| self.bytes(v))
    }
}

/// What [`first_raw`] found for a name in the raw query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Raw<'q> {
    /// The value of the name's first occurrence, which needs no decoding.
    Found(&'q [u8]),
    /// The name does not occur.
    Absent,
    /// A name before it, or its value, needs decoding: only [`Params::fill`] can tell.
    Escaped,
}

/// [`Params::first`] read off the raw query, without decoding it (one lone param condition
/// needs no more), when no segment up to the name's first occurrence has `%` or `+` in its
/// name and its value has neither; with the segments visited (the work of the scan).
#[inline(always)]
pub(crate) fn first_raw<'q>(raw: &'q [u8], name: &[u8]) -> (Raw<'q>, u64) {
    let mut rest = &raw[..raw.len().min((DECODED - 1) as usize)];
    let mut segments = 0;
    while !rest.is_empty() {
        // The segment's name: up to its first `=`, `&`, `%` or `+`.
        let n = rest.iter().position(|&b| SPECIAL[b as usize]).unwrap_or(rest.len());
        let (head, tail) = rest.split_at(n);
        let (value, next) = match tail.split_first() {
            Some((b'%' | b'+', _)) => return (Raw::Escaped, segments + 1),
            // An empty segment (`&&`) is none.
            Some((b'&', next)) if n == 0 => {
                rest = next;
                continue;
            }
            // No `=`: the value is empty.
            Some((b'&', next)) => (&[][..], next),
            None => (&[][..], &[][..]),
            Some((_, tail)) => {
                let m = tail.iter().position(|&b| b == b'&').unwrap_or(tail.len());
                let (value, next) = tail.split_at(m);
                (value, next.get(1..).unwrap_or_default())
            }
        };
        segments += 1;
        if crate::bytes::eq(head, name) {
            if value.iter().any(|&b| b == b'%' || b == b'+') {
                return (Raw::Escaped, segments);
            }
            return (Raw::Found(value), segments);
        }
        rest = next;
    }
    (Raw::Absent, segments)
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
    fn long_queries_spill_and_sort_and_keep_the_first_occurrence() {
        for n in [7, 8, 9, 15, 16, 17, 100] {
            let mut q: Vec<String> = (0..n).map(|i| format!("k{}=v{i}", n - i)).collect();
            q.push("k1=late".into());
            q.push("sp%61ce=a+b".into());
            let raw = q.join("&");
            let p = Params::parse(raw.as_bytes());
            assert_eq!(p.first(b"k1"), Some(format!("v{}", n - 1).as_bytes()), "{n}");
            assert_eq!(p.first(format!("k{n}").as_bytes()), Some(&b"v0"[..]), "{n}");
            assert_eq!(p.first(b"space"), Some(&b"a b"[..]), "{n}");
            assert_eq!(p.first(b"k0"), None, "{n}");
            assert_eq!(p.sorted(), n + 2 >= SORT_FROM, "{n}");
        }
    }

    #[test]
    fn binary_bytes_decode() {
        let p = Params::parse(b"k=%00%ff%0A");
        assert_eq!(p.first(b"k"), Some(&b"\x00\xff\n"[..]));
    }

    /// The contract's rules written the obvious way: split, decode, take the first.
    fn reference(raw: &[u8], name: &[u8]) -> Option<Vec<u8>> {
        let decode = |s: &[u8]| {
            let mut p = Params::parse(b"");
            p.raw = s;
            let span = p.span((0, s.len()), true);
            p.bytes(&span).to_vec()
        };
        raw.split(|&b| b == b'&').filter(|s| !s.is_empty()).find_map(|seg| {
            let (n, v) = match seg.iter().position(|&b| b == b'=') {
                Some(i) => (&seg[..i], &seg[i + 1..]),
                None => (seg, &[][..]),
            };
            (decode(n) == name).then(|| decode(v))
        })
    }

    proptest::proptest! {
        #[test]
        fn agrees_with_the_reference(
            raw in proptest::collection::vec(proptest::sample::select(b"ab=&%+2f1".to_vec()), 0..120),
            name in proptest::collection::vec(proptest::sample::select(b"ab %".to_vec()), 0..3),
        ) {
            let p = Params::parse(&raw);
            proptest::prop_assert_eq!(p.first(&name).map(<[u8]>::to_vec), reference(&raw, &name));
        }

        #[test]
        fn the_raw_scan_agrees_with_the_decode_when_it_answers(
            raw in proptest::collection::vec(proptest::sample::select(b"ab=&%+2f1".to_vec()), 0..120),
            name in proptest::collection::vec(proptest::sample::select(b"ab=".to_vec()), 0..3),
        ) {
            let (found, segments) = first_raw(&raw, &name);
            let decoded = reference(&raw, &name);
            match found {
                Raw::Found(v) => proptest::prop_assert_eq!(Some(v.to_vec()), decoded),
                Raw::Absent => proptest::prop_assert_eq!(None, decoded),
                Raw::Escaped => proptest::prop_assert!(raw.iter().any(|b| b"%+".contains(b))),
            }
            proptest::prop_assert!(segments <= Params::parse(&raw).len() as u64 + 1);
        }
    }
}
