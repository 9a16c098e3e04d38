//! Per-request evaluation: first satisfied entry wins.
//!
//! The common path (method and header conditions) allocates nothing. The query string is
//! decoded at most once per request, and only when an entry with a param condition is reached.

use core::cell::{Cell, RefCell};
use core::fmt;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::index::{Candidates, Held};
use crate::pattern::{Pattern, Verdict};
use crate::query::{Params, Raw, first_raw};
use crate::store::{Body, Cond, Entry, Index, PathCond, Run, Span, Store, Test, malloc_size};

/// What the evaluator needs to know about a request. All of it is raw bytes, as NGINX stored
/// them; nothing needs to be valid UTF-8.
pub trait RequestView {
    /// The method name, e.g. `GET` (compared byte for byte, case-sensitively).
    fn method(&self) -> &[u8];
    /// Every request header line as (name, value), in arrival order, repeated names included.
    fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])>;
    /// The raw query string (without `?`), still percent-encoded.
    fn query(&self) -> &[u8];
    /// The request path as NGINX matches locations against it (`$uri`: percent-decoded,
    /// dot segments resolved, merged slashes). Only entries with a `path` condition read it.
    fn path(&self) -> &[u8];
    /// Called (at most once per evaluation) when a regex gave up: the match limit or the JIT
    /// stack was exhausted, or the evaluation's regex budget was spent. The condition (and,
    /// once the budget is spent, every later regex condition) counts as not matched.
    fn regex_failed(&self, _entry: usize, _pattern: &str, _why: &str) {}
    /// The most PCRE2 match steps all regex attempts of one evaluation may be charged together
    /// (see `pattern`: each attempt is charged the step limits it ran with); `None`: no bound
    /// but the per-attempt step limit. A count of work, not time: the answer never depends on
    /// the machine's speed.
    fn regex_budget(&self) -> Option<u64> {
        Some(DEFAULT_REGEX_BUDGET)
    }
    /// Called once at the end of each evaluation of a list with regex conditions: the units
    /// it charged to [`RequestView::regex_budget`] (a caller with one budget for several
    /// evaluations of one request gives the next what is left).
    fn regex_charged(&self, _units: u64) {}
}

/// A [`RequestView`] that forwards every question to `view`: another type over the same
/// request, for a caller that wants an evaluation instantiated apart from `evaluate::<V>` (the
/// NGINX module's counted one), or one answer replaced (`budget`, a test's probe).
pub struct Forward<'a, V> {
    /// The request every question goes to.
    pub view: &'a V,
    /// Answers [`RequestView::regex_budget`] instead of `view` when set.
    pub budget: Option<fn(&V) -> Option<u64>>,
}

impl<'a, V: RequestView> Forward<'a, V> {
    /// Forwards everything.
    pub fn new(view: &'a V) -> Self {
        Forward { view, budget: None }
    }
}

impl<V: RequestView> RequestView for Forward<'_, V> {
    fn method(&self) -> &[u8] {
        self.view.method()
    }
    fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.view.headers()
    }
    fn query(&self) -> &[u8] {
        self.view.query()
    }
    fn path(&self) -> &[u8] {
        self.view.path()
    }
    fn regex_failed(&self, entry: usize, pattern: &str, why: &str) {
        self.view.regex_failed(entry, pattern, why);
    }
    fn regex_budget(&self) -> Option<u64> {
        match self.budget {
            Some(budget) => budget(self.view),
            None => self.view.regex_budget(),
        }
    }
    fn regex_charged(&self, units: u64) {
        self.view.regex_charged(units);
    }
}

/// The regex budget of an evaluation (in charged match steps) unless the [`RequestView`] says
/// otherwise: 15,625 attempts that finish within their first probe (64 steps), or three that
/// go all the way up the ladder.
pub const DEFAULT_REGEX_BUDGET: u64 = 1_000_000;

/// The result of evaluating a request against a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<'l> {
    /// Entry `entry` won: internal redirect to `path` (a URI, or `@name`).
    Redirect {
        /// 0-based index of the winning entry.
        entry: usize,
        /// Its redirectPath.
        path: &'l str,
    },
    /// No entry was satisfied.
    NoMatch,
    /// The data was unusable for this request.
    Error(EvalError<'l>),
}

/// Why a list could not answer a request (contract section 4: a 500 with a log line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError<'l> {
    /// A malformed entry was reached before any winner.
    InvalidEntry {
        /// 0-based index of the entry.
        entry: usize,
        /// What is wrong with it (the compile-time warning text).
        reason: &'l str,
    },
    /// The winning entry has no redirectPath.
    NoRedirectPath {
        /// 0-based index of the entry.
        entry: usize,
    },
}

impl fmt::Display for EvalError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::InvalidEntry { entry, reason } => {
                write!(f, "entry {entry} is invalid: {reason}")
            }
            EvalError::NoRedirectPath { entry } => {
                write!(f, "entry {entry} matched but has no redirectPath")
            }
        }
    }
}

/// A compiled match list: its entries in the compiled form of its source (shared by every
/// list of a `matches.json`).
#[derive(Debug)]
pub struct MatchList {
    store: Arc<Store>,
    entries: Run,
    /// For long lists: exact conditions indexed at compile time (`NO_INDEX`: none; not an
    /// `Option`, which would make the struct, one per distinct list, 8 bytes larger).
    index: u32,
    /// No entry has a regex condition (known when the list is made): an evaluation makes no
    /// regex state (budget, memo, failure report) and never asks the request for a budget.
    regex_free: bool,
    /// A list of includes (`index` is `COMPOSITE`, `entries` empty): the lists it names, in
    /// order, each sharing the store (see `include`).
    parts: Option<Box<Parts>>,
}

/// The lists a list of includes names (boxed twice: one pointer in [`MatchList`]).
#[derive(Debug)]
struct Parts(Box<[MatchList]>);

/// `MatchList::index` of a list without an index.
const NO_INDEX: u32 = u32::MAX;
/// `MatchList::index` of a list of includes: it is evaluated part by part.
const COMPOSITE: u32 = u32::MAX - 1;

// One per distinct list of a configuration: the regex-free flag fits in what was padding,
// the parts of a list of includes take a pointer.
const _: () = assert!(core::mem::size_of::<MatchList>() <= 32);

