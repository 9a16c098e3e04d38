//! An index over exact conditions, so a long list costs about the same as a short one.
//!
//! Each entry of a long list is filed under one *key*: its most selective exact condition
//! (a header `name: value`, a param `name=value`, or else its method). For a request, the
//! entries whose key holds are found by hash lookups (one per request header line with an
//! indexed name, one per indexed param name, one for the method) and merged in list order
//! with the entries that have no key (`any`, regex-only, malformed). Only those candidates are
//! evaluated, in ascending order, so the first satisfied candidate is the first satisfied entry
//! of the list and a malformed entry is still reached exactly when the linear scan would reach
//! it. The lookup that found a candidate tested its key as the evaluation would ([`Held`]):
//! the key is not tested again. Built at compile time; the lookups allocate nothing.

use rustc_hash::FxHashMap as HashMap;

use crate::prefilter::Needed;
use crate::store::{
    Body, Builder, Cond, Entry, Index, Item, RegexGroup, Run, Span, Table, Test, extend_or_mark,
    try_room,
};

/// Lists shorter than this are scanned linearly (the index would not pay for itself).
pub(crate) const MIN_ENTRIES: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Header(Span, Span),
    Param(Span, Span),
    Method(Span),
}

fn keys_of(e: &Entry, conds: &[Cond]) -> Vec<Key> {
    let Body::When { method, headers, params, .. } = e.body else { return Vec::new() };
    let exact = |r: Run, key: fn(Span, Span) -> Key| {
        conds.get(r.range()).unwrap_or_default().iter().filter_map(move |c| match c.test {
            Test::Exact(v) => Some(key(c.name, v)),
            Test::Regex(_) => None,
        })
    };
    let mut keys: Vec<Key> = exact(headers, Key::Header).collect();
    keys.extend(exact(params, Key::Param));
    keys.extend(method.map(Key::Method));
    keys
}

/// Postings grouped by name, then by value, as the index is built.
type Groups = HashMap<Span, Vec<(Span, Vec<u32>)>>;
/// Entries (their numbers in the list) by the exact key they are filed under.
type Filed = Vec<(Key, Vec<u32>)>;
/// (pattern, entry) of entries filed under a regex condition, by (header?, name).
type ByRegex = Vec<((bool, Span), Vec<(u32, u32)>)>;

/// Builds the index of the list whose entries are `entries` of the builder, if it is long
/// enough to have one; returns its number.
pub(crate) fn build(b: &mut Builder, entries: Run) -> Option<u32> {
    if entries.len() < MIN_ENTRIES || b.no_memory {
        return None;
    }
    // Built with infallible allocations (hash maps, vectors, B-trees): only when the estimate
    // of their peak fits in what is left of the bound and in the address space; else the list
    // is scanned in order (a notice). The automaton of a regex group is estimated on its own
    // when it is built (`automaton`).
    if !alloc_meter::can_build(estimate(b, entries)) {
        b.unindexed_lists += 1;
        return None;
    }
    // `can_build` said yes: the scope is not spent yet.
    let keys: Vec<Vec<Key>> =
        b.entries.get(entries.range())?.iter().map(|e| keys_of(e, &b.conds)).collect();
    let (filed, by_regex, mut rest) = assign(b, entries, &keys);
    let mut regex_groups = Vec::new();
    for ((header, name), members) in by_regex {
        match regex_group(b, header, name, &members) {
            Some(g) => regex_groups.push(g),
            // The automaton could not be built: these entries are always candidates.
            None => rest.extend(members.iter().map(|(_, e)| *e)),
        }
    }
    rest.sort_unstable();
    let first_group = b.regex_groups.len();
    if !extend_or_mark(&mut b.no_memory, &mut b.regex_groups, regex_groups) {
        return None;
    }
    let regex = b.run(first_group, b.regex_groups.len());
    lay_out(b, filed, &rest, regex)
}

