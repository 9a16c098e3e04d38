//! Raw JSON entries -> compiled entries, once per list.
//!
//! Everything that can be decided without a request is decided here: the string syntax of the
//! source, header-name validity, the split of every header and param string, every regex. A
//! malformed entry becomes [`Body::Invalid`] (it answers an error when reached, as njs did) plus
//! a [`Warning`], so one bad route never blocks the other routes of a reload.

use core::fmt;
use core::ops::Range;
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use alloc_meter::{Exhausted, Scope};

use crate::eval::MatchList;
use crate::include::Slot;
use crate::index;
use crate::parse::{
    self, Fields, Got, ParseError, Parsed, RawEntry, Syntax, is_match_type, key_path,
};
use crate::store::{
    Body, Builder, Cond, Entry, Item, PathCond, Run, Span, Store, Table, Test, extend_or_mark,
    try_room,
};

/// A malformed entry, found at compile time. The entry answers an error when a request reaches
/// it; callers log this at load (or refuse the source when they are strict).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The match key of the list (for `matches.json`), `None` for a single list.
    pub key: Option<String>,
    /// How many other keys of the same file hold an identical list (compiled once).
    pub also: usize,
    /// 0-based index of the entry in its list.
    pub entry: usize,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(k) => write!(f, "{}[{}]: {}", key_path(Some(k)), self.entry, self.message)?,
            None => write!(f, "$[{}]: {}", self.entry, self.message)?,
        }
        if self.also > 0 {
            write!(f, " (the same list is under {} other key(s))", self.also)?;
        }
        Ok(())
    }
}

impl MatchList {
    /// A warning for each `@name` redirect path that `defined` does not hold (the load's check
    /// against the named locations), "redirectPath "@x" names a location that {nowhere}",
    /// under the list's `key` (a file's list) or none (an inline list).
    pub fn unknown_named(
        &self,
        key: Option<&[u8]>,
        defined: impl Fn(&[u8]) -> bool,
        nowhere: &str,
    ) -> Vec<Warning> {
        let key = key.map(|k| String::from_utf8_lossy(k).into_owned());
        self.redirects()
            .filter(|(_, p)| p.starts_with('@') && !defined(p.as_bytes()))
            .map(|(entry, p)| Warning {
                key: key.clone(),
                also: 0,
                entry,
                message: format!("redirectPath \"{p}\" names a location that {nowhere}"),
            })
            .collect()
    }
}

/// One compiled list and what was wrong with its entries.
#[derive(Debug)]
pub struct CompiledList {
    /// The list, ready to evaluate.
    pub list: MatchList,
    /// Malformed entries.
    pub warnings: Vec<Warning>,
    /// What was compiled differently, not wrong (a regex group left without its prefilter's
    /// automaton for lack of memory): for a `[warn]`, never an error.
    pub notices: Vec<Warning>,
}

/// A compiled `matches.json`: one compiled form for all its lists.
#[derive(Debug, Default)]
pub struct CompiledFile {
    store: Arc<Store>,
    /// The distinct lists.
    lists: Box<[MatchList]>,
    /// Key -> list (items of the store whose value starts at the list's number).
    keys: Table,
    key_items: Run,
    /// Malformed entries, once per distinct list.
    pub warnings: Vec<Warning>,
    /// See [`CompiledList::notices`]; once per distinct list.
    pub notices: Vec<Warning>,
}

impl CompiledFile {
    /// The list under `key` (the value of `$match_key`).
    pub fn get(&self, key: &[u8]) -> Option<&MatchList> {
        let item = self.store.lookup(self.keys, key)?;
        self.lists.get(item.value.start as usize)
    }
    /// [`CompiledFile::get`], trying first the key at `hint` (what the last call found; any
    /// value is safe: it is checked against `key`). Most locations ask for one key on every
    /// request, which this answers with one comparison instead of a hash and a probe.
    pub fn get_hinted(&self, key: &[u8], hint: &core::cell::Cell<u32>) -> Option<&MatchList> {
        let items = self.store.items.get(self.key_items.range()).unwrap_or_default();
        let item = match items.get(hint.get() as usize) {
            Some(item) if crate::bytes::eq(self.store.bytes(item.key), key) => item,
            _ => {
                let i = self.store.lookup_index(self.keys, key)?;
                let at = i.checked_sub(self.key_items.start as usize);
                hint.set(at.map_or(u32::MAX, |i| i as u32));
                self.store.items.get(i)?
            }
        };
        self.lists.get(item.value.start as usize)
    }
    /// Number of keys.
    pub fn len(&self) -> usize {
        self.key_items.len()
    }
    /// Whether the file has no keys (`{}`, what NGF writes for an empty configuration).
    pub fn is_empty(&self) -> bool {
        self.key_items.is_empty()
    }
    /// Every (key, list); a list shared by several keys comes once per key.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &MatchList)> {
        let items = self.store.items.get(self.key_items.range()).unwrap_or_default();
        items.iter().filter_map(|item| {
            Some((self.store.bytes(item.key), self.lists.get(item.value.start as usize)?))
        })
    }
    /// Number of distinct lists (identical lists under several keys are compiled once; a
    /// list of includes counts once, the lists it names once each).
    pub fn distinct(&self) -> usize {
        self.lists.len()
    }
    /// About how many bytes of heap the compiled file holds: its one compiled form (counted
    /// once, however many lists share it or include each other's), the lists and the parts of
    /// the lists of includes (see [`MatchList::memory`]).
    pub fn memory(&self) -> usize {
        let lists = self.lists.iter().map(MatchList::own_memory).sum::<usize>();
        crate::store::malloc_size(core::mem::size_of_val(&*self.lists))
            + lists
            + crate::store::malloc_size(16 + core::mem::size_of::<Store>())
            + self.store.memory()
    }
}

/// The memory one compile may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Bytes the whole compile may allocate (the compiled form and its temporaries, PCRE2's
    /// allocations and JIT code included, as far as they are counted: the module's allocator
    /// counts every Rust allocation; without it only PCRE2's are). More: the source is refused.
    pub memory: usize,
    /// Bytes one pattern may compile to (code plus JIT code). More: its entry is malformed.
    pub pattern: usize,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds { memory: usize::MAX, pattern: crate::pattern::DEFAULT_PATTERN_MEMORY }
    }
}

