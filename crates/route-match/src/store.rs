//! The compiled form of one source (an inline list, a `$http_matches` value or a whole
//! `matches.json`): a handful of flat arrays, with no allocation per entry, condition, string
//! or index key.
//!
//! Why flat: a configuration is compiled in the NGINX master and shared, copy-on-write, by the
//! workers it forks. A compiled form made of many small allocations interleaves, page by page,
//! with the next reload's: freeing the old one then writes to (and so copies) nearly every
//! page of the heap in the master, and leaves free chunks on every page that the new workers'
//! first `malloc` calls walk and write to. A few large arrays are freed by touching a few
//! pages, and their pages go back to the system whole (`scripts/bench/reload-memory.sh`).
//!
//! Everything refers to everything else by `u32` index or [`Span`]; strings live once in one
//! text pool (interned: names, values, paths and keys that repeat are stored once).

use core::hash::Hasher;
use core::ops::Range;

use rustc_hash::FxHasher;

pub(crate) use crate::bytes::malloc_size;
use crate::pattern::Pattern;

/// A string of the text pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct Span {
    off: u32,
    len: u32,
}

impl Span {
    pub(crate) fn is_empty(self) -> bool {
        self.len == 0
    }
}

/// A range of one of the arrays (entries, conditions, postings, slots, index groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Run {
    pub(crate) start: u32,
    pub(crate) end: u32,
}

impl Run {
    pub(crate) fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
    pub(crate) fn len(self) -> usize {
        (self.end - self.start) as usize
    }
    pub(crate) fn is_empty(self) -> bool {
        self.start == self.end
    }
}

/// A header or param condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Cond {
    /// Header names are stored lower-case (they compare case-insensitively); param names as
    /// written.
    pub(crate) name: Span,
    pub(crate) test: Test,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Test {
    Exact(Span),
    /// Index into the patterns.
    Regex(u32),
}

/// A key of a hash table: its text and what it maps to (an index's postings, or a list).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item {
    pub(crate) key: Span,
    pub(crate) value: Run,
}

/// An open-addressing hash table over a run of items: `slots` (a power of two of them) hold
/// item indexes, `EMPTY` where free; beside each, in `tags`, a byte of its key's hash (never
/// 0; 0 where free), so that a probe past another key compares no key.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Table {
    slots: Run,
}

const EMPTY: u32 = u32::MAX;

fn hash(b: &[u8]) -> usize {
    full_hash(b) as usize
}

fn full_hash(b: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(b);
    h.finish()
}

/// The byte of `h` a table keeps beside a slot (its top bits: the slot is chosen by the low
/// ones); never 0, which marks a free slot.
fn tag(h: u64) -> u8 {
    (h >> 56) as u8 | 1
}

/// Everything compiled from one source.
#[derive(Debug, Default)]
pub(crate) struct Store {
    text: Box<str>,
    pub(crate) entries: Box<[Entry]>,
    pub(crate) conds: Box<[Cond]>,
    pub(crate) patterns: Box<[Pattern]>,
    pub(crate) postings: Box<[u32]>,
    slots: Box<[u32]>,
    tags: Box<[u8]>,
    pub(crate) items: Box<[Item]>,
    pub(crate) groups: Box<[(Span, Table)]>,
    pub(crate) indexes: Box<[Index]>,
    /// Regex prefilter groups of the indexes, their automata and, per literal of an
    /// automaton, the entries it lets through.
    pub(crate) regex_groups: Box<[RegexGroup]>,
    pub(crate) automata: Box<[aho_corasick::AhoCorasick]>,
    pub(crate) literal_postings: Box<[Run]>,
}

/// The regex-only entries of a list keyed by one header (or param) name: an entry is a
/// candidate only when a value of that name holds one of the literals its condition needs
/// (see `prefilter`): at its start, for a pattern anchored there, else anywhere.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RegexGroup {
    pub(crate) header: bool,
    /// Lower-case for headers.
    pub(crate) name: Span,
    /// The literals of the anchored patterns, looked for at the start of each subject only.
    pub(crate) anchored: Option<Prefixes>,
    /// The literals of the others, looked for anywhere in the value.
    pub(crate) scan: Option<Literals>,
}