/// Per-evaluation state: the lazily decoded query and, for lists with a regex condition, the
/// regex state.
struct Ctx<'r, R: ?Sized, const C: bool> {
    req: &'r R,
    store: &'r Store,
    /// The query, decoded in place at the first param condition (`parsed`).
    params: RefCell<Params<'r>>,
    parsed: Cell<bool>,
    /// The raw query was scanned once for a lone param condition (`param_holds`): the next
    /// one decodes it, so the query is read at most twice whatever the candidates.
    scanned: Cell<bool>,
    /// `None` for a list without regex conditions: nothing asks for it there.
    rx: Option<&'r Regexes>,
    /// Work units charged so far (see [`Work`]): regex steps and every client-driven loop.
    used: Cell<u64>,
    /// Heap bytes of the index's per-request sets (literals taken, candidate hits).
    state: Cell<usize>,
}

/// The regex state of one evaluation: the budget, the answers already known, and the first
/// regex failure, to be reported when the evaluation ends.
struct Regexes {
    /// The first regex that gave up (entry, pattern, why), reported when the evaluation ends.
    failed: RefCell<Option<(usize, Box<str>, String)>>,
    /// The budget in work units (`u64::MAX`: none).
    limit: u64,
    /// An attempt found its next probe did not fit: every later condition is false.
    spent: Cell<bool>,
    /// Made at the first regex attempt: an evaluation without one writes nothing here.
    memo: RefCell<Option<Memo>>,
    /// Match attempts made (memo hits excluded).
    attempts: Cell<usize>,
    /// Match steps charged to those attempts.
    steps: Cell<u64>,
    /// Where the part being evaluated starts in a list of includes (0 for any other list):
    /// failures are reported by their entry's place in the expanded list.
    base: Cell<usize>,
}

impl Regexes {
    fn new(limit: Option<u64>) -> Regexes {
        Regexes {
            failed: RefCell::new(None),
            limit: limit.unwrap_or(u64::MAX),
            spent: Cell::new(false),
            memo: RefCell::new(None),
            attempts: Cell::new(0),
            steps: Cell::new(0),
            base: Cell::new(0),
        }
    }

    fn fail(&self, entry: usize, p: &Pattern, why: String) {
        let entry = entry + self.base.get();
        self.failed.borrow_mut().get_or_insert_with(|| (entry, p.as_str().into(), why));
    }

    /// Reports the first regex that gave up, once, saying whether the budget ran out and, if
    /// it did, what the evaluation did (`work`, asked only then).
    fn finish<R: RequestView + ?Sized, T>(
        &self,
        req: &R,
        outcome: T,
        work: impl FnOnce() -> Work,
    ) -> T {
        if let Some((entry, pattern, mut why)) = self.failed.take() {
            if self.spent.get() {
                let budget = self.limit;
                why += &format!(
                    "; then the regex budget of the request ({budget} steps) was spent (regex \
                     steps plus a unit per header line, comma element and lookup), so every \
                     later regex condition counted as not matched"
                );
                let w = work();
                why += &format!(
                    "; work of the request: {} attempts, {} regex steps, {} units",
                    w.attempts, w.regex_steps, w.units
                );
            }
            req.regex_failed(entry, &pattern, &why);
        }
        outcome
    }
}

impl<'r, R: RequestView + ?Sized, const C: bool> Ctx<'r, R, C> {
    fn new(req: &'r R, store: &'r Store, rx: Option<&'r Regexes>) -> Self {
        let params = RefCell::new(Params::new());
        Ctx {
            req,
            store,
            params,
            parsed: Cell::new(false),
            scanned: Cell::new(false),
            rx,
            used: Cell::new(0),
            state: Cell::new(0),
        }
    }

    /// Charges `units` of work to the evaluation.
    #[inline(always)]
    fn charge(&self, units: u64) {
        // `C`: counted. Not where nothing reads it: `evaluate` of a list without regex
        // conditions (it has no budget; only `evaluate_work` asks for its figures).
        if !C {
            return;
        }
        self.used.set(self.used.get().saturating_add(units));
    }

    /// Whether the budget is spent: every later regex condition counts as not matched. Exact
    /// conditions still answer (the routing of exact conditions never depends on the budget):
    /// their work is counted, and linear in the request by construction (each condition one
    /// pass over the lines, the index a lookup per line and element). A list without regex
    /// conditions has no budget for the same reason.
    #[inline(always)]
    fn over(&self) -> bool {
        match self.rx {
            None => false,
            Some(rx) => rx.spent.get() || self.used.get() > rx.limit,
        }
    }

    /// What the evaluation did (for tests and benchmarks).
    fn work(&self) -> Work {
        let (attempts, steps, memo) = match self.rx {
            None => (0, 0, 0),
            Some(rx) => (
                rx.attempts.get(),
                rx.steps.get(),
                rx.memo.borrow().as_ref().map_or(0, Memo::heap_bytes),
            ),
        };
        let params = self.params.borrow().heap_bytes();
        Work {
            attempts,
            regex_steps: steps,
            units: self.used.get(),
            state_bytes: memo + params + self.state.get(),
        }
    }

    /// One regex condition on one subject. Within an evaluation one (pattern, subject) is
    /// attempted once: the first few questions are remembered by the subject's address (every
    /// subject is borrowed from the request or the decoded query and stays where it is), the
    /// rest by its bytes, so the same value repeated on many lines or comma elements (HTTP/2's
    /// HPACK makes that cheap for a client) is matched once.
    fn regex(&self, p: &Pattern, subject: &[u8], entry: usize) -> bool {
        // Only lists without regex conditions are evaluated without regex state.
        let Some(rx) = self.rx else { return false };
        if !p.could_match_len(subject.len()) {
            return false;
        }
        // A condition looked at is work, answered from the memo or not.
        self.charge(1);
        if self.over() {
            // Every regex condition after the budget ran out counts as not matched.
            if !rx.spent.replace(true) {
                rx.fail(entry, p, "the budget was spent before its first step".to_owned());
            }
            return false;
        }
        let pattern = core::ptr::from_ref(p) as usize;
        let mut memo = rx.memo.borrow_mut();
        let memo = memo.get_or_insert_with(Memo::default);
        let slot = match memo.get(pattern, subject, self) {
            Lookup::Known(known) => return known,
            Lookup::Unknown(slot) => slot,
        };
        let remaining = rx.limit.saturating_sub(self.used.get());
        let (verdict, charged) = p.attempt(subject, remaining);
        self.charge(charged);
        rx.steps.set(rx.steps.get() + charged);
        rx.attempts.set(rx.attempts.get() + 1);
        let matched = match verdict {
            Verdict::Matched(m) => m,
            Verdict::GaveUp(why) => {
                rx.fail(entry, p, why.to_string());
                false
            }
            Verdict::BudgetSpent => {
                rx.spent.set(true);
                rx.fail(entry, p, "its next step limit did not fit in the budget".to_owned());
                false
            }
        };
        // Once the budget is spent no attempt is made again, so no answer is needed later.
        if !rx.spent.get() {
            memo.put(pattern, subject, slot, matched);
        }
        matched
    }