/// Bytes of the limit kept for the refusal when a compile is stopped: its message (a key in
/// it is cut to [`parse::KEY_SHOWN`] bytes) and the error around it, so that a refused compile
/// too stays within `http_matches_max_memory`.
pub(crate) const REFUSAL_ROOM: usize = 4096;

/// Why a compile ran out of memory, and what it was doing.
pub(crate) fn memory_error(e: Exhausted, during: &str) -> String {
    match e {
        Exhausted::NoReserve => format!(
            "out of memory before {during}: the system refused the allocator's 16 MiB reserve \
             (an address-space limit?), without which a failed allocation would abort the \
             process; nothing was compiled"
        ),
        Exhausted::OutOfMemory { used } => format!(
            "out of memory while {during}: the system refused an allocation after {used} bytes \
             had been allocated for this source"
        ),
        Exhausted::Limit { used, limit } => format!(
            "the compiled lists need more memory than allowed: the limit of {limit} bytes was \
             reached while {during} ({used} bytes allocated)"
        ),
    }
}

pub(crate) fn compile_list(
    json: &[u8],
    syntax: Syntax,
    bounds: Bounds,
) -> Result<CompiledList, ParseError> {
    let scope = Scope::open_keeping(bounds.memory, REFUSAL_ROOM);
    // Before anything is allocated: without the reserve nothing may be (every caller, at load
    // or per request, comes through here or the file entries below).
    scope.check().map_err(|e| ParseError::memory(memory_error(e, "parsing the list")))?;
    // Estimated before it is parsed (see `list_estimate`): by its bytes first, which bound
    // the first walk too (it copies an escaped string, one at a time), then with its entries,
    // which the walk counts. So a list refused for its size never goes over the limit on its
    // way to the refusal.
    let refused = |entries: Option<usize>, estimate: usize, room: usize| {
        let counted = entries.map_or_else(String::new, |n| format!(" ({n} entries)"));
        ParseError::memory(format!(
            "the compiled lists need more memory than allowed: the list's {} bytes of JSON{counted} \
             may take up to {estimate} bytes to parse and compile, more than the {room} bytes \
             left of the limit of {} bytes; not parsed",
            json.len(),
            scope.limit()
        ))
    };
    let (bytes, room) = (list_estimate(json.len(), 0, 0), alloc_meter::room());
    if bytes > room {
        return Err(refused(None, bytes, room));
    }
    // A first walk over the list, which allocates nothing: the entries are compiled as they
    // are parsed, so the syntax is known before the first, and the arrays are sized once.
    let survey = parse::list_survey(json);
    let estimate = list_estimate(json.len(), survey.entries, 0);
    if estimate > room {
        return Err(refused(Some(survey.entries), estimate, room));
    }
    let typed = match syntax {
        Syntax::Typed => true,
        Syntax::Untyped => false,
        Syntax::Auto => survey.typed,
    };
    let mut c = Compiler::new(typed, bounds);
    c.left = survey.entries;
    // Refused only by the system (it is within the estimate): the first entry stops then.
    c.b.no_memory = c.b.reserve(&survey).is_err();
    let mut warnings = Vec::new();
    let parsed = parse::parse_list(json, &mut |_, i, e| c.push(i, &e, None, &mut warnings));
    let failed = |c: &Compiler| {
        let no_memory = c.b.no_memory.then_some(Exhausted::OutOfMemory { used: scope.used() });
        let during = c.b.spent_in.unwrap_or("compiling the list");
        scope.check().err().or(no_memory).map(|e| ParseError::memory(memory_error(e, during)))
    };
    if let Some(e) = failed(&c) {
        return Err(e);
    }
    parsed?;
    let entries = c.b.run(0, c.b.entries.len());
    let index = index::build(&mut c.b, entries);
    let notices = c.notices(None);
    if let Some(e) = failed(&c) {
        return Err(e);
    }
    if c.b.too_large {
        return Err(ParseError::too_large());
    }
    // Room for a warning an element may have been made: only the warnings are kept.
    warnings.shrink_to_fit();
    let list = MatchList::new(Arc::new(c.b.finish()), entries, index);
    if let Err(e) = scope.check() {
        return Err(ParseError::memory(memory_error(e, "compiling the list")));
    }
    Ok(CompiledList { list, warnings, notices })
}