/// The literals of a [`RegexGroup`]'s anchored patterns, ASCII lower-case, in a hash table
/// of items (literal -> the entries it lets through): a subject is looked up once per literal
/// length, by its first bytes lower-cased (whatever the number of literals, whatever follows
/// in the value).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prefixes {
    /// Bit `n - 1` is set when some literal is `n` bytes long (literals are 1 to 64 bytes).
    pub(crate) lengths: u64,
    pub(crate) table: Table,
    /// Bit [`end_key`] of each literal's (length, last byte): a subject's prefix of a length
    /// whose bit is clear is no literal, and is not looked up.
    pub(crate) ends: [u64; 4],
}

/// Where a literal of `len` bytes ending in `last` sits in `Prefixes::ends`.
pub(crate) fn end_key(len: usize, last: u8) -> usize {
    (usize::from(last) + len.wrapping_mul(37)) & 255
}

/// One automaton of a [`RegexGroup`] and, per literal of it, the entries it lets through.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Literals {
    pub(crate) automaton: u32,
    /// Postings of literal `i` of the automaton: `literal_postings[literals.start + i]`.
    pub(crate) literals: Run,
}

impl Table {
    /// Whether the table has no slots (was not built).
    pub(crate) fn is_empty(self) -> bool {
        self.slots.is_empty()
    }
}

impl Store {
    // The end is computed in `usize`, where it cannot wrap: one bounds check, not two.
    #[inline]
    pub(crate) fn bytes(&self, s: Span) -> &[u8] {
        self.text
            .as_bytes()
            .get(s.off as usize..s.off as usize + s.len as usize)
            .unwrap_or_default()
    }
    #[inline]
    pub(crate) fn str(&self, s: Span) -> &str {
        self.text.get(s.off as usize..s.off as usize + s.len as usize).unwrap_or_default()
    }
    pub(crate) fn postings(&self, r: Run) -> &[u32] {
        self.postings.get(r.range()).unwrap_or_default()
    }

    /// The item whose key is `key`, if the table has one.
    pub(crate) fn lookup(&self, t: Table, key: &[u8]) -> Option<&Item> {
        self.items.get(self.lookup_index(t, key)?)
    }

    /// Where in `items` the item whose key is `key` is, if the table has one.
    pub(crate) fn lookup_index(&self, t: Table, key: &[u8]) -> Option<usize> {
        let slots = self.slots.get(t.slots.range())?;
        let tags = self.tags.get(t.slots.range())?;
        let mask = slots.len().checked_sub(1)?;
        let h = full_hash(key);
        let (mut at, want) = (h as usize & mask, tag(h));
        // At most half full, so a free slot ends every probe.
        for _ in 0..slots.len() {
            match *tags.get(at)? {
                0 => return None,
                t if t == want => {
                    let i = *slots.get(at)? as usize;
                    if crate::bytes::eq(self.bytes(self.items.get(i)?.key), key) {
                        return Some(i);
                    }
                }
                _ => {}
            }
            at = (at + 1) & mask;
        }
        None
    }

    /// Heap bytes held, each array with malloc's header and rounding, PCRE2's compiled code
    /// and JIT code included.
    pub(crate) fn memory(&self) -> usize {
        use core::mem::size_of_val;
        let block = |n: usize| if n == 0 { 0 } else { malloc_size(n) };
        block(self.text.len())
            + block(size_of_val(&*self.entries))
            + block(size_of_val(&*self.conds))
            + block(size_of_val(&*self.patterns))
            + self.patterns.iter().map(Pattern::memory).sum::<usize>()
            + block(size_of_val(&*self.postings))
            + block(size_of_val(&*self.slots))
            + block(size_of_val(&*self.tags))
            + block(size_of_val(&*self.items))
            + block(size_of_val(&*self.groups))
            + block(size_of_val(&*self.indexes))
            + block(size_of_val(&*self.regex_groups))
            + block(size_of_val(&*self.automata))
            // What an automaton reports, plus its own few allocations (measured ~450 bytes);
            // a DFA also holds one small allocation per match state (its patterns), which it
            // does not report: about one per literal, each with malloc's header and rounding.
            + self.automata.iter().map(automaton_memory).sum::<usize>()
            + block(size_of_val(&*self.literal_postings))
    }
}