    fn pattern(&self, id: u32) -> Option<&'r Pattern> {
        self.store.patterns.get(id as usize)
    }

    /// Regex: the pattern is found in the whole line or in one OWS-trimmed comma element of
    /// it (see [`exact_line`] for exact values).
    #[inline(never)]
    fn regex_line(&self, p: &Pattern, line: &[u8], entry: usize) -> bool {
        // The regex call charges each subject it looks at, the split's scan is charged here.
        self.charge(line.len() as u64 / 64);
        if self.regex(p, line, entry) {
            return true;
        }
        if memchr::memchr(b',', line).is_none() {
            return false;
        }
        // A comma list seen before with this pattern (the same bytes on another line: HPACK
        // references) is answered whole, not element by element: asked as the pattern's
        // address with its low bit set, which no pattern has.
        let question = (core::ptr::from_ref(p) as usize) | 1;
        let slot = match self.rx {
            Some(rx) => {
                let mut memo = rx.memo.borrow_mut();
                match memo.as_mut() {
                    Some(m) if m.by_content() => match m.get(question, line, self) {
                        Lookup::Known(known) => return known,
                        Lookup::Unknown(slot) => Some(slot),
                    },
                    _ => None,
                }
            }
            None => None,
        };
        let found = line
            .split(|&b| b == b',')
            .map(trim_ows)
            .any(|el| !el.is_empty() && el.len() < line.len() && self.regex(p, el, entry));
        if let (Some(slot), Some(rx)) = (slot, self.rx)
            && !rx.spent.get()
            && let Some(m) = rx.memo.borrow_mut().as_mut()
        {
            m.put(question, line, slot, found);
        }
        found
    }

    fn path_holds(&self, c: PathCond, entry: usize) -> bool {
        let path = self.req.path();
        match c {
            PathCond::Exact(p) => self.store.bytes(p) == path,
            PathCond::Prefix(p) => {
                let p = self.store.bytes(p);
                path.starts_with(p) && (path.len() == p.len() || path[p.len()] == b'/')
            }
            PathCond::Regex(p) => self.pattern(p).is_some_and(|p| self.regex(p, path, entry)),
        }
    }

    /// Some line of header `c.name` holds the condition. Exact values (the common case) are
    /// compared inline; a regex condition goes to [`Ctx::header_regex`].
    #[inline(always)]
    fn header_holds(&self, c: &Cond, entry: usize) -> bool {
        let want = self.store.bytes(c.name);
        let v = match c.test {
            Test::Exact(v) => v,
            Test::Regex(p) => return self.header_regex(p, want, entry),
        };
        let v = self.store.bytes(v);
        let mut lines = 0u64;
        for (name, value) in self.req.headers() {
            lines += 1;
            if name.len() == want.len()
                && same_name(name, want)
                && !value.is_empty()
                && exact_line(v, value, self)
            {
                self.charge(lines);
                return true;
            }
        }
        self.charge(lines);
        false
    }

    #[inline(never)]
    fn header_regex(&self, p: u32, want: &[u8], entry: usize) -> bool {
        let Some(p) = self.pattern(p) else { return false };
        if self.over() {
            return false;
        }
        // Lines visited are charged in one sum, before each subject goes to the regex (which
        // sees the budget) and at the end.
        let mut lines = 0u64;
        for (name, value) in self.req.headers() {
            lines += 1;
            if name.len() == want.len() && same_name(name, want) && !value.is_empty() {
                self.charge(core::mem::take(&mut lines));
                if self.regex_line(p, value, entry) {
                    return true;
                }
            }
        }
        self.charge(lines);
        false
    }

    /// The decoded query (decoded now at the first call).
    fn params(&self) -> core::cell::Ref<'_, Params<'r>> {
        if !self.parsed.get() {
            // No `Ref` exists before the first decode: the only mutable borrow.
            let mut p = self.params.borrow_mut();
            p.fill(self.req.query());
            self.parsed.set(true);
            if C {
                // The decode: one unit per parameter and per 64 bytes.
                self.charge(p.len() as u64 + self.req.query().len() as u64 / 64);
            }
        }
        self.params.borrow()
    }

    /// `lone`: the entry's only param condition. The first such condition of an evaluation,
    /// before the query is decoded, reads its value off the raw query ([`first_raw`]): a
    /// request with one param needs no decode. Any other condition decodes the query once.
    fn param_holds(&self, c: &Cond, entry: usize, lone: bool) -> bool {
        // One lookup (a binary search or a short scan of the decoded names).
        self.charge(1);
        let name = self.store.bytes(c.name);
        if lone && !self.parsed.get() && !self.scanned.replace(true) {
            let (found, segments) = first_raw(self.req.query(), name);
            // The scan: one unit per segment visited, as the decode charges.
            self.charge(segments);
            match found {
                Raw::Found(v) => return self.param_test(c, v, entry),
                Raw::Absent => return false,
                Raw::Escaped => {}
            }
        }
        match self.params().first(name) {
            None => false,
            Some(v) => self.param_test(c, v, entry),
        }
    }

    /// Whether `v`, the value of `c`'s param, holds `c` (empty counts as absent).
    #[inline(always)]
    fn param_test(&self, c: &Cond, v: &[u8], entry: usize) -> bool {
        !v.is_empty()
            && match c.test {
                Test::Exact(want) => crate::bytes::eq(self.store.bytes(want), v),
                Test::Regex(p) => self.pattern(p).is_some_and(|p| self.regex(p, v, entry)),
            }
    }
}

/// What one evaluation did, counted (never timed): the same request and list give the same
/// figures on any machine. For tests and benchmarks ([`MatchList::evaluate_work`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// Regex match attempts made (answers reused within the evaluation are not attempts).
    pub attempts: usize,
    /// Match steps charged to those attempts (the step limits of the probes they ran).
    pub regex_steps: u64,
    /// Every unit charged to the budget: the regex steps, plus one per header line visited,
    /// comma element compared, condition looked at, index or literal lookup, literal hit,
    /// query parameter decoded, and per 64 bytes scanned or hashed.
    pub units: u64,
    /// Heap bytes of per-request state (the decoded query, literal and candidate sets, the
    /// regex answers): sized by the request and the list, never by the store.
    pub state_bytes: usize,
}