/// Why a file could not be compiled.
#[derive(Debug)]
pub enum FileError {
    /// It could not be opened, or it changed while it was read (a list longer in the second
    /// pass than in the first).
    Io(std::io::Error),
    /// It is not a usable `matches.json` (a read error half-way is one too).
    Parse(ParseError),
    /// Compiling it ran out of memory, or needed more than [`Bounds::memory`]: what happened
    /// and what was being compiled.
    Memory(String),
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Io(e) => e.fmt(f),
            FileError::Parse(e) => e.fmt(f),
            FileError::Memory(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for FileError {}

impl FileError {
    /// What the module's `[emerg]` line says of `file` (`max`: `http_matches_max_memory`,
    /// `taken`: the bytes the lists compiled before it hold).
    pub fn describe(&self, file: &str, max: usize, taken: usize) -> String {
        match self {
            FileError::Io(e) => format!("cannot read \"{file}\": {e}"),
            FileError::Memory(e) => format!(
                "cannot compile \"{file}\": {e} (http_matches_max_memory {}; {taken} bytes \
                 already taken by lists compiled before it)",
                bound_text(max)
            ),
            e => format!("invalid \"{file}\": {e}"),
        }
    }
}

/// A memory bound as log lines show it: bytes, or `off` (`usize::MAX`).
pub fn bound_text(n: usize) -> String {
    if n == usize::MAX { "off".to_owned() } else { n.to_string() }
}

/// Compiles a file from its first pass (`survey`) and the deserializer `open` returns for the
/// second, which allocates `reader` bytes (its read buffer) when it is opened.
///
/// Memory: every array of the compiled form is sized once from the first pass, fallibly, and
/// only if it fits in what is left of the bound; each list is estimated from its length (the
/// first pass's, and its elements) before it is parsed, and refused unparsed when its parse
/// and compile may not fit ([`list_estimate`]); the scope is checked at every list, every
/// entry and (through the reader) every 64 KiB of JSON; what cannot be made fallible (one
/// entry as parsed, the growth of a few small vectors) is bounded by those checks and covered
/// by the allocator's reserve.
///
/// `fence` is the second pass's reader's, when it reads a stream (a file whose text may change
/// between the passes): each list is read only as far as its first-pass length.
pub(crate) fn compile_file_from<'de, R: serde_json::de::Read<'de>>(
    syntax: Syntax,
    bounds: Bounds,
    scope: &Scope,
    mut survey: parse::Survey,
    reader: usize,
    fence: Option<&parse::Fence>,
    open: impl FnOnce() -> std::io::Result<serde_json::Deserializer<R>>,
) -> Result<CompiledFile, FileError> {
    // The first pass only looked at strings and counted: the entries are now compiled one by
    // one as they are parsed, never held as JSON trees, into arrays sized once.
    check_survey(scope, &mut survey)?;
    // The first key, and its copy for the duplicate check, are allocated by the parse before
    // the first list can be estimated: room for the longest key twice is kept here, and
    // after each list (see `Gate::before`).
    let next_key = survey.longest_key.saturating_mul(2);
    let mut pass = FilePass::new(syntax, bounds, scope, &survey, next_key.saturating_add(reader))?;
    let de = open().map_err(FileError::Io)?;
    // Up to the top-level value, no further than the first pass read (a text changed into
    // something else than a map is not read past that); lifted where the map begins.
    if let Some(fence) = fence {
        fence.set(survey.lead);
    }
    let gate = Gate {
        lengths: &survey.lengths,
        elements: &survey.elements,
        number: 0,
        next_key,
        stream: fence.is_some(),
        fenced: None,
        refused: None,
        limit: scope.limit(),
        counted: 0,
        grown: None,
    };
    let room = |n| alloc_meter::may_grow(n);
    let mut second = Second { gate, pass: &mut pass };
    let parsed = parse::parse_file_with(de, &survey.names, &room, fence, &mut second);
    let gate = second.gate;
    if let Some(fence) = fence {
        fence_errors(scope, fence, gate.fenced)?;
    }
    if let Some(at) = gate.grown {
        return Err(FileError::Io(std::io::Error::other(format!(
            "the file changed while it was read: the list under {at} has more entries than \
             when the first pass read it; not compiled"
        ))));
    }
    let no_memory = pass.c.b.no_memory.then_some(Exhausted::OutOfMemory { used: scope.used() });
    if let Some(e) = pass.failed.as_ref().map(|(e, _)| *e).or(scope.check().err()).or(no_memory) {
        let during =
            pass.failed.map_or_else(|| "parsing the file".to_owned(), |(_, during)| during);
        return Err(mem(e, &during));
    }
    if let Some(why) = gate.refused {
        return Err(FileError::Memory(why));
    }
    parsed.map_err(FileError::Parse)?;
    pass.finish()
}

/// `e` while `during`, as the file's error.
fn mem(e: Exhausted, during: &str) -> FileError {
    FileError::Memory(memory_error(e, during))
}

/// `bytes` more could not be had while `during`: over the limit, or refused by the system.
fn refusal(scope: &Scope, bytes: usize, during: &str) -> FileError {
    let used = scope.used().saturating_add(bytes);
    let e = if used > scope.limit() {
        Exhausted::Limit { used, limit: scope.limit() }
    } else {
        Exhausted::OutOfMemory { used: scope.used() }
    };
    mem(e, during)
}

/// The limit, or the system (`system`), refused some memory: which one.
fn spent(scope: &Scope, system: bool) -> Exhausted {
    if system {
        Exhausted::OutOfMemory { used: scope.used() }
    } else {
        Exhausted::Limit { used: scope.used(), limit: scope.limit() }
    }
}

/// What the first pass found that stops the compile before the second.
fn check_survey(scope: &Scope, survey: &mut parse::Survey) -> Result<(), FileError> {
    scope.check().map_err(|e| mem(e, "reading the file"))?;
    if survey.out_of_memory {
        // Stopped before the set of keys outgrew what was left: the scope is not spent yet.
        let e = spent(scope, survey.system_refused);
        return Err(mem(e, "reading the file's keys (the first pass)"));
    }
    // A file that is one string is refused by the first pass, before the second copies it.
    match survey.string_file.take() {
        Some(e) => Err(FileError::Parse(e)),
        None => Ok(()),
    }
}

/// What the second pass's reader found under its `fence`: the file changed since the first
/// pass (`fenced`: the key of the list being read), or a string did not fit.
fn fence_errors(
    scope: &Scope,
    fence: &parse::Fence,
    fenced: Option<String>,
) -> Result<(), FileError> {
    if fence.passed.get() {
        let what = fenced.map_or_else(
            || "it does not begin as it did".to_owned(),
            |at| format!("the list under {at} is longer than"),
        );
        return Err(FileError::Io(std::io::Error::other(format!(
            "the file changed while it was read: {what} when the first pass read it; not \
             compiled"
        ))));
    }
    if fence.string_refused.get() {
        let e = spent(scope, fence.system_refused.get());
        return Err(mem(e, "reading a string of the file (the second pass)"));
    }
    Ok(())
}

/// The second pass: each list let through by the gate, its entries compiled as they are read.
struct Second<'g, 'p, 's> {
    gate: Gate<'g>,
    pass: &'p mut FilePass<'s>,
}

impl parse::Lists for Second<'_, '_, '_> {
    fn before(&mut self, key: &str) -> Option<u64> {
        // The compile stopped: so does the parse, at this list.
        if !self.pass.begin(key) {
            return None;
        }
        let length = self.gate.before(key);
        self.pass.c.left = self.gate.counted;
        length
    }