fn automaton_memory(a: &aho_corasick::AhoCorasick) -> usize {
    let match_states = match a.kind() {
        aho_corasick::AhoCorasickKind::DFA => a.patterns_len() * 48,
        _ => 0,
    };
    a.memory_usage() + 512 + match_states
}

/// A [`Store`] being filled. The interning maps are the compiler's and are dropped with it.
#[derive(Default)]
pub(crate) struct Builder {
    text: String,
    /// The text pool's strings, for interning: an open-addressing table (at most half full)
    /// of indexes into `spans`, so no string is held twice while compiling.
    interned: Vec<u32>,
    spans: Vec<Span>,
    pub(crate) entries: Vec<Entry>,
    pub(crate) conds: Vec<Cond>,
    pub(crate) patterns: Vec<Pattern>,
    pattern_ids: rustc_hash::FxHashMap<Span, u32>,
    pub(crate) postings: Vec<u32>,
    slots: Vec<u32>,
    tags: Vec<u8>,
    pub(crate) items: Vec<Item>,
    pub(crate) groups: Vec<(Span, Table)>,
    pub(crate) indexes: Vec<Index>,
    pub(crate) regex_groups: Vec<RegexGroup>,
    pub(crate) automata: Vec<aho_corasick::AhoCorasick>,
    pub(crate) literal_postings: Vec<Run>,
    /// Per pattern: the literals any match needs, if known (`prefilter`).
    pub(crate) pattern_literals: Vec<crate::prefilter::Literals>,
    /// An array outgrew `u32` indexes: the source is refused.
    pub(crate) too_large: bool,
    /// An allocation of the compile failed (an array could not grow, PCRE2 got no memory):
    /// the source is refused, with the memory error of the open scope.
    pub(crate) no_memory: bool,
    /// The most bytes one pattern may compile to; more makes its entry malformed.
    pub(crate) pattern_max: usize,
    /// Per regex group whose automaton was not built (its estimate did not fit in what was
    /// left of the memory bound): the first of its entries (0-based in its list). Taken by
    /// the compiler after each list's index, for a notice.
    pub(crate) unindexed: Vec<u32>,
    /// Lists left without an index (its estimate did not fit), since the compiler last took
    /// the count for a notice.
    pub(crate) unindexed_lists: usize,
    /// The estimated structure being built when the compile's scope was found spent right
    /// after it (an allocation failed inside it and the allocator's reserve covered the
    /// rest, or it went over the bound): for the error, which then names it. Its estimate
    /// and the address-space probe (`memory::can_build`) are there so that this never
    /// happens; `tests/pressure.rs` sweeps for it.
    pub(crate) spent_in: Option<&'static str>,
}

/// Makes room for `additional` more items in `v`, or says it cannot (instead of aborting).
pub(crate) fn try_room<T>(v: &mut Vec<T>, additional: usize) -> bool {
    // The buffer a growth allocates, while the old one is still held: checked against what
    // is left before it is made.
    let grow = crate::parse::vec_growth(v.len(), v.capacity(), additional, size_of::<T>());
    (grow == 0 || alloc_meter::may_grow(grow)) && v.try_reserve(additional).is_ok()
}

/// Appends `items` to `v` when the room for them is had ([`try_room`]); else sets
/// `no_memory` (the compile's flag: its next checkpoint fails it) and appends nothing.
/// Whether they were appended.
pub(crate) fn extend_or_mark<T>(
    no_memory: &mut bool,
    v: &mut Vec<T>,
    items: impl IntoIterator<Item = T, IntoIter: ExactSizeIterator>,
) -> bool {
    let items = items.into_iter();
    if !try_room(v, items.len()) {
        *no_memory = true;
        return false;
    }
    v.extend(items);
    true
}