/// What [`Memo::get`] found.
enum Lookup {
    Known(bool),
    /// Not known; the subject's slot when it is remembered by its bytes (`u32::MAX`: by
    /// address, or not at all).
    Unknown(u32),
}

/// Answers of regex attempts in one evaluation. The first few by (pattern, subject address,
/// length), inline (most requests ask few questions); the rest by (pattern, subject bytes):
/// each distinct subject is copied once into `text`, found by its address or by a hash of its
/// bytes (a hash collision, which a client can aim for, only makes a miss that is attempted
/// and charged as usual: never a wrong answer).
#[derive(Default)]
struct Memo {
    inline: [(usize, usize, usize, bool); MEMO_INLINE],
    len: usize,
    /// Made when the inline answers are full: most evaluations never make it.
    more: Option<Box<ByContent>>,
}

/// The answers of a [`Memo`] past its inline ones, by subject bytes.
#[derive(Default)]
struct ByContent {
    by_addr: FxHashMap<(usize, usize), u32>,
    by_hash: FxHashMap<u64, u32>,
    /// Each remembered subject: its range in `text`.
    subjects: Vec<(u32, u32)>,
    text: Vec<u8>,
    answers: FxHashMap<(usize, u32), bool>,
}

const MEMO_INLINE: usize = 8;
const NO_SLOT: u32 = u32::MAX;
/// The most answers, subject addresses and subjects the memo keeps, and the most subject
/// bytes it copies: the per-request state stays small whatever the budget lets a request
/// attempt. Past them a question is attempted (and charged) again: the budget still bounds
/// the work, and the repeats that matter (one value on many lines or elements) are found in
/// the first ones.
const MEMO_MAX: usize = 1024;
const MEMO_TEXT_MAX: usize = 64 * 1024;

impl Memo {
    #[inline(always)]
    fn get<R: RequestView + ?Sized, const C: bool>(
        &mut self,
        pattern: usize,
        subject: &[u8],
        cx: &Ctx<'_, R, C>,
    ) -> Lookup {
        let addr = (subject.as_ptr() as usize, subject.len());
        let found =
            self.inline[..self.len].iter().find(|e| (e.0, e.1, e.2) == (pattern, addr.0, addr.1));
        if let Some(e) = found {
            return Lookup::Known(e.3);
        }
        if self.len < MEMO_INLINE {
            return Lookup::Unknown(NO_SLOT);
        }
        self.more.get_or_insert_with(Box::default).get(pattern, subject, addr, cx)
    }

    /// Whether the inline answers are full (answers are then kept by subject bytes).
    fn by_content(&self) -> bool {
        self.len >= MEMO_INLINE
    }

    fn put(&mut self, pattern: usize, subject: &[u8], slot: u32, answer: bool) {
        if self.len < MEMO_INLINE {
            self.inline[self.len] = (pattern, subject.as_ptr() as usize, subject.len(), answer);
            self.len += 1;
        } else if let Some(more) = self.more.as_mut()
            && slot != NO_SLOT
            && more.answers.len() < MEMO_MAX
        {
            more.answers.insert((pattern, slot), answer);
        }
    }

    fn heap_bytes(&self) -> usize {
        self.more.as_ref().map_or(0, |m| m.heap_bytes() + core::mem::size_of::<ByContent>())
    }
}

impl ByContent {
    fn get<R: RequestView + ?Sized, const C: bool>(
        &mut self,
        pattern: usize,
        subject: &[u8],
        addr: (usize, usize),
        cx: &Ctx<'_, R, C>,
    ) -> Lookup {
        let slot = match self.by_addr.get(&addr) {
            Some(&slot) => slot,
            None => {
                // Hashed (and maybe copied) once per subject address.
                cx.charge(1 + subject.len() as u64 / 64);
                let slot = self.subject_slot(subject);
                if self.by_addr.len() < MEMO_MAX {
                    self.by_addr.insert(addr, slot);
                }
                slot
            }
        };
        if slot == NO_SLOT {
            return Lookup::Unknown(NO_SLOT);
        }
        match self.answers.get(&(pattern, slot)) {
            Some(&known) => Lookup::Known(known),
            None => Lookup::Unknown(slot),
        }
    }

    /// The slot of `subject`'s bytes, made if new; `NO_SLOT` when its hash is another
    /// subject's.
    fn subject_slot(&mut self, subject: &[u8]) -> u32 {
        let mut h = rustc_hash::FxHasher::default();
        core::hash::Hasher::write(&mut h, subject);
        let hash = core::hash::Hasher::finish(&h);
        if let Some(&slot) = self.by_hash.get(&hash) {
            let same = self
                .subjects
                .get(slot as usize)
                .and_then(|&(at, len)| self.text.get(at as usize..at as usize + len as usize))
                .is_some_and(|t| t == subject);
            return if same { slot } else { NO_SLOT };
        }
        let (Ok(at), Ok(len), Ok(slot)) = (
            u32::try_from(self.text.len()),
            u32::try_from(subject.len()),
            u32::try_from(self.subjects.len()),
        ) else {
            return NO_SLOT;
        };
        if self.subjects.len() >= MEMO_MAX || self.text.len() + subject.len() > MEMO_TEXT_MAX {
            return NO_SLOT;
        }
        self.text.extend_from_slice(subject);
        self.subjects.push((at, len));
        self.by_hash.insert(hash, slot);
        slot
    }

    fn heap_bytes(&self) -> usize {
        self.by_addr.capacity() * 24
            + self.by_hash.capacity() * 16
            + self.subjects.capacity() * 8
            + self.text.capacity()
            + self.answers.capacity() * 24
    }
}

/// The literals already taken in one evaluation: the first few in a list on the stack (a
/// request's values usually hold a few literals), then a hash set. Its size follows the
/// distinct literals this request hit in this list, never the store's literal count (a
/// bitset over the store's literals made every request of a 10,000-list file zero tens of KB).
struct Taken {
    few: [u64; TAKEN_FEW],
    len: usize,
    more: rustc_hash::FxHashSet<u64>,
}

const TAKEN_FEW: usize = 16;

impl Taken {
    fn new() -> Taken {
        Taken { few: [0; TAKEN_FEW], len: 0, more: rustc_hash::FxHashSet::default() }
    }