    fn entry(&mut self, key: &str, i: usize, entry: RawEntry) -> bool {
        // More elements than the first pass counted (and estimated the list by): the text
        // changed between the passes.
        if i >= self.gate.counted {
            self.gate.grown = Some(key_path(Some(key)));
            return false;
        }
        let pass = &mut *self.pass;
        let pushed = pass.failed.is_none() && pass.c.push(i, &entry, Some(key), &mut pass.warnings);
        if !pushed {
            // Stopped: why, and where.
            pass.checkpoint(key);
        }
        pushed
    }

    fn list(&mut self, key: String, list: Parsed) {
        self.pass.add(key, list);
    }
}

/// Which lists the second pass parses: each is estimated before it is parsed (its entries
/// are compiled as they are read, with a checkpoint at each, but one entry may be the whole
/// list), from its first-pass length, and refused unparsed, with why, when the estimate does
/// not fit.
struct Gate<'a> {
    /// Each list's length in bytes of JSON, from the first pass, in file order.
    lengths: &'a [u32],
    /// Each list's elements, from the first pass (as long as `lengths`).
    elements: &'a [u32],
    /// Lists seen so far.
    number: usize,
    /// Room kept for the next key (see `compile_file_from`).
    next_key: usize,
    /// The second pass reads a stream (under a fence).
    stream: bool,
    /// The key of the list being parsed under a fence (its path, cut to 64 bytes), for the
    /// message if the fence is passed.
    fenced: Option<String>,
    /// Why a list was refused.
    refused: Option<String>,
    limit: usize,
    /// The elements of the list being parsed, from the first pass.
    counted: usize,
    /// The list (its path) that had more elements than the first pass counted.
    grown: Option<String>,
}

impl Gate<'_> {
    /// The length up to which the list under `key` is read; `None`: refused.
    fn before(&mut self, key: &str) -> Option<u64> {
        let length = self.lengths.get(self.number).map(|&l| l as usize);
        let elements = self.elements.get(self.number).map_or(0, |&n| n as usize);
        self.counted = elements;
        self.number += 1;
        let estimate = length.map_or(usize::MAX, |l| {
            list_estimate(l, elements, key.len()).saturating_add(self.next_key)
        });
        let room = alloc_meter::room();
        if let Some(l) = length.filter(|_| estimate <= room) {
            if self.stream {
                self.fenced = Some(key_path(Some(key)));
            }
            return Some(l as u64);
        }
        let at = parse::key_path(Some(key));
        self.refused = Some(match length {
            Some(l) => format!(
                "the compiled lists need more memory than allowed: the list under the key {at} \
                 has {l} bytes of JSON, which may take up to {estimate} bytes to parse and \
                 compile, more than the {room} bytes left of the limit of {} bytes; not parsed",
                self.limit
            ),
            None => format!(
                "out of memory before parsing the list under the key {at}: its length is not \
                 known from the first pass (the memory for it was refused, or the file changed \
                 between the two passes); not parsed"
            ),
        });
        None
    }
}

/// The second pass of a file: its lists compiled one by one, as they are parsed, into one
/// compiled form.
struct FilePass<'s> {
    c: Compiler,
    scope: &'s Scope,
    /// Identical lists (NGF writes one per hostname) are stored once: each list is compiled,
    /// and dropped again if an earlier list (shape hash -> its number and warnings) has the
    /// same entries (strings and patterns are interned, so equal lists compile to equal
    /// conditions).
    seen: HashMap<u64, Vec<(usize, Range<usize>)>>,
    lists: Vec<(Run, Option<u32>)>,
    /// Key -> list (the parser refuses a key written twice).
    keys: Vec<(Span, Slot)>,
    /// Lists of includes, resolved once every key is known (an include may name a later key).
    composites: Vec<Vec<String>>,
    warnings: Vec<Warning>,
    notices: Vec<Warning>,
    /// Why the compile stops, and what it was doing when the scope was found spent.
    failed: Option<(Exhausted, String)>,
    /// Where the list being parsed begins: its first warning, entry and condition.
    first: (usize, usize, usize),
}