/// Each entry of the list (`keys`: their exact conditions) filed under its most selective
/// key, else under a regex condition's (header?, name), else in the rest; keys and regex
/// groups in list order (of each one's first entry).
fn assign(b: &Builder, entries: Run, keys: &[Vec<Key>]) -> (Filed, ByRegex, Vec<u32>) {
    let mut count: HashMap<Key, usize> = HashMap::default();
    for k in keys.iter().flatten() {
        *count.entry(*k).or_default() += 1;
    }
    let mut filed: HashMap<Key, Vec<u32>> = HashMap::default();
    let mut rest = Vec::new();
    // (header?, name) -> (pattern, entry) of entries filed under a regex condition.
    let mut by_regex: HashMap<(bool, Span), Vec<(u32, u32)>> = HashMap::default();
    for (i, ks) in keys.iter().enumerate() {
        // The most selective key: the one the fewest entries share (methods last on ties,
        // since every entry of a route tends to share its method).
        match ks.iter().min_by_key(|k| (count[*k], matches!(k, Key::Method(_)))) {
            None => match regex_key(&b.entries[entries.start as usize + i], b) {
                Some((header, name, pattern)) => {
                    by_regex.entry((header, name)).or_default().push((pattern, i as u32))
                }
                None => rest.push(i as u32),
            },
            Some(k) => filed.entry(*k).or_default().push(i as u32),
        }
    }
    // In list order (of each group's first entry), not the maps' order: the layout follows
    // the list, whatever the hash function.
    let mut by_regex: Vec<_> = by_regex.into_iter().collect();
    by_regex.sort_unstable_by_key(|(_, members)| members.first().map(|(_, e)| *e));
    let mut filed: Vec<_> = filed.into_iter().collect();
    filed.sort_unstable_by_key(|(_, list)| list.first().copied());
    (filed, by_regex, rest)
}

/// The index's tables (methods, headers, params, the rest) for the entries filed under
/// exact keys, with the run of its regex groups; its number.
fn lay_out(b: &mut Builder, filed: Filed, rest: &[u32], regex: Run) -> Option<u32> {
    let (mut headers, mut params, mut methods) = (Groups::default(), Groups::default(), Vec::new());
    for (k, list) in filed {
        match k {
            Key::Header(name, value) => headers.entry(name).or_default().push((value, list)),
            Key::Param(name, value) => params.entry(name).or_default().push((value, list)),
            Key::Method(m) => methods.push((m, list)),
        }
    }
    let rest = postings(b, rest);
    let first = b.items.len();
    for (m, list) in &methods {
        let value = postings(b, list);
        if !extend_or_mark(&mut b.no_memory, &mut b.items, [Item { key: *m, value }]) {
            return None;
        }
    }
    let methods = b.run(first, b.items.len());
    let headers = groups(b, &headers);
    let header_names = name_table(b, headers);
    let params = groups(b, &params);
    let id = b.index(b.indexes.len());
    let index = Index { headers, params, methods, rest, regex, header_names };
    if !extend_or_mark(&mut b.no_memory, &mut b.indexes, [index]) {
        return None;
    }
    // The estimate fitted (else nothing was built): spent now means it was passed while built.
    if alloc_meter::spent() && b.spent_in.is_none() {
        b.spent_in = Some("building the index of the list");
    }
    Some(id)
}

/// Bytes per entry, per condition, per literal and per literal byte that [`build`] may hold
/// at its peak, temporaries included (hash maps at twice their load during a rehash, the
/// per-entry key vectors, the sorted copies, the literal B-trees with their owned keys).
/// Measured with the module's allocator (the peak of a compile with the index, automaton
/// refused, minus the peak without it): 1,000 literal-heavy entries (128,000 literals of ~65
/// bytes) 25.8 MB, i.e. ~200 bytes a literal; 400 entries of ~17-byte literals 6.3 MB (~123 a
/// literal). These figures are 1.45-1.6x that; `tests/memory_bounds.rs`'s property test
/// checks that a list that compiles never passes the limit.
const PER_ENTRY: usize = 1024;
const PER_CONDITION: usize = 256;
const PER_LITERAL: usize = 128;
const PER_LITERAL_BYTE: usize = 3;