    /// Adds `i`; whether it was not there before.
    fn insert(&mut self, i: u64) -> bool {
        if self.more.is_empty() {
            let few = self.few.get(..self.len).unwrap_or_default();
            if few.contains(&i) {
                return false;
            }
            if let Some(slot) = self.few.get_mut(self.len) {
                *slot = i;
                self.len += 1;
                return true;
            }
            self.more.extend(self.few.iter().copied());
        }
        self.more.insert(i)
    }

    /// Heap bytes it holds (for the per-request state counter).
    fn heap_bytes(&self) -> usize {
        self.more.capacity() * (core::mem::size_of::<u64>() + 1)
    }
}

/// Whether header name `name` is `want` (lower case; most clients send it so, HTTP/2 and /3
/// always), both of one length.
#[inline(always)]
fn same_name(name: &[u8], want: &[u8]) -> bool {
    crate::bytes::eq(name, want) || caseless_eq(name, want)
}

#[inline(never)]
fn caseless_eq(name: &[u8], want: &[u8]) -> bool {
    name.eq_ignore_ascii_case(want)
}

/// Exact header value `v`: equals the whole line or one OWS-trimmed comma element of it.
#[inline(always)]
fn exact_line<R: RequestView + ?Sized, const C: bool>(
    v: &[u8],
    line: &[u8],
    cx: &Ctx<'_, R, C>,
) -> bool {
    line.len() >= v.len() && (crate::bytes::eq(v, line) || exact_element(v, line, cx))
}

/// Whether `v` is one OWS-trimmed comma element of `line` (off the common path: a line that
/// is not the value itself). Charged a unit per 64 bytes scanned and per element compared.
#[inline(never)]
fn exact_element<R: RequestView + ?Sized, const C: bool>(
    v: &[u8],
    line: &[u8],
    cx: &Ctx<'_, R, C>,
) -> bool {
    cx.charge(line.len() as u64 / 64);
    memchr::memchr(b',', line).is_some()
        && line.split(|&b| b == b',').any(|el| {
            cx.charge(1);
            trim_ows(el) == v
        })
}

/// The entries the regex groups let through in one evaluation: on the stack up to 32 (a
/// request's values usually hold the literals of a few), else allocated.
struct Hits {
    inline: [u32; 32],
    len: usize,
    more: Vec<u32>,
}

impl Hits {
    fn new() -> Hits {
        Hits { inline: [0; 32], len: 0, more: Vec::new() }
    }

    fn extend(&mut self, list: &[u32]) {
        if self.more.is_empty() {
            if let Some(room) = self.inline.get_mut(self.len..self.len + list.len()) {
                room.copy_from_slice(list);
                self.len += list.len();
                return;
            }
            self.more.extend_from_slice(self.inline.get(..self.len).unwrap_or_default());
        }
        self.more.extend_from_slice(list);
    }

    /// All of them, ascending, each once.
    fn sorted(&mut self) -> &[u32] {
        if !self.more.is_empty() {
            self.more.sort_unstable();
            self.more.dedup();
            return &self.more;
        }
        let v = self.inline.get_mut(..self.len).unwrap_or_default();
        v.sort_unstable();
        let mut n = 0;
        for i in 0..v.len() {
            if n == 0 || v[i] != v[n - 1] {
                v[n] = v[i];
                n += 1;
            }
        }
        &v[..n]
    }
}

/// The value table of header `name`'s index group: looked up by the name lower-cased when
/// the index has a table of names (many groups), else compared with each group's name.
#[inline(always)]
fn header_table<R: RequestView + ?Sized, const C: bool>(
    store: &Store,
    index: &Index,
    headers: &[(Span, crate::store::Table)],
    name: &[u8],
    cx: &Ctx<'_, R, C>,
) -> Option<(Span, crate::store::Table)> {
    if index.header_names.is_empty() {
        // Fewer than `NAME_TABLE_FROM` names: a unit per name compared. The groups' names are
        // lower case, as most clients send them: a word compare first (issue #46: the byte
        // loop of a caseless compare cost ~130 instructions a request on the long lists).
        cx.charge(headers.len() as u64);
        return headers
            .iter()
            .find(|(n, _)| {
                let n = store.bytes(*n);
                n.len() == name.len() && same_name(name, n)
            })
            .copied();
    }
    cx.charge(1);
    let mut lower = [0u8; crate::index::NAME_TABLE_MAX];
    let lower = lower.get_mut(..name.len())?;
    for (l, b) in lower.iter_mut().zip(name) {
        *l = b.to_ascii_lowercase();
    }
    let item = store.lookup(index.header_names, lower)?;
    store.groups.get(item.value.start as usize).copied()
}

/// Whether a value holds a comma: short values (most) a word at a time, long ones with
/// memchr (whose set-up costs more than a short value's bytes).
#[inline(always)]
fn has_comma(value: &[u8]) -> bool {
    // A few bytes (most values of an index's names): a loop of its own, no call.
    if value.len() <= 8 {
        return value.contains(&b',');
    }
    has_comma_words(value)
}

/// [`has_comma`] of a value of more than 8 bytes.
#[inline(never)]
fn has_comma_words(value: &[u8]) -> bool {
    if value.len() >= 64 {
        return memchr::memchr(b',', value).is_some();
    }
    const COMMAS: u64 = u64::from_ne_bytes([b','; 8]);
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = value.chunks_exact(8);
    for w in &mut words {
        // A zero byte of `w ^ COMMAS` is a comma (the classic exact zero-byte test).
        let w = u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])) ^ COMMAS;
        if w.wrapping_sub(LOW) & !w & HIGH != 0 {
            return true;
        }
    }
    words.remainder().contains(&b',')
}