impl Builder {
    /// Sizes the arrays for what a first pass found: growing them would copy them, and leave
    /// the old copies behind as freed heap in the master. Index arrays get what every list
    /// indexed could need (at most one posting, item and group per entry).
    ///
    /// Fallible: `Err` with the bytes asked for when they do not fit in what is left of the
    /// compile's bound, or the system refuses them.
    pub(crate) fn reserve(&mut self, s: &crate::parse::Survey) -> Result<(), usize> {
        use core::mem::size_of;
        let bytes = s.bytes
            + s.entries * (size_of::<Entry>() + size_of::<u32>())
            + s.conditions * size_of::<Cond>()
            + (s.entries + s.keys) * size_of::<Item>();
        // Over what is left of the bound, nothing is reserved: an allocation over the bound is
        // counted, not refused, so the arrays would take the compile over it before its check.
        let ok = bytes <= alloc_meter::room()
            && self.text.try_reserve_exact(s.bytes).is_ok()
            && self.entries.try_reserve_exact(s.entries).is_ok()
            && self.conds.try_reserve_exact(s.conditions).is_ok()
            && self.postings.try_reserve_exact(s.entries).is_ok()
            && self.items.try_reserve_exact(s.entries + s.keys).is_ok();
        if ok { Ok(()) } else { Err(bytes) }
    }

    /// Converts a length to `u32`, or marks the source too large.
    pub(crate) fn index(&mut self, n: usize) -> u32 {
        u32::try_from(n).unwrap_or_else(|_| {
            self.too_large = true;
            0
        })
    }

    /// The one copy of `s` in the text pool.
    pub(crate) fn intern(&mut self, s: &str) -> Span {
        if self.spans.len() * 2 >= self.interned.len() && !self.grow_interned() {
            self.no_memory = true;
            return Span::default();
        }
        let mask = self.interned.len() - 1;
        let mut at = hash(s.as_bytes()) & mask;
        loop {
            let slot = self.interned[at];
            if slot == EMPTY {
                break;
            }
            let span = self.spans[slot as usize];
            if self.text(span) == s.as_bytes() {
                return span;
            }
            at = (at + 1) & mask;
        }
        let (off, len) = (self.index(self.text.len()), self.index(s.len()));
        let number = self.index(self.spans.len());
        if self.too_large || off.checked_add(len).is_none() || number == EMPTY {
            self.too_large = true;
            return Span::default();
        }
        let grow = crate::parse::vec_growth(self.text.len(), self.text.capacity(), s.len(), 1);
        let text_ok = grow == 0 || alloc_meter::may_grow(grow);
        if !(text_ok && self.text.try_reserve(s.len()).is_ok() && try_room(&mut self.spans, 1)) {
            self.no_memory = true;
            return Span::default();
        }
        self.text.push_str(s);
        let span = Span { off, len };
        self.spans.push(span);
        self.interned[at] = number;
        span
    }

    /// Doubles the interning table; `false` when the system refuses the memory.
    fn grow_interned(&mut self) -> bool {
        let size = (self.interned.len() * 2).max(64);
        let mut slots = Vec::new();
        if !alloc_meter::may_grow(size.saturating_mul(core::mem::size_of::<u32>()))
            || slots.try_reserve_exact(size).is_err()
        {
            return false;
        }
        slots.resize(size, EMPTY);
        for (i, span) in self.spans.iter().enumerate() {
            let mut at = hash(self.text(*span)) & (size - 1);
            while slots[at] != EMPTY {
                at = (at + 1) & (size - 1);
            }
            slots[at] = i as u32;
        }
        self.interned = slots;
        true
    }

    pub(crate) fn text(&self, s: Span) -> &[u8] {
        self.text.as_bytes().get(s.off as usize..(s.off + s.len) as usize).unwrap_or_default()
    }

    /// The index of the compiled `source`, compiled on first sight.
    pub(crate) fn pattern(&mut self, source: &str) -> Result<u32, String> {
        let text = self.intern(source);
        if let Some(&id) = self.pattern_ids.get(&text) {
            return Ok(id);
        }
        // The map of patterns grows (its old table and its new one held at once) for the
        // source's distinct patterns, not this list's: checked first.
        let ids = crate::parse::table_growth(
            self.pattern_ids.len(),
            self.pattern_ids.capacity(),
            core::mem::size_of::<(Span, u32)>(),
        );
        if !(try_room(&mut self.patterns, 1)
            && try_room(&mut self.pattern_literals, 1)
            && (ids == 0 || alloc_meter::may_grow(ids))
            && self.pattern_ids.try_reserve(1).is_ok())
        {
            self.no_memory = true;
            return Err("out of memory".to_owned());
        }
        let (p, literals) = Pattern::analysed(source, self.pattern_max).map_err(|e| {
            if e == pcre2_bounded::CompileError::NoMemory {
                self.no_memory = true;
            }
            e.to_string()
        })?;
        let id = self.index(self.patterns.len());
        self.patterns.push(p);
        self.pattern_literals.push(literals);
        self.pattern_ids.insert(text, id);
        Ok(id)
    }