/// An upper bound of the bytes [`build`] allocates for the list `entries`, the automata
/// aside, from what the list holds: its entries, conditions and the regex literals they need.
pub(crate) fn estimate(b: &Builder, entries: Run) -> usize {
    let list = b.entries.get(entries.range()).unwrap_or_default();
    let (mut conditions, mut literals, mut literal_bytes) = (0usize, 0usize, 0usize);
    for e in list {
        let Body::When { headers, params, .. } = e.body else { continue };
        for c in [headers, params].iter().flat_map(|r| b.conds.get(r.range()).unwrap_or_default()) {
            conditions += 1;
            let Test::Regex(p) = c.test else { continue };
            let Some(Some(n)) = b.pattern_literals.get(p as usize) else { continue };
            for lit in [&n.prefixes, &n.suffixes].into_iter().flatten().flatten() {
                literals += 1;
                literal_bytes = literal_bytes.saturating_add(lit.len());
            }
        }
    }
    (16usize << 10)
        .saturating_add(list.len().saturating_mul(PER_ENTRY))
        .saturating_add(conditions.saturating_mul(PER_CONDITION))
        .saturating_add(literals.saturating_mul(PER_LITERAL))
        .saturating_add(literal_bytes.saturating_mul(PER_LITERAL_BYTE))
}

/// The regex condition an entry without exact conditions is filed under: its first header
/// (else param) regex condition whose needed literals are known.
fn regex_key(e: &Entry, b: &Builder) -> Option<(bool, Span, u32)> {
    let Body::When { headers, params, .. } = e.body else { return None };
    let conds = |r: Run, header: bool| {
        b.conds.get(r.range()).unwrap_or_default().iter().map(move |c| (header, c))
    };
    conds(headers, true).chain(conds(params, false)).find_map(|(header, c)| match c.test {
        Test::Regex(p) if b.pattern_literals.get(p as usize)?.is_some() => {
            Some((header, c.name, p))
        }
        _ => None,
    })
}

/// The literals the members' patterns need, and for each the members it lets through: those
/// of patterns anchored at the start in a lookup table, the others in an automaton.
fn regex_group(
    b: &mut Builder,
    header: bool,
    name: Span,
    members: &[(u32, u32)],
) -> Option<RegexGroup> {
    let needs: Vec<(Needed, u32)> = members
        .iter()
        .map(|(pattern, entry)| Some((b.pattern_literals.get(*pattern as usize)?.clone()?, *entry)))
        .collect::<Option<_>>()?;
    // How many of the scanned members' patterns need each literal (in either set).
    let mut shared: HashMap<&[u8], usize> = HashMap::default();
    for (n, _) in needs.iter().filter(|(n, _)| !n.anchored) {
        let mut own: Vec<&[u8]> =
            [&n.prefixes, &n.suffixes].into_iter().flatten().flatten().map(Vec::as_slice).collect();
        own.sort_unstable();
        own.dedup();
        for lit in own {
            *shared.entry(lit).or_default() += 1;
        }
    }
    let sharers = |lits: &[Vec<u8>]| {
        lits.iter().map(|l| shared.get(l.as_slice()).copied().unwrap_or(0)).max().unwrap_or(0)
    };
    let (mut anchored, mut scan) = (Literals::new(), Literals::new());
    for (n, entry) in &needs {
        match &n.prefixes {
            // Looked up by length and lower-cased (`store::Prefixes`): at most 64 bytes.
            Some(p) if n.anchored && p.iter().all(|l| l.len() <= 64) => {
                for lit in p {
                    anchored.entry(lit.to_ascii_lowercase()).or_default().push(*entry);
                }
            }
            _ => {
                for lit in n.preferred(sharers) {
                    scan.entry(lit.clone()).or_default().push(*entry);
                }
            }
        }
    }
    let anchored = prefixes(b, anchored)?;
    let scan = literals(b, scan)?;
    Some(RegexGroup { header, name, anchored, scan })
}

/// Literal -> the entries it lets through, in literal order.
type Literals = std::collections::BTreeMap<Vec<u8>, Vec<u32>>;

/// The lookup table of the anchored literals; `Some(None)` when there are none, `None` when
/// one is not UTF-8 (not expected: `regex-syntax` matches only valid UTF-8).
fn prefixes(b: &mut Builder, by_literal: Literals) -> Option<Option<crate::store::Prefixes>> {
    if by_literal.is_empty() {
        return Some(None);
    }
    let first = b.items.len();
    let (mut lengths, mut ends) = (0u64, [0u64; 4]);
    for (lit, mut list) in by_literal {
        let text = core::str::from_utf8(&lit).ok()?;
        if !(1..=64).contains(&lit.len()) || !try_room(&mut b.items, 1) {
            return None;
        }
        lengths |= 1 << (lit.len() - 1);
        let end = crate::store::end_key(lit.len(), lit.last().copied().unwrap_or_default());
        ends[end / 64] |= 1 << (end % 64);
        let key = b.intern(text);
        list.sort_unstable();
        list.dedup();
        let value = postings(b, &list);
        b.items.push(Item { key, value });
    }
    let table = b.table(first);
    Some(Some(crate::store::Prefixes { lengths, table, ends }))
}