fn trim_ows(s: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = s.iter().position(|b| !is_ows(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !is_ows(b)).map_or(start, |i| i + 1);
    &s[start..end]
}

impl MatchList {
    pub(crate) fn new(store: Arc<Store>, entries: Run, index: Option<u32>) -> MatchList {
        let regex_free = {
            let conds = |r: Run| store.conds.get(r.range()).unwrap_or_default();
            let exact = |c: &Cond| matches!(c.test, Test::Exact(_));
            let list = store.entries.get(entries.range()).unwrap_or_default();
            list.iter().all(|e| match e.body {
                Body::Any | Body::Invalid(_) => true,
                Body::When { path, headers, params, .. } => {
                    !matches!(path, Some(PathCond::Regex(_)))
                        && conds(headers).iter().all(exact)
                        && conds(params).iter().all(exact)
                }
            })
        };
        MatchList { store, entries, index: index.unwrap_or(NO_INDEX), regex_free, parts: None }
    }

    /// A list of includes: `parts` (lists of entries of `store`) one after the other.
    pub(crate) fn composite(store: Arc<Store>, parts: Vec<MatchList>) -> MatchList {
        let regex_free = parts.iter().all(|p| p.regex_free);
        let entries = Run::default();
        let parts = Some(Box::new(Parts(parts.into_boxed_slice())));
        MatchList { store, entries, index: COMPOSITE, regex_free, parts }
    }

    /// The same list of entries, once more (a part of a list of includes): the store and the
    /// entries are shared, not copied.
    pub(crate) fn share(&self) -> MatchList {
        MatchList {
            store: Arc::clone(&self.store),
            entries: self.entries,
            index: self.index,
            regex_free: self.regex_free,
            parts: None,
        }
    }

    /// The lists of entries this list is made of, each with where it starts in the expanded
    /// list: itself at 0, or the parts of a list of includes.
    fn segments(&self) -> impl Iterator<Item = (usize, &MatchList)> {
        let parts = self.parts.as_deref().map_or(core::slice::from_ref(self), |p| &p.0[..]);
        parts.iter().scan(0, |base, part| {
            let at = *base;
            *base += part.entries.len();
            Some((at, part))
        })
    }

    /// Whether this is a list of includes.
    #[doc(hidden)]
    pub fn is_composite(&self) -> bool {
        self.parts.is_some()
    }

    /// The parts of a list of includes, first match wins; `linear`: without the parts'
    /// indexes (see [`MatchList::evaluate_linear`]). One context (budget, memo, decoded
    /// query) for all of them; outcomes name entries by their place in the expanded list.
    #[inline(never)]
    fn first_of_parts<R: RequestView + ?Sized, const C: bool>(
        &self,
        cx: &Ctx<'_, R, C>,
        linear: bool,
    ) -> Outcome<'_> {
        for (base, part) in self.segments() {
            if let Some(rx) = cx.rx {
                rx.base.set(base);
            }
            let outcome = if linear { part.first_of_all(cx) } else { part.first_of_list(cx) };
            let at = |entry: usize| entry + base;
            match outcome {
                Outcome::NoMatch => continue,
                Outcome::Redirect { entry, path } => {
                    return Outcome::Redirect { entry: at(entry), path };
                }
                Outcome::Error(EvalError::InvalidEntry { entry, reason }) => {
                    return Outcome::Error(EvalError::InvalidEntry { entry: at(entry), reason });
                }
                Outcome::Error(EvalError::NoRedirectPath { entry }) => {
                    return Outcome::Error(EvalError::NoRedirectPath { entry: at(entry) });
                }
            }
        }
        Outcome::NoMatch
    }

    /// Whether the list has no regex condition (its evaluations make no regex state).
    #[doc(hidden)]
    pub fn is_regex_free(&self) -> bool {
        self.regex_free
    }

    fn entries(&self) -> &[Entry] {
        self.store.entries.get(self.entries.range()).unwrap_or_default()
    }

    /// Number of entries (of the expanded list, for a list of includes).
    pub fn len(&self) -> usize {
        self.segments().map(|(_, part)| part.entries.len()).sum()
    }

    /// Whether the list has no entries (never true for a parsed list).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The redirect paths of the entries, with their 0-based index (entries without one are
    /// left out). For load-time checks such as "does this named location exist".
    pub fn redirects(&self) -> impl Iterator<Item = (usize, &str)> {
        self.segments().flat_map(|(base, part)| {
            part.entries()
                .iter()
                .enumerate()
                .filter_map(move |(i, e)| Some((base + i, part.store.str(e.redirect?))))
        })
    }

    /// About how many bytes of heap the compiled list holds: the arrays of its compiled source
    /// (entries, conditions, strings, index) and PCRE2's compiled patterns, each allocation
    /// with malloc's header and rounding (`tests/memory_estimate.rs` holds it to what is
    /// really freed). The lists of one `matches.json` share one compiled source: each counts
    /// all of it.
    pub fn memory(&self) -> usize {
        malloc_size(core::mem::size_of::<MatchList>())
            + self.own_memory()
            + malloc_size(16 + core::mem::size_of::<Store>())
            + self.store.memory()
    }

    /// What this list holds of its own beyond its struct: the parts of a list of includes.
    pub(crate) fn own_memory(&self) -> usize {
        self.parts.as_ref().map_or(0, |p| {
            malloc_size(core::mem::size_of::<Parts>()) + malloc_size(core::mem::size_of_val(&*p.0))
        })
    }

    /// Evaluates `req`: the first satisfied entry wins; entries after it are never looked at.
    /// A malformed entry reached before a winner is an error.
    pub fn evaluate<R: RequestView + ?Sized>(&self, req: &R) -> Outcome<'_> {
        if self.regex_free {
            return self.evaluate_regex_free(req);
        }
        self.evaluate_with_regexes::<R, false>(req).0
    }

    /// [`MatchList::evaluate`] without the index: every entry in order. For tests that check
    /// the index changes no outcome.
    #[doc(hidden)]
    pub fn evaluate_linear<R: RequestView + ?Sized>(&self, req: &R) -> Outcome<'_> {
        // Always with regex state, also for a regex-free list: the reference for both.
        let rx = Regexes::new(req.regex_budget());
        let cx = Ctx::<_, true>::new(req, &self.store, Some(&rx));
        // The reference decodes the query for every param condition: no raw scan.
        cx.scanned.set(true);
        let outcome = match self.parts {
            Some(_) => self.first_of_parts(&cx, true),
            None => self.first_of_all(&cx),
        };
        req.regex_charged(cx.used.get());
        rx.finish(req, outcome, || cx.work())
    }

    /// [`MatchList::evaluate`], also telling how many regex match attempts it made (answers
    /// reused within the evaluation are not attempts). For tests and benchmarks.
    #[doc(hidden)]
    pub fn evaluate_counting<R: RequestView + ?Sized>(&self, req: &R) -> (Outcome<'_>, usize) {
        let (outcome, work) = self.evaluate_work(req);
        (outcome, work.attempts)
    }

    /// [`MatchList::evaluate`], also telling the work it did ([`Work`]): the deterministic
    /// counter the budget is charged with. For tests and benchmarks.
    #[doc(hidden)]
    pub fn evaluate_work<R: RequestView + ?Sized>(&self, req: &R) -> (Outcome<'_>, Work) {
        if self.regex_free {
            let cx = Ctx::<_, true>::new(req, &self.store, None);
            let outcome = self.first_of_list(&cx);
            return (outcome, cx.work());
        }
        self.evaluate_with_regexes::<R, true>(req)
    }

    /// A list without regex conditions: no regex state, no failure to report.
    #[inline(always)]
    fn evaluate_regex_free<R: RequestView + ?Sized>(&self, req: &R) -> Outcome<'_> {
        self.first_of_list(&Ctx::<_, false>::new(req, &self.store, None))
    }

    #[inline(never)]
    /// `FIGURES`: also what the evaluation did (else `Work::default()`, nothing computed).
    fn evaluate_with_regexes<R: RequestView + ?Sized, const FIGURES: bool>(
        &self,
        req: &R,
    ) -> (Outcome<'_>, Work) {
        let rx = Regexes::new(req.regex_budget());
        let cx = Ctx::<_, true>::new(req, &self.store, Some(&rx));
        let outcome = self.first_of_list(&cx);
        req.regex_charged(cx.used.get());
        let work = if FIGURES { cx.work() } else { Work::default() };
        (rx.finish(req, outcome, || cx.work()), work)
    }

    /// The winner among the index's candidates, or among all entries for a short list.
    #[inline(always)]
    fn first_of_list<R: RequestView + ?Sized, const C: bool>(
        &self,
        cx: &Ctx<'_, R, C>,
    ) -> Outcome<'_> {
        // Short lists (NGF's few rules per path): no index, none of its state made.
        if self.index == NO_INDEX {
            return self.first_of_all(cx);
        }
        if self.index == COMPOSITE {
            return self.first_of_parts(cx, false);
        }
        match self.store.indexes.get(self.index as usize) {
            None => self.first_of_all(cx),
            Some(index) => self.first_of_indexed(index, cx),
        }
    }

    /// The candidates the index gives, in order.
    #[inline(never)]
    fn first_of_indexed<R: RequestView + ?Sized, const C: bool>(
        &self,
        index: &Index,
        cx: &Ctx<'_, R, C>,
    ) -> Outcome<'_> {
        // Made only for a list with regex groups (`candidates`).
        let mut hits = None;
        let mut candidates = Candidates::new();
        self.candidates(index, cx, &mut hits, &mut candidates);
        let outcome = self.first_of(&mut candidates, cx);
        cx.state.set(cx.state.get() + candidates.heap_bytes());
        outcome
    }

    /// Whether the list is long enough to be indexed.
    #[doc(hidden)]
    pub fn is_indexed(&self) -> bool {
        self.segments().any(|(_, part)| part.index != NO_INDEX)
    }

    /// Evaluates the candidates in their order (ascending) until one decides; the condition
    /// the index found a candidate by is not tested again.
    #[inline(always)]
    fn first_of<R: RequestView + ?Sized, const C: bool>(
        &self,
        candidates: &mut Candidates<'_>,
        cx: &Ctx<'_, R, C>,
    ) -> Outcome<'_> {
        let entries = self.entries();
        while let Some(i) = candidates.next() {
            let Some(e) = entries.get(i) else { break };
            if self.decides(i, e, cx, candidates.held()) {
                return self.decision(i, e);
            }
        }
        Outcome::NoMatch
    }

    /// Evaluates every entry in order until one decides.
    #[inline(always)]
    fn first_of_all<R: RequestView + ?Sized, const C: bool>(
        &self,
        cx: &Ctx<'_, R, C>,
    ) -> Outcome<'_> {
        for (i, e) in self.entries().iter().enumerate() {
            if self.decides(i, e, cx, Held::Nothing) {
                return self.decision(i, e);
            }
        }
        Outcome::NoMatch
    }

    /// Whether entry `i` decides the evaluation: it is satisfied, or malformed. `held`: a
    /// condition the request is known to satisfy (from the index), not tested again.
    #[inline(always)]
    fn decides<R: RequestView + ?Sized, const C: bool>(
        &self,
        i: usize,
        e: &Entry,
        cx: &Ctx<'_, R, C>,
        held: Held,
    ) -> bool {
        let Body::When { path, method, headers, params } = e.body else { return true };
        if let Some(m) = method
            && !crate::bytes::eq(self.store.bytes(m), cx.req.method())
        {
            return false;
        }
        if let Some(p) = path
            && !cx.path_holds(p, i)
        {
            return false;
        }
        for h in self.conds(headers) {
            if !held.covers(h, true) && !cx.header_holds(h, i) {
                return false;
            }
        }
        let lone = params.len() == 1;
        for p in self.conds(params) {
            if !held.covers(p, false) && !cx.param_holds(p, i, lone) {
                return false;
            }
        }
        true
    }

    /// The outcome when entry `i` decides.
    #[inline(always)]
    fn decision(&self, i: usize, e: &Entry) -> Outcome<'_> {
        if let Body::Invalid(reason) = e.body {
            let reason = self.store.str(reason);
            return Outcome::Error(EvalError::InvalidEntry { entry: i, reason });
        }
        match e.redirect {
            Some(path) => Outcome::Redirect { entry: i, path: self.store.str(path) },
            None => Outcome::Error(EvalError::NoRedirectPath { entry: i }),
        }
    }

    /// The conditions of run `r` (most entries have no header or no param condition).
    #[inline(always)]
    fn conds(&self, r: Run) -> &[Cond] {
        if r.is_empty() { &[] } else { self.store.conds.get(r.range()).unwrap_or_default() }
    }

    /// The entries whose index key holds for this request, plus the unkeyed ones, into `c`
    /// (each posting gathered past the merge width charged one unit).
    fn candidates<'s, R: RequestView + ?Sized, const C: bool>(
        &'s self,
        index: &Index,
        cx: &'s Ctx<'_, R, C>,
        hits: &'s mut Option<Hits>,
        c: &mut Candidates<'s>,
    ) {
        // Regex-only entries whose needed literals the request's values contain.
        let groups = self.store.regex_groups.get(index.regex.range()).unwrap_or_default();
        let hits: &[u32] = if groups.is_empty() {
            &[]
        } else {
            let hits = hits.insert(Hits::new());
            self.regex_hits(groups, cx, hits);
            cx.state.set(cx.state.get() + hits.more.capacity() * 4);
            cx.charge(hits.more.len() as u64);
            hits.sorted()
        };
        let store = &*self.store;
        let mut push = |list, held| cx.charge(c.push(list, held) as u64);
        // The lookups below test what `header_holds` / `param_holds` test, so an entry found
        // by its key need not test it again. Not for an empty key (the parser refuses empty
        // exact values; an empty param value would never hold).
        let held = |key: Span, kind: fn(Span, Span) -> Held, name: Span| {
            if key.is_empty() { Held::Nothing } else { kind(name, key) }
        };
        push(store.postings(index.rest), Held::Nothing);
        let method = cx.req.method();
        let methods = store.items.get(index.methods.range()).unwrap_or_default();
        if let Some(item) = methods.iter().find(|m| store.bytes(m.key) == method) {
            push(store.postings(item.value), Held::Nothing);
        }
        let groups = |r: Run| store.groups.get(r.range()).unwrap_or_default();
        let headers = groups(index.headers);
        if !headers.is_empty() {
            let mut lines = 0u64;
            for (name, value) in cx.req.headers() {
                lines += 1;
                let Some((name, table)) = header_table(store, index, headers, name, cx) else {
                    continue;
                };
                if value.is_empty() {
                    continue;
                }
                // The value's lookup: one unit per 64 bytes hashed.
                cx.charge(1 + value.len() as u64 / 64);
                if let Some(item) = store.lookup(table, value) {
                    push(store.postings(item.value), held(item.key, Held::Header, name));
                }
                // `has_comma`: a short value without memchr's set-up (~50 instructions).
                if has_comma(value) {
                    cx.charge(value.len() as u64 / 64);
                    for el in value.split(|&b| b == b',').map(trim_ows) {
                        cx.charge(1);
                        if let Some(item) = store.lookup(table, el) {
                            push(store.postings(item.value), held(item.key, Held::Header, name));
                        }
                    }
                }
            }
            cx.charge(lines);
        }
        let params = groups(index.params);
        if !params.is_empty() {
            let query = cx.params();
            for (name, table) in params {
                cx.charge(1);
                let found = query.first(store.bytes(*name)).and_then(|v| store.lookup(*table, v));
                if let Some(item) = found {
                    push(store.postings(item.value), held(item.key, Held::Param, *name));
                }
            }
        }
        push(hits, Held::Nothing);
    }

    /// The entries of the regex groups whose literals occur in the request's values of each
    /// group's name (every line of a header, in one pass over the header lines; the first
    /// value of a param): anywhere in the value for a group's scan, at the start of a subject
    /// for its anchored patterns (the value, and each comma element of a header line:
    /// `line_holds` matches those too).
    fn regex_hits<R: RequestView + ?Sized, const C: bool>(
        &self,
        groups: &[crate::store::RegexGroup],
        cx: &Ctx<'_, R, C>,
        hits: &mut Hits,
    ) {
        let store = &*self.store;
        // Each literal's entries are taken once, however often it occurs: a value repeating a
        // literal that many entries share would otherwise push (occurrences x entries).
        // Literals are named by their place in the store: scanned ones by their postings,
        // anchored ones (with bit 32 set) by their item.
        let mut taken = Taken::new();
        let mut value = |g: &crate::store::RegexGroup, value: &[u8], header: bool| {
            group_hits(store, g, value, header, cx, &mut taken, hits);
        };
        if groups.iter().any(|g| g.header) {
            for (n, v) in cx.req.headers() {
                cx.charge(1);
                if v.is_empty() {
                    continue;
                }
                for g in groups.iter().filter(|g| g.header) {
                    let name = store.bytes(g.name);
                    // `name` is lower case, as most clients send it.
                    if n.len() == name.len()
                        && (crate::bytes::eq(n, name) || n.eq_ignore_ascii_case(name))
                    {
                        value(g, v, true);
                    }
                }
            }
        }
        for g in groups.iter().filter(|g| !g.header) {
            cx.charge(1);
            if let Some(v) = cx.params().first(store.bytes(g.name)) {
                value(g, v, false);
            }
        }
        cx.state.set(cx.state.get() + taken.heap_bytes());
    }
}