    /// A run from `start` to the current end of an array of length `end`.
    pub(crate) fn run(&mut self, start: usize, end: usize) -> Run {
        Run { start: self.index(start), end: self.index(end) }
    }

    /// A hash table over the items from `first` to the end: at most half full.
    pub(crate) fn table(&mut self, first: usize) -> Table {
        let n = self.items.len() - first;
        let size = (n * 2).next_power_of_two().max(2);
        let start = self.slots.len();
        if !(try_room(&mut self.slots, size) && try_room(&mut self.tags, size)) {
            self.no_memory = true;
            return Table::default();
        }
        self.slots.resize(start + size, EMPTY);
        self.tags.resize(start + size, 0);
        for i in first..self.items.len() {
            let key = self.items[i].key;
            let h = full_hash(self.text(key));
            let mut at = h as usize & (size - 1);
            while self.slots[start + at] != EMPTY {
                at = (at + 1) & (size - 1);
            }
            self.slots[start + at] = self.index(i);
            self.tags[start + at] = tag(h);
        }
        Table { slots: self.run(start, start + size) }
    }

    /// The finished store: every array at its exact size.
    pub(crate) fn finish(self) -> Store {
        Store {
            text: self.text.into_boxed_str(),
            entries: self.entries.into_boxed_slice(),
            conds: self.conds.into_boxed_slice(),
            patterns: self.patterns.into_boxed_slice(),
            postings: self.postings.into_boxed_slice(),
            slots: self.slots.into_boxed_slice(),
            tags: self.tags.into_boxed_slice(),
            items: self.items.into_boxed_slice(),
            groups: self.groups.into_boxed_slice(),
            indexes: self.indexes.into_boxed_slice(),
            regex_groups: self.regex_groups.into_boxed_slice(),
            automata: self.automata.into_boxed_slice(),
            literal_postings: self.literal_postings.into_boxed_slice(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) body: Body,
    pub(crate) redirect: Option<Span>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Body {
    /// `any: true`: satisfied by every request.
    Any,
    /// All present conditions must hold.
    When {
        path: Option<PathCond>,
        method: Option<Span>,
        /// Conditions of the store.
        headers: Run,
        params: Run,
    },
    /// Malformed: an error when reached (the reason).
    Invalid(Span),
}

/// The `path` condition (an extension of the NGF format, written by `httproute-nginx` for
/// Gateway API paths that one NGINX location cannot express).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PathCond {
    /// The whole path, byte for byte.
    Exact(Span),
    /// Whole segments: `/a` (or `/a/`) holds for `/a`, `/a/` and `/a/b`, not `/ab`. Stored
    /// without its trailing `/`; empty for `/`, which holds for every path.
    Prefix(Span),
    /// An unanchored search, like the other regex conditions (a pattern of the store).
    Regex(u32),
}

/// The index of one list, in its store. Postings are ascending entry indexes of the list.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Index {
    /// Groups: (lower-case header name, table of exact value -> postings).
    pub(crate) headers: Run,
    /// Groups: (param name, table of exact decoded value -> postings).
    pub(crate) params: Run,
    /// Items: (method, postings of the entries keyed by their method only).
    pub(crate) methods: Run,
    /// Postings of the entries with no exact condition and no prefilterable regex: always
    /// candidates.
    pub(crate) rest: Run,
    /// Regex prefilter groups (`RegexGroup`s of the store) of the entries with no exact
    /// condition but a regex condition whose needed literals are known.
    pub(crate) regex: Run,
    /// For many header groups: a table of their names (item key: the lower-case name, value:
    /// the group's one-element run in `groups`), so that each header line of a request costs
    /// one lookup, not one comparison per indexed name. Empty: compare with each name.
    pub(crate) header_names: Table,
}