/// The automaton of `by_literal` and the postings of its literals; `Some(None)` when there
/// are none, `None` when the automaton could not be built.
fn literals(b: &mut Builder, by_literal: Literals) -> Option<Option<crate::store::Literals>> {
    if by_literal.is_empty() {
        return Some(None);
    }
    // ASCII case is ignored: a caseless pattern's literals come in one ASCII spelling
    // (`prefilter`); for the others it only lets more values through.
    let before = alloc_meter::spent();
    let built = automaton(by_literal.keys().map(Vec::as_slice));
    // Spent now, not before: the build ran out of memory (or passed the bound) inside the
    // crate.
    if !before && alloc_meter::spent() && b.spent_in.is_none() {
        b.spent_in = Some("building the regex prefilter's automaton of the list");
    }
    let Some(automaton) = built else {
        let first = by_literal.values().flatten().copied().min().unwrap_or(0);
        extend_or_mark(&mut b.no_memory, &mut b.unindexed, [first]);
        return None;
    };
    let id = b.index(b.automata.len());
    if !extend_or_mark(&mut b.no_memory, &mut b.automata, [automaton]) {
        return None;
    }
    let first = b.literal_postings.len();
    for mut list in by_literal.into_values() {
        list.sort_unstable();
        list.dedup();
        let run = postings(b, &list);
        if !extend_or_mark(&mut b.no_memory, &mut b.literal_postings, [run]) {
            return None;
        }
    }
    let literals = b.run(first, b.literal_postings.len());
    Some(Some(crate::store::Literals { automaton: id, literals }))
}

/// Literal bytes up to which a DFA is tried: its states are at most this many, so building it
/// stays cheap.
const DFA_LITERAL_BYTES: usize = 4096;
/// The most memory a group's DFA may keep; a larger one gives way to a contiguous NFA.
const DFA_MAX_MEMORY: usize = 128 * 1024;

/// The automaton of one group's literals. A request scans every value of the group's name
/// with it, overlapping matches included, which
/// no prefilter can skip: a DFA takes one table lookup per byte, a contiguous NFA several,
/// with failure transitions (the 1,000 mixed-regex list of `scripts/bench/bench.sh` spent a 3rd
/// of its request there). So a DFA when it is small (byte classes keep it to a stride of a few
/// dozen words per state), else the contiguous NFA (a few bytes per state).
fn automaton<'l>(
    literals: impl Iterator<Item = &'l [u8]> + Clone,
) -> Option<aho_corasick::AhoCorasick> {
    let build = |kind| {
        aho_corasick::AhoCorasick::builder()
            .kind(Some(kind))
            .ascii_case_insensitive(true)
            .build(literals.clone())
            .ok()
    };
    let (count, bytes) = literals.clone().fold((0usize, 0usize), |(n, b), l| (n + 1, b + l.len()));
    let nfa = nfa_estimate(count, bytes);
    // The DFA is built from the NFA, which stays until it is done.
    let dfa = nfa.saturating_add(bytes.saturating_add(1).saturating_mul(DFA_STATE_BYTES));
    if bytes <= DFA_LITERAL_BYTES
        && alloc_meter::can_build(dfa)
        && let Some(dfa) = build(aho_corasick::AhoCorasickKind::DFA)
        && dfa.memory_usage() <= DFA_MAX_MEMORY
    {
        return Some(dfa);
    }
    // Built with infallible allocations (its `Vec`s grow as it goes): only when the estimate
    // of its peak fits in what is left of the compile's memory bound and in the address space.
    if !alloc_meter::can_build(nfa) {
        return None;
    }
    build(aho_corasick::AhoCorasickKind::ContiguousNFA)
}

/// Bytes one DFA state may take: a row of 4-byte transitions for up to 257 byte classes.
const DFA_STATE_BYTES: usize = 257 * 4;