/// The entries of regex group `g` that `value` (a value of its name) lets through, each
/// literal's entries taken once (`taken`): its scan's literals anywhere in the value, its
/// anchored literals at the start of the value and (`header`) of each comma element.
#[inline]
fn group_hits<R: RequestView + ?Sized, const C: bool>(
    store: &Store,
    g: &crate::store::RegexGroup,
    value: &[u8],
    header: bool,
    cx: &Ctx<'_, R, C>,
    taken: &mut Taken,
    hits: &mut Hits,
) {
    if let Some(l) = g.scan
        && let Some(ac) = store.automata.get(l.automaton as usize)
    {
        cx.charge(1 + value.len() as u64 / 64);
        for m in ac.find_overlapping_iter(value) {
            // Each literal found is a unit (taken or not).
            cx.charge(1);
            let id = l.literals.start as usize + m.pattern().as_usize();
            if id < l.literals.end as usize
                && let Some(run) = store.literal_postings.get(id)
                && taken.insert(id as u64)
            {
                hits.extend(store.postings(*run));
            }
        }
    }
    if let Some(p) = g.anchored {
        prefix_hits(store, &p, value, cx, taken, hits);
        if header && has_comma(value) {
            cx.charge(value.len() as u64 / 64);
            for el in value.split(|&b| b == b',').map(trim_ows) {
                cx.charge(1);
                if !el.is_empty() && el.len() < value.len() {
                    prefix_hits(store, &p, el, cx, taken, hits);
                }
            }
        }
    }
}