impl<'s> FilePass<'s> {
    /// The compiler and its arrays, sized once from the first pass, fallibly, and only if they
    /// fit in what is left of the bound with `more` (the next key's room, the second pass's
    /// read buffer, which are allocated after these).
    fn new(
        syntax: Syntax,
        bounds: Bounds,
        scope: &'s Scope,
        survey: &parse::Survey,
        more: usize,
    ) -> Result<FilePass<'s>, FileError> {
        let typed = match syntax {
            Syntax::Typed => true,
            Syntax::Untyped => false,
            Syntax::Auto => survey.typed,
        };
        let mut c = Compiler::new(typed, bounds);
        let (keys, entries, conditions) = (survey.keys, survey.entries, survey.conditions);
        let what = format!(
            "sizing the arrays for {keys} keys, {entries} entries and {conditions} conditions"
        );
        if let Err(bytes) = c.b.reserve(survey) {
            return Err(refusal(scope, bytes, &what));
        }
        scope.check().map_err(|e| mem(e, &what))?;
        // Checked against what is left first (a table of `survey.keys` buckets is up to ~2.3x
        // as many slots; 3x counted): the allocator counts a reservation past the limit but
        // does not refuse it.
        let per_key = 3 * (core::mem::size_of::<(u64, Vec<(usize, Range<usize>)>)>() + 1)
            + core::mem::size_of::<(Run, Option<u32>)>()
            + core::mem::size_of::<(Span, Slot)>();
        let tables = keys.saturating_mul(per_key).saturating_add(more);
        if !alloc_meter::can_build(tables) {
            return Err(refusal(scope, tables, &what));
        }
        let mut pass = FilePass {
            c,
            scope,
            seen: HashMap::default(),
            lists: Vec::new(),
            keys: Vec::new(),
            composites: Vec::new(),
            warnings: Vec::new(),
            notices: Vec::new(),
            failed: None,
            first: (0, 0, 0),
        };
        if pass.seen.try_reserve(keys).is_err()
            || pass.lists.try_reserve_exact(keys).is_err()
            || pass.keys.try_reserve_exact(keys).is_err()
        {
            return Err(mem(Exhausted::OutOfMemory { used: scope.used() }, &what));
        }
        Ok(pass)
    }

    /// Before the list under `key` is parsed: where it begins; `false` when the compile
    /// stopped (the scope spent, or an allocation refused), which stops the parse.
    fn begin(&mut self, key: &str) -> bool {
        self.first = (self.warnings.len(), self.c.b.entries.len(), self.c.b.conds.len());
        self.checkpoint(key)
    }

    /// Whether the compile goes on: else why it stops, compiling the list under `key`.
    fn checkpoint(&mut self, key: &str) -> bool {
        if self.failed.is_some() {
            return false;
        }
        let no_memory =
            self.c.b.no_memory.then_some(Exhausted::OutOfMemory { used: self.scope.used() });
        if let Some(e) = self.scope.check().err().or(no_memory) {
            let at = parse::key_path(Some(key));
            self.failed = Some((e, format!("compiling the list under the key {at}")));
            return false;
        }
        true
    }

    /// The list under `key`, as the parse gives it: its entries (compiled as they were read)
    /// indexed (or found identical to an earlier list's), or kept for later as a list of
    /// includes.
    fn add(&mut self, key: String, list: Parsed) {
        if !self.checkpoint(&key) {
            return;
        }
        match list {
            Parsed::Entries(_) => {}
            Parsed::Includes(targets) => {
                let span = self.c.b.intern(&key);
                let number = self.c.b.index(self.composites.len());
                let no_memory = &mut self.c.b.no_memory;
                let _ = extend_or_mark(no_memory, &mut self.composites, [targets])
                    && extend_or_mark(no_memory, &mut self.keys, [(span, Slot::Composite(number))]);
                return;
            }
        };
        let Some(number) = self.compile(&key) else { return };
        let span = self.c.b.intern(&key);
        let number = self.c.b.index(number);
        extend_or_mark(&mut self.c.b.no_memory, &mut self.keys, [(span, Slot::Plain(number))]);
    }

    /// Indexes the entries of the list under `key` (compiled since [`FilePass::begin`]); the
    /// number of the distinct list they are (an earlier one when identical); `None`: out of
    /// memory.
    fn compile(&mut self, key: &str) -> Option<usize> {
        let c = &mut self.c;
        let (first_warning, first_entry, first_cond) = self.first;
        let entries = c.b.run(first_entry, c.b.entries.len());
        let shape = c.shape_hash(entries);
        let earlier = self.seen.get(&shape).into_iter().flatten().find(|(n, _)| {
            self.lists.get(*n).is_some_and(|(other, _)| c.same_entries(*other, entries))
        });
        if let Some((number, its_warnings)) = earlier.cloned() {
            self.warnings.truncate(first_warning);
            for w in &mut self.warnings[its_warnings] {
                w.also += 1;
            }
            c.b.entries.truncate(first_entry);
            c.b.conds.truncate(first_cond);
            return Some(number);
        }
        let index = index::build(&mut c.b, entries);
        if let (Some(what), Err(e)) = (c.b.spent_in, self.scope.check()) {
            // Named now: the next list's checkpoint would name the next list.
            self.failed = Some((e, format!("{what} under the key {}", parse::key_path(Some(key)))));
        }
        let these = c.notices(Some(key));
        if !(extend_or_mark(&mut c.b.no_memory, &mut self.notices, these)
            && extend_or_mark(&mut c.b.no_memory, &mut self.lists, [(entries, index)]))
        {
            return None;
        }
        let number = self.lists.len() - 1;
        self.seen.entry(shape).or_default().push((number, first_warning..self.warnings.len()));
        Some(number)
    }

    /// Resolves the includes and builds the table of keys and the compiled file.
    fn finish(self) -> Result<CompiledFile, FileError> {
        let FilePass { mut c, scope, seen, lists, keys, composites, mut warnings, notices, .. } =
            self;
        drop(seen);
        // Room for a warning an element may have been made: only the warnings are kept.
        warnings.shrink_to_fit();
        // What resolving the includes and finishing the lists allocate, sized by the file (its
        // keys, lists and include elements): checked before it is made.
        let finish = finish_estimate(keys.len(), lists.len(), &composites);
        if !alloc_meter::can_build(finish) {
            return Err(refusal(scope, finish, "resolving the includes and finishing the lists"));
        }
        let resolved = crate::include::resolve(&c.b, &keys, &composites, lists.len())
            .map_err(|m| FileError::Parse(ParseError::include(m)))?;
        let first = c.b.items.len();
        for (&(key, _), number) in keys.iter().zip(resolved.numbers) {
            let value = Run { start: number, end: number + 1 };
            c.b.items.push(Item { key, value });
        }
        let key_items = c.b.run(first, c.b.items.len());
        let table = c.b.table(first);
        let no_memory = c.b.no_memory.then_some(Exhausted::OutOfMemory { used: scope.used() });
        if let Some(e) = scope.check().err().or(no_memory) {
            return Err(mem(e, "building the table of keys"));
        }
        if c.b.too_large {
            return Err(FileError::Parse(ParseError::too_large()));
        }
        let store = Arc::new(c.b.finish());
        let lists = finish_lists(scope, &store, lists, resolved.composites)?;
        Ok(CompiledFile { store, lists, keys: table, key_items, warnings, notices })
    }
}