/// An upper bound of the peak bytes the aho-corasick builder allocates for a contiguous NFA
/// of `count` literals of `bytes` bytes in all (ASCII case ignored). A trie has at most one
/// state per literal byte; its states near the root (depth < 3) keep dense rows of 256
/// transitions, and there are at most 1 + min(count, 256) + count of those. Measured with the
/// module's allocator (`tests/memory_bounds.rs`, literals sharing no prefix, the worst case):
/// 30-232 bytes per literal byte at the peak, the high end for short literals (dense rows);
/// this bound is 1.6-2.6x those peaks.
pub(crate) fn nfa_estimate(count: usize, bytes: usize) -> usize {
    let dense = 1usize.saturating_add(count.min(256)).saturating_add(count);
    (16 * 1024usize)
        .saturating_add(bytes.saturating_mul(80))
        .saturating_add(dense.saturating_mul(1024))
}

/// Header groups from this many on are found by a table of their names.
pub(crate) const NAME_TABLE_FROM: usize = 8;
/// The longest header name a name table holds (a request's name is lower-cased on the stack
/// to be looked up).
pub(crate) const NAME_TABLE_MAX: usize = 64;

/// The table of the header groups' names, when there are many and all are short.
fn name_table(b: &mut Builder, headers: Run) -> Table {
    let names: Vec<Span> = match b.groups.get(headers.range()) {
        Some(g) if g.len() >= NAME_TABLE_FROM => g.iter().map(|(n, _)| *n).collect(),
        _ => return Table::default(),
    };
    if names.iter().any(|n| b.text(*n).len() > NAME_TABLE_MAX) {
        return Table::default();
    }
    let first = b.items.len();
    for (i, name) in names.into_iter().enumerate() {
        let g = headers.start as usize + i;
        let value = b.run(g, g + 1);
        if !extend_or_mark(&mut b.no_memory, &mut b.items, [Item { key: name, value }]) {
            return Table::default();
        }
    }
    b.table(first)
}

fn postings(b: &mut Builder, list: &[u32]) -> Run {
    let start = b.postings.len();
    if !extend_or_mark(&mut b.no_memory, &mut b.postings, list.iter().copied()) {
        return Run::default();
    }
    b.run(start, b.postings.len())
}

fn groups(b: &mut Builder, groups: &Groups) -> Run {
    let mut made: Vec<(Span, Table)> = Vec::with_capacity(groups.len());
    let mut order: Vec<_> = groups.iter().collect();
    order.sort_unstable_by_key(|(_, values)| {
        values.first().and_then(|(_, list)| list.first().copied())
    });
    for (name, values) in order {
        let first = b.items.len();
        for (value, list) in values {
            let run = postings(b, list);
            if !extend_or_mark(&mut b.no_memory, &mut b.items, [Item { key: *value, value: run }]) {
                return Run::default();
            }
        }
        made.push((*name, b.table(first)));
    }
    let start = b.groups.len();
    if !extend_or_mark(&mut b.no_memory, &mut b.groups, made) {
        return Run::default();
    }
    b.run(start, b.groups.len())
}

/// The exact condition the entries of a candidate list are filed under (header or param
/// name, value), when the request was found to satisfy it by the lookup that gave the list:
/// those entries need not test it again. `Nothing` for the other lists (the rest, regex hits,
/// a method's, a key with an empty value, the lists gathered past `CAP`).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Held {
    #[default]
    Nothing,
    Header(Span, Span),
    Param(Span, Span),
}

impl Held {
    /// Whether `c` (a header condition if `header`, else a param condition) is the one held.
    #[inline(always)]
    pub(crate) fn covers(self, c: &Cond, header: bool) -> bool {
        match (self, c.test) {
            (Held::Header(name, value), Test::Exact(v)) => header && name == c.name && value == v,
            (Held::Param(name, value), Test::Exact(v)) => !header && name == c.name && value == v,
            _ => false,
        }
    }
}