/// The entries of the anchored literals `p` that `subject` begins with: its first bytes,
/// lower-cased, looked up once per literal length.
#[inline]
fn prefix_hits<R: RequestView + ?Sized, const C: bool>(
    store: &Store,
    p: &crate::store::Prefixes,
    subject: &[u8],
    cx: &Ctx<'_, R, C>,
    taken: &mut Taken,
    hits: &mut Hits,
) {
    let longest = 64 - p.lengths.leading_zeros() as usize;
    let mut lower = [0u8; 64];
    let n = subject.len().min(longest);
    for (l, b) in lower.iter_mut().zip(&subject[..n]) {
        *l = b.to_ascii_lowercase();
    }
    let head = &lower[..n];
    let fits = u64::MAX.checked_shl(head.len() as u32).map_or(u64::MAX, |m| !m);
    let mut lengths = p.lengths & fits;
    while lengths != 0 {
        cx.charge(1);
        let len = lengths.trailing_zeros() as usize + 1;
        lengths &= lengths - 1;
        let Some(key) = head.get(..len) else { break };
        let end = crate::store::end_key(len, key.last().copied().unwrap_or(0));
        if p.ends[end / 64] >> (end % 64) & 1 != 0
            && let Some(i) = store.lookup_index(p.table, key)
            && let Some(item) = store.items.get(i)
            && taken.insert(1 << 32 | i as u64)
        {
            hits.extend(store.postings(item.value));
        }
    }
}