/// The file's lists: each distinct list of entries, then each list of includes, which refers
/// to the compiled lists it names (shared, never copied).
fn finish_lists(
    scope: &Scope,
    store: &Arc<Store>,
    lists: Vec<(Run, Option<u32>)>,
    composites: Vec<Vec<u32>>,
) -> Result<Box<[MatchList]>, FileError> {
    let refused = || mem(Exhausted::OutOfMemory { used: scope.used() }, "finishing the lists");
    let mut out = Vec::new();
    let parts: usize = composites.iter().map(Vec::len).sum();
    if out.try_reserve_exact(lists.len() + composites.len()).is_err()
        || parts.checked_mul(core::mem::size_of::<MatchList>()).is_none()
    {
        return Err(refused());
    }
    out.extend(
        lists.into_iter().map(|(entries, index)| MatchList::new(store.clone(), entries, index)),
    );
    for numbers in composites {
        // Sized by the file (one part per include element): asked for, not assumed.
        let mut parts: Vec<MatchList> = Vec::new();
        if parts.try_reserve_exact(numbers.len()).is_err() {
            return Err(refused());
        }
        parts.extend(numbers.iter().filter_map(|&n| out.get(n as usize).map(MatchList::share)));
        out.push(MatchList::composite(store.clone(), parts));
    }
    scope.check().map_err(|e| mem(e, "finishing the lists"))?;
    Ok(out.into_boxed_slice())
}

/// The most [`crate::include::resolve`], the table of keys and the finished lists allocate for
/// a file of `keys` keys, `lists` lists of entries and the lists of includes `composites`: the
/// resolver's map of keys (a hash table up to ~2.3x its length; 3x counted) and its copies of
/// each list of includes (twice: the targets, and the distinct ones kept), the key table's
/// slots and their tags (twice, while they grow), and one `MatchList` per list and per include element.
pub(crate) fn finish_estimate(keys: usize, lists: usize, composites: &[Vec<String>]) -> usize {
    use core::mem::size_of;
    let parts: usize = composites.iter().map(Vec::len).sum();
    let per_key = 3 * (size_of::<(&[u8], Slot)>() + 1)
        + size_of::<u32>()
        + 2 * 2 * 2 * (size_of::<u32>() + 1);
    let per_composite = 2 * size_of::<Vec<u32>>()
        + 3 * (size_of::<(&[u32], u32)>() + 1)
        + size_of::<u32>()
        + size_of::<MatchList>();
    keys.saturating_mul(per_key)
        .saturating_add(composites.len().saturating_mul(per_composite))
        .saturating_add(parts.saturating_mul(2 * size_of::<u32>() + size_of::<MatchList>()))
        .saturating_add(lists.saturating_mul(size_of::<MatchList>()))
}

/// The most a list of `length` bytes of JSON and `elements` elements (entries or includes,
/// the first pass's count), under a key of `key` bytes (0: a single list), may allocate from
/// the moment it is parsed to the checkpoint after it is compiled:
/// [`crate::LIST_BYTES_PER_JSON_BYTE`] per byte, [`crate::LIST_BYTES_PER_ENTRY`] per element
/// and a copy of the key in its warning (each element is warned about at most once: "no
/// redirectPath", or a malformed entry), and [`crate::LIST_BYTES_PER_PARSE`].
pub(crate) fn list_estimate(length: usize, elements: usize, key: usize) -> usize {
    let per_element = crate::LIST_BYTES_PER_ENTRY.saturating_add(key);
    length
        .saturating_mul(crate::LIST_BYTES_PER_JSON_BYTE)
        .saturating_add(elements.saturating_mul(per_element))
        .saturating_add(crate::LIST_BYTES_PER_PARSE)
}

/// An entry as content: kind, path, method (or the reason it is invalid), redirect path, and
/// its header and param conditions.
type Shape<'a> = (u8, Option<PathCond>, Option<Span>, Option<Span>, &'a [Cond], &'a [Cond]);

struct Compiler {
    typed: bool,
    /// Elements of the list being compiled still to come (the first pass's count).
    left: usize,
    /// The compiled form being filled: strings, patterns and redirect paths are shared
    /// across the source.
    b: Builder,
}

impl Compiler {
    fn new(typed: bool, bounds: Bounds) -> Compiler {
        let mut b = Builder::default();
        b.pattern_max = bounds.pattern;
        Compiler { typed, left: 0, b }
    }

    /// A notice per regex group of the last list indexed that was left without its automaton.
    fn notices(&mut self, key: Option<&str>) -> Vec<Warning> {
        let lists = core::mem::take(&mut self.b.unindexed_lists);
        let list = (lists > 0).then(|| Warning {
            key: key.map(str::to_owned),
            also: 0,
            entry: 0,
            message: "the index of this list would not fit in what is left of \
                      http_matches_max_memory (or of the address space): its entries are tried \
                      in order, within the regex budget"
                .to_owned(),
        });
        list.into_iter()
            .chain(core::mem::take(&mut self.b.unindexed).into_iter().map(|entry| {
                Warning {
                    key: key.map(str::to_owned),
                    also: 0,
                    entry: entry as usize,
                    message: "the regex prefilter's automaton for this entry's group of regex \
                          conditions would not fit in what is left of http_matches_max_memory \
                          (or of the address space): its entries are tried one by one, within \
                          the regex budget"
                        .to_owned(),
                }
            }))
            .collect()
    }