/// The candidate lists of one request, merged in ascending order. A list pushed again (a key
/// the request repeats) is taken once; lists past the first `CAP` are gathered into one sorted
/// set at the first `next`, so the work follows the postings the request names, never the list.
pub(crate) struct Candidates<'a> {
    /// The first `len` are `Some`: `None` is all zero bits, so making the array is one fill
    /// (with `&[]`, a dangling pointer, it was 64 stores: issue #46).
    lists: [Option<&'a [u32]>; CAP],
    /// What each of those lists' entries are known to satisfy.
    held: [Held; CAP],
    len: usize,
    next_min: u32,
    /// What the entry `next` returned last is known to satisfy.
    current: Held,
    /// Postings of the lists past `CAP` (sorted and deduplicated at the first `next`), and
    /// how far they were returned.
    more: Vec<u32>,
    more_at: usize,
    more_lists: rustc_hash::FxHashSet<(usize, usize)>,
}

/// How many posting lists one request merges directly (the rest are gathered).
const CAP: usize = 8;

impl<'a> Candidates<'a> {
    pub(crate) fn new() -> Self {
        Candidates {
            lists: [None; CAP],
            held: [Held::Nothing; CAP],
            len: 0,
            next_min: 0,
            current: Held::Nothing,
            more: Vec::new(),
            more_at: usize::MAX,
            more_lists: rustc_hash::FxHashSet::default(),
        }
    }

    /// Adds a list (once, however often it is pushed) whose entries are known to satisfy
    /// `held`; returns the postings newly gathered past `CAP` (work for the caller to charge).
    #[inline(always)]
    pub(crate) fn push(&mut self, list: &'a [u32], held: Held) -> usize {
        // An empty list (the rest, the regex hits of most lists) without a call.
        if list.is_empty() {
            return 0;
        }
        self.push_list(list, held)
    }

    #[inline(never)]
    fn push_list(&mut self, list: &'a [u32], held: Held) -> usize {
        let id = (list.as_ptr(), list.len());
        let same = |l: &Option<&[u32]>| l.is_some_and(|l| (l.as_ptr(), l.len()) == id);
        if self.lists[..self.len].iter().any(same) {
            return 0;
        }
        if self.len < CAP {
            self.lists[self.len] = Some(list);
            self.held[self.len] = held;
            self.len += 1;
            return 0;
        }
        // Checked against the gathered lists by a hash set of their ids.
        if !self.more_lists.insert((id.0 as usize, id.1)) {
            return 0;
        }
        self.more.extend_from_slice(list);
        list.len()
    }

    /// What the entry [`Iterator::next`] returned last is known to satisfy.
    pub(crate) fn held(&self) -> Held {
        self.current
    }

    /// Heap bytes held (for the per-request state figure).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.more.capacity() * 4 + self.more_lists.capacity() * 24
    }
}

impl Iterator for Candidates<'_> {
    type Item = usize;

    /// The smallest entry index not yet returned.
    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.len == 1 && self.more.is_empty() {
            // One list (most requests): its entries in order (sorted, each once), no merge.
            let list = self.lists[0].as_mut()?;
            let (&head, rest) = list.split_first()?;
            *list = rest;
            self.current = self.held[0];
            return Some(head as usize);
        }
        self.merged()
    }
}

impl Candidates<'_> {
    /// [`Iterator::next`] of several lists: the smallest head past the last answer.
    #[inline(never)]
    fn merged(&mut self) -> Option<usize> {
        let mut min: Option<u32> = None;
        // An entry sits in one keyed list at most; found in two lists, nothing is held.
        let mut held = Held::Nothing;
        for (list, h) in self.lists[..self.len].iter_mut().zip(&self.held) {
            let Some(list) = list else { continue };
            // Drop what was already returned (the same entry can sit in several lists): each
            // list is sorted and was at or past the last answer, so that is its head at most.
            while let Some((&head, rest)) = list.split_first() {
                if head >= self.next_min {
                    match min {
                        Some(m) if m < head => {}
                        Some(m) if m == head => held = Held::Nothing,
                        _ => (min, held) = (Some(head), *h),
                    }
                    break;
                }
                *list = rest;
            }
        }
        if self.more_at == usize::MAX && !self.more.is_empty() {
            self.more.sort_unstable();
            self.more.dedup();
            self.more_at = 0;
        }
        while let Some(&head) = self.more.get(self.more_at) {
            if head >= self.next_min {
                if min.is_none_or(|m| head <= m) {
                    (min, held) = (Some(head), Held::Nothing);
                }
                break;
            }
            self.more_at += 1;
        }
        let m = min?;
        self.next_min = m + 1;
        self.current = held;
        Some(m as usize)
    }
}