    /// What the entries of `r` are, with the runs of conditions they point to resolved.
    fn shape(&self, r: Run) -> impl Iterator<Item = Shape<'_>> {
        let conds = |r: Run| self.b.conds.get(r.range()).unwrap_or_default();
        self.b.entries.get(r.range()).unwrap_or_default().iter().map(move |e| match e.body {
            Body::Any => (0, None, None, e.redirect, &[][..], &[][..]),
            Body::Invalid(reason) => (1, None, Some(reason), e.redirect, &[][..], &[][..]),
            Body::When { path, method, headers, params } => {
                (2, path, method, e.redirect, conds(headers), conds(params))
            }
        })
    }

    fn shape_hash(&self, r: Run) -> u64 {
        use core::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        for s in self.shape(r) {
            s.hash(&mut h);
        }
        h.finish()
    }

    fn same_entries(&self, a: Run, b: Run) -> bool {
        self.shape(a).eq(self.shape(b))
    }

    /// Compiles the `i`th entry of a list (under `key`) into the builder; `false` when out of
    /// memory, which stops the parse: a checkpoint per entry, so that once an allocation
    /// failed (the allocator's reserve is being spent) or the bound was passed, nothing more
    /// is parsed or compiled, and what is allocated after the failure is one entry's worth.
    fn push(
        &mut self,
        i: usize,
        raw: &RawEntry,
        key: Option<&str>,
        warnings: &mut Vec<Warning>,
    ) -> bool {
        if self.b.no_memory || alloc_meter::spent() {
            self.b.no_memory = true;
            return false;
        }
        let (entry, problems) = self.entry(raw);
        self.left = self.left.saturating_sub(1);
        // At most one warning an element: at the first that finds the warnings full, room for
        // this one and one per element left in the list, exactly (what the list's estimate
        // counts), so they are never grown by doubling (three times their size at once).
        let want = problems.len().saturating_add(self.left);
        if !problems.is_empty() && warnings.len() == warnings.capacity() {
            let bytes = (warnings.len() + want).saturating_mul(core::mem::size_of::<Warning>());
            if !alloc_meter::may_grow(bytes) || warnings.try_reserve_exact(want).is_err() {
                self.b.no_memory = true;
                return false;
            }
        }
        // Sized by the first pass; grown (checked) only for a file that changed since.
        let problems = problems.into_iter().map(|message| Warning {
            key: key.map(str::to_owned),
            also: 0,
            entry: i,
            message,
        });
        extend_or_mark(&mut self.b.no_memory, &mut self.b.entries, [entry])
            && extend_or_mark(&mut self.b.no_memory, warnings, problems)
    }

    fn invalid(&mut self, reason: String) -> (Entry, Vec<String>) {
        let body = Body::Invalid(self.b.intern(&reason));
        (Entry { body, redirect: None }, vec![reason])
    }

    /// Compiles one entry. Problems that make it unusable make it `Invalid`; the others (a
    /// missing redirectPath) are only reported, since they matter only if the entry wins.
    fn entry(&mut self, v: &RawEntry) -> (Entry, Vec<String>) {
        let obj = match v {
            RawEntry::Object(obj) => obj,
            RawEntry::Other(v) => return self.invalid(format!("entry is not a JSON object: {v}")),
        };
        let redirect = match redirect_path(obj) {
            Ok(r) => r,
            Err(reason) => return self.invalid(reason),
        };
        let body = match self.body(obj) {
            Ok(b) => b,
            Err(reason) => return self.invalid(reason),
        };
        let mut problems = Vec::new();
        if redirect.is_none() {
            problems.push("no redirectPath".to_owned());
        }
        let redirect = redirect.map(|p| self.b.intern(p));
        (Entry { body, redirect }, problems)
    }

    fn body(&mut self, obj: &Fields) -> Result<Body, String> {
        match &obj.any {
            Got::Null | Got::Bool(false) => {}
            // Like njs: `any` wins before any other field is looked at.
            Got::Bool(true) => return Ok(Body::Any),
            other => return Err(format!("\"any\" must be a boolean, not {other}")),
        }
        let method = match &obj.method {
            Got::Null => None,
            Got::Str(m) if m.is_empty() => None,
            Got::Str(m) => Some(self.b.intern(m)),
            other => return Err(format!("\"method\" must be a string, not {other}")),
        };
        let path = match &obj.path {
            Got::Null => None,
            Got::Str(p) => Some(self.path(p)?),
            other => return Err(format!("\"path\" must be a string, not {other}")),
        };
        // Every condition is checked before any is stored: an invalid entry stores none.
        // Sized once (a collect of `Result`s grows by doubling: up to twice the room).
        let hs = strings(&obj.headers, "headers")?;
        let mut headers = Vec::with_capacity(hs.len());
        for s in hs {
            headers.push(self.header(s)?);
        }
        let ps = strings(&obj.params, "params")?;
        let mut params = Vec::with_capacity(ps.len());
        for s in ps {
            params.push(self.param(s)?);
        }
        if !try_room(&mut self.b.conds, headers.len() + params.len()) {
            self.b.no_memory = true;
            return Err("out of memory".to_owned());
        }
        let start = self.b.conds.len();
        self.b.conds.extend(headers);
        let headers = self.b.run(start, self.b.conds.len());
        self.b.conds.extend(params);
        let params = self.b.run(headers.end as usize, self.b.conds.len());
        Ok(Body::When { path, method, headers, params })
    }

    /// `Exact:/p`, `PathPrefix:/p` or `RegularExpression:pattern` (always typed: there was no
    /// untyped form, NGF never wrote this field).
    fn path(&mut self, s: &str) -> Result<PathCond, String> {
        let bad = |why: &str| format!("invalid path match \"{s}\": {why}");
        let (kind, value) = s.split_once(':').ok_or_else(|| {
            bad("expected Exact:/path, PathPrefix:/path or RegularExpression:pattern")
        })?;
        match kind {
            "Exact" | "PathPrefix" if !value.starts_with('/') => {
                Err(bad("the path must start with \"/\""))
            }
            "Exact" => Ok(PathCond::Exact(self.b.intern(value))),
            "PathPrefix" => Ok(PathCond::Prefix(self.b.intern(value.trim_end_matches('/')))),
            "RegularExpression" if value.is_empty() => Err(bad("empty pattern")),
            "RegularExpression" => Ok(PathCond::Regex(self.b.pattern(value).map_err(|e| {
                format!("invalid regular expression \"{value}\" in path match \"{s}\": {e}")
            })?)),
            other => Err(bad(&format!(
                "unknown match type \"{other}\" (expected Exact, PathPrefix or RegularExpression)"
            ))),
        }
    }

    fn header(&mut self, s: &str) -> Result<Cond, String> {
        let (name, test) = self.split(s, ':', "header")?;
        if let Some(bad) = name.bytes().find(|b| !is_token(*b)) {
            return Err(format!(
                "invalid header match \"{s}\": header name has the character {:?}",
                char::from(bad)
            ));
        }
        // Stored lower-case: header names compare case-insensitively.
        Ok(Cond { name: self.b.intern(&name.to_ascii_lowercase()), test })
    }

    fn param(&mut self, s: &str) -> Result<Cond, String> {
        let (name, test) = self.split(s, '=', "query parameter")?;
        Ok(Cond { name: self.b.intern(name), test })
    }

    /// Splits `name<sep>Type<sep>value` (typed) or `name<sep>value` (untyped).
    fn split<'s>(&mut self, s: &'s str, sep: char, what: &str) -> Result<(&'s str, Test), String> {
        let form = if self.typed {
            format!("name{sep}Exact{sep}value or name{sep}RegularExpression{sep}value")
        } else {
            format!("name{sep}value")
        };
        let bad = |why: &str| format!("invalid {what} match \"{s}\": {why}");
        let (name, rest) = s.split_once(sep).ok_or_else(|| bad(&format!("expected {form}")))?;
        let (kind, value) = if self.typed {
            let (t, v) = rest.split_once(sep).ok_or_else(|| bad(&format!("expected {form}")))?;
            if !is_match_type(t) {
                return Err(bad(&format!(
                    "unknown match type \"{t}\" (expected Exact or RegularExpression)"
                )));
            }
            (t, v)
        } else {
            ("Exact", rest)
        };
        if name.is_empty() {
            return Err(bad("empty name"));
        }
        if value.is_empty() {
            return Err(bad("empty value"));
        }
        let test = if kind == "Exact" {
            Test::Exact(self.b.intern(value))
        } else {
            Test::Regex(self.b.pattern(value).map_err(|e| {
                format!("invalid regular expression \"{value}\" in {what} match \"{s}\": {e}")
            })?)
        };
        Ok((name, test))
    }
}

fn redirect_path(obj: &Fields) -> Result<Option<&str>, String> {
    match &obj.redirect {
        Got::Null => Ok(None),
        Got::Str(p) if p.is_empty() => Ok(None),
        Got::Str(p) => {
            if !(p.starts_with('/') || (p.starts_with('@') && p.len() > 1)) {
                return Err(format!(
                    "redirectPath \"{p}\" must start with \"/\" (a URI) or \"@\" (a named location)"
                ));
            }
            if p.contains('?') {
                return Err(format!(
                    "redirectPath \"{p}\" has a \"?\": the request's own query string is kept"
                ));
            }
            Ok(Some(p.as_str()))
        }
        other => Err(format!("\"redirectPath\" must be a string, not {other}")),
    }
}

/// An optional array of strings; `null` counts as absent.
fn strings<'v>(got: &'v Got, field: &str) -> Result<&'v [String], String> {
    match got {
        Got::Null => Ok(&[]),
        Got::Strings(items) => Ok(items),
        Got::BadItem(v) => Err(format!("\"{field}\" has a non-string item {v}")),
        other => Err(format!("\"{field}\" must be an array of strings, not {other}")),
    }
}

/// RFC 9110 token characters: what a header name can be made of.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::compile_file;
    use proptest::prelude::*;

    #[test]
    fn a_hint_never_changes_which_list_a_key_gets() {
        let json =
            br#"{"a":[{"any":true,"redirectPath":"/a"}],"bb":[{"any":true,"redirectPath":"/b"}],
            "c":[{"any":true,"redirectPath":"/a"}],"dd":[{"any":true,"redirectPath":"/d"}]}"#;
        let file = compile_file(json, Syntax::Auto, Bounds::default()).unwrap();
        let hint = core::cell::Cell::new(0);
        for key in [&b"a"[..], b"bb", b"bb", b"zz", b"c", b"dd", b"a", b"", b"dd"] {
            for start in [None, Some(0), Some(1), Some(3), Some(4), Some(u32::MAX)] {
                if let Some(h) = start {
                    hint.set(h);
                }
                let got = file.get_hinted(key, &hint).map(|l| l.redirects().collect::<Vec<_>>());
                let want = file.get(key).map(|l| l.redirects().collect::<Vec<_>>());
                assert_eq!(got, want, "{key:?} {start:?}");
            }
        }
    }

    use crate::parse::is_typed_string;
    use serde_json::Value;

    /// The rule on a list's JSON tree (contract section 3): some string of an entry's
    /// `headers` (or `params`) array is typed.
    fn tree_is_typed(list: &Value) -> bool {
        list.as_array().into_iter().flatten().any(|entry| {
            let strings = |field: &str, sep: char| -> bool {
                entry
                    .get(field)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .any(|s| is_typed_string(s, sep))
            };
            strings("headers", ':') || strings("params", '=')
        })
    }

    fn field() -> impl Strategy<Value = String> {
        let strings = prop::sample::select(vec![
            "\"a:Exact:b\"",
            "\"a=RegularExpression=b\"",
            "\"a:b\"",
            "\"a=b=c\"",
            "\"x:Bogus:y\"",
            "7",
            "[\"a:Exact:b\"]",
            "{\"h\":\"a:Exact:b\"}",
        ]);
        (
            prop::sample::select(vec!["headers", "params", "method", "other"]),
            proptest::collection::vec(strings, 0..3),
            any::<bool>(),
        )
            .prop_map(|(name, items, array)| {
                if array {
                    format!("\"{name}\":[{}]", items.join(","))
                } else {
                    format!("\"{name}\":{}", items.first().copied().unwrap_or("null"))
                }
            })
    }

    proptest! {
        /// The streaming first pass decides typed/untyped exactly as the whole-tree rule does.
        #[test]
        fn streaming_detection_agrees_with_the_tree(
            lists in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(field(), 0..3), 1..3), 1..4),
        ) {
            let body: Vec<String> = lists.iter().enumerate().map(|(k, entries)| {
                let es: Vec<String> = entries.iter().map(|fs| format!("{{{}}}", fs.join(","))).collect();
                format!("\"k{k}\":[{}]", es.join(","))
            }).collect();
            let json = format!("{{{}}}", body.join(","));
            let tree: serde_json::Map<String, Value> = serde_json::from_str(&json).unwrap();
            let want = tree.values().any(tree_is_typed);
            let got = parse::file_is_typed(serde_json::Deserializer::from_slice(json.as_bytes()));
            prop_assert_eq!(got, want, "{}", json);
            // And a single list's walk, list by list.
            for list in tree.values() {
                let one = parse::list_survey(list.to_string().as_bytes()).typed;
                prop_assert_eq!(one, tree_is_typed(list), "{}", list);
            }
        }
    }
}
