//! The module's memory: the module compiles every match list of the configuration (each key
//! of `matches.json`, or each inline list) and its regex conditions within
//! `http_matches_max_memory`, and refuses the whole configuration when one does not fit: a
//! list of L bytes of JSON must find `L x LIST_BYTES_PER_JSON_BYTE`, `LIST_BYTES_PER_ENTRY`
//! (and a key, its warning's) per element and `LIST_BYTES_PER_PARSE` left beside what the
//! lists compiled before it hold. So the plan budgets them in one walk of whole routes, newest
//! first refused, as the other budgets (`plan/budget.rs`):
//!
//! - a route's regex conditions: each pattern once per namespace (preloaded, or compiled per
//!   request with `--carrier variable`), at the most it may hold (`limits::regex_charge`),
//!   charged to the oldest admitted route of the namespace that has it, within
//!   `--regex-memory-per-tenant` and `--regex-memory-total` ("budget: regex memory";
//!   inline, each location compiles its own copies: `budget::inline_regex_memory`, before);
//! - the module's memory is the regex conditions' (`--regex-memory-total`), the lists'
//!   (at most [`LIST_RESIDENT_BYTES_PER_JSON_BYTE`] per byte of their JSON, and
//!   [`LIST_RESIDENT_BYTES_PER_LIST`] per compiled list), and the parse of the list being
//!   compiled ([`Limits::one_list`]: an eighth of it): the lists' total is what the other two
//!   leave, and each namespace's share of it at most `--list-memory-per-tenant`;
//! - a route is charged what it adds, admitted oldest first ([`Ages::attached`]): its
//!   entries' bytes (with a key each, preloaded; in every written location that holds them,
//!   inline), and what the locations its paths make hold (their lists of includes, or their
//!   whole inline lists); a block's entries are charged once, its pieces (cut by another
//!   block's candidates, in some locations) are its one run, and each piece that is not the
//!   whole block (its key, list, includes and a copy of its entries) is the newest's of the
//!   block's routes and the cutters'; so an older route's charge never grows with what newer
//!   routes add;
//! - one preloaded list (a run of entries under its key) must fit [`Limits::one_list`]; an
//!   inline list is one nginx.conf word (`plan/words.rs`: at most 4,094 bytes), whose parse
//!   fits by construction.
//!
//! A route past any of them is refused whole (`Accepted: False`, naming the budget: its regex
//! conditions and its lists are charged together or not at all, so a route refused takes no
//! room from a newer one). The walk is each run once and each location's runs once (the lists
//! written), never routes x locations.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rustc_hash::FxHashMap;

use crate::limits::regex_charge;
use route_match::{
    LIST_BYTES_PER_ENTRY, LIST_BYTES_PER_JSON_BYTE, LIST_BYTES_PER_PARSE,
    LIST_RESIDENT_BYTES_PER_INCLUDE as PER_INCLUDE, LIST_RESIDENT_BYTES_PER_JSON_BYTE as RESIDENT,
    LIST_RESIDENT_BYTES_PER_LIST as PER_LIST,
};

use super::budget::{Left, Share, makes, regexes};
use super::ids::{Ages, RouteId, RouteName, Unit};
use super::merge::{Merged, ServerAt};
use super::types::{Candidate, Loc, LocationPlan, PortPlan, Segment};

/// A `matches.json` key as written, with its punctuation (`"e` and 32 hex digits, `":`, `,`).
const KEY: usize = 40;
/// An include of a run in a location's list (`{"include":"e` and 32 hex digits `"},`).
const INCLUDE: usize = 48;
/// The shortest element of a list written: an entry of no condition, its `redirectPath` the
/// first slot's (`{"redirectPath":"/_httproute-internal/0"}`), with its comma. A list of `L`
/// bytes has at most `L / ELEMENT + 1` elements.
const ELEMENT: usize = 42;
/// What a compile keeps besides a list's estimate: the refusal's room (4,096 bytes), the next
/// key twice, the file's read buffer (at most 64 KiB).
const SLACK: usize = 4096 + 2 * KEY + 64 * 1024;

/// What the module compiles at load, by carrier: which of the walk's charges apply.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum Carrier {
    /// `matches.json`: its lists, and their patterns once per namespace.
    #[default]
    Preload,
    /// Each location's own list (`--carrier inline`): the lists; their patterns are
    /// `budget::inline_regex_memory`'s.
    Inline,
    /// `set $http_matches` (`--carrier variable`): lists compiled per request, not charged;
    /// their patterns once per namespace.
    Variable,
}

/// The list-memory budgets, from the module's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes one namespace's lists may hold (at most `total`).
    pub per_tenant: usize,
    /// Bytes all namespaces' lists may hold: the module's memory less the regex total, one
    /// list's parse and the file's own [`LIST_RESIDENT_BYTES_PER_LIST`].
    pub total: usize,
    /// Bytes one list's parse and compile may take ([`peak`]): an eighth of the module's memory.
    pub one_list: usize,
}

impl Limits {
    /// The budgets in `module_max_memory` beside `regex_total` (at most three quarters of it,
    /// `--regex-memory-total`'s check), `per_tenant` at most.
    pub fn of(module_max_memory: usize, regex_total: usize, per_tenant: usize) -> Limits {
        let one_list = module_max_memory / 8;
        let regex_total = regex_total.min(crate::limits::regex_memory_room(module_max_memory));
        let total = module_max_memory
            .saturating_sub(regex_total)
            .saturating_sub(one_list)
            .saturating_sub(PER_LIST);
        Limits { per_tenant: per_tenant.min(total), total, one_list }
    }
}

/// The most a preloaded list of `json` bytes takes while it is parsed and compiled
/// (`route_match`'s `list_estimate` under a key, its elements at most one per [`ELEMENT`]
/// bytes, and [`SLACK`]).
pub fn peak(json: usize) -> usize {
    let elements = (json / ELEMENT + 1).saturating_mul(LIST_BYTES_PER_ENTRY + KEY);
    (json.saturating_mul(LIST_BYTES_PER_JSON_BYTE).saturating_add(elements))
        .saturating_add(LIST_BYTES_PER_PARSE + SLACK)
}

/// A run of entries (a key of `matches.json`; inline, a part of each list holding it).
#[derive(Default)]
struct Run {
    /// JSON bytes of its admitted entries (each with its comma).
    bytes: usize,
    /// How many lists holding it are written.
    made: u32,
    /// Its lists: a range of `Model::run_lists`.
    lists: (u32, u32),
}

/// A location's list.
#[derive(Default)]
struct List {
    /// Its runs: a range of `Model::list_runs`.
    runs: (u32, u32),
    /// Written: `location /`, or one of the admitted routes' paths makes it.
    made: bool,
    /// Inline: its own bytes were charged.
    paid: bool,
    /// Runs it holds with admitted entries.
    live: u32,
    /// Its location: (server, index).
    place: (ServerAt, usize),
}

/// The model, built from the plan: flat arrays (a few words per entry, run and list).
#[derive(Default)]
struct Model<'a> {
    carrier: Carrier,
    ids: HashMap<&'a RouteId, u32>,
    /// [`Model::ids`] by the address of the name (a route's candidates share one): looked up
    /// by its text once per address.
    by_name: FxHashMap<*const RouteName, u32>,
    /// Each route's age (oldest place it comes with) and id.
    routes: Vec<((usize, usize), &'a RouteId)>,
    /// (route, run, JSON bytes) of each entry, sorted (none with `--carrier variable`).
    entries: Vec<(u32, u32, u32)>,
    /// (route, pattern) of each regex condition of its entries, sorted, once each (not
    /// inline: its copies are `budget::inline_regex_memory`'s).
    patterns: Vec<(u32, &'a str)>,
    /// (route, list) its paths make, sorted.
    makes: Vec<(u32, u32)>,
    /// (route, run, JSON bytes) of each piece of a block that is not the whole block (its own
    /// key, list, includes and a copy of its entries), charged to the newest of the block's
    /// routes and the routes that cut it ([`Model::location`]), sorted (none with
    /// `--carrier variable`).
    cuts: Vec<(u32, u32, u32)>,
    /// The cuts met, before every route's age is known: (the newest route of the block and
    /// of the runs cutting it, the block's run, the piece's JSON bytes, the block).
    cut_by: Vec<([Option<&'a RouteId>; 3], u32, u32, usize)>,
    /// (list, run) of each piece of a block after its first (the list's include of it).
    list_pieces: Vec<(u32, u32)>,
    runs: Vec<Run>,
    run_lists: Vec<u32>,
    lists: Vec<List>,
    list_runs: Vec<u32>,
}

/// A server's runs met so far: [`Segment::id`] -> run, and each block's run (the pieces of a
/// block are its one run: [`Model::location`]). Keyed by the blocks' addresses, which no
/// tenant chooses: a fast hasher.
#[derive(Default)]
struct RunIds {
    pieces: FxHashMap<(usize, usize, usize), u32>,
    blocks: FxHashMap<usize, u32>,
    /// The blocks met whole in some list.
    whole: rustc_hash::FxHashSet<usize>,
}

/// A list of `k` includes under its key: its JSON bytes and what it holds compiled (its key's
/// JSON at [`RESIDENT`], each include at [`PER_INCLUDE`], not [`RESIDENT`] per byte: a file
/// of many lists of includes peaks at ~4.2 per byte); none for one run (its own key).
fn includes(k: u32) -> (usize, usize) {
    match k {
        0 | 1 => (0, 0),
        k => (KEY + k as usize * INCLUDE, KEY * RESIDENT + k as usize * PER_INCLUDE),
    }
}

/// An entry's JSON bytes in a list, with its comma: counted as written, not kept.
fn json(c: &Candidate) -> u32 {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    let json = serde_json::to_writer(&mut n, &c.entry).map(|()| n.0);
    json.map_or(u32::MAX / 4, |j| u32::try_from(j).unwrap_or(u32::MAX / 4)).saturating_add(1)
}

/// The newest route of candidates `cs`' kept ones.
fn newest<'c>(
    cs: &'c [Candidate],
    kept: &impl Fn(&Candidate) -> Option<(usize, usize)>,
) -> Option<&'c RouteId> {
    cs.iter().filter_map(|c| Some((kept(c)?, &c.id.route))).max().map(|(_, id)| id)
}

/// The budgets the walk charges: the lists' ([`Limits`]), and the regex conditions' (per
/// tenant, total), each a [`Share`]; the patterns each namespace has compiled.
struct Shares<'a> {
    lists: Share<'a>,
    regex: Share<'a>,
    one_list: usize,
    have: BTreeMap<&'a str, BTreeSet<&'a str>>,
}

/// The routes whose regex conditions or lists do not fit, newest first refused (see the
/// module's doc); `regex`: `--regex-memory-per-tenant`, `--regex-memory-total`.
pub(super) fn memory(
    (ports, merged): (&[PortPlan], &Merged),
    ages: &Ages,
    left: &Left,
    (limits, (per_tenant, total)): (Limits, (usize, usize)),
    carrier: Carrier,
) -> Vec<(Unit, String)> {
    let mut m = Model::of((ports, merged), ages, left, carrier);
    let mut order: Vec<((usize, usize), u32)> =
        m.routes.iter().enumerate().map(|(i, &(age, _))| (age, i as u32)).collect();
    order.sort();
    let mut shares = Shares {
        lists: Share::new("list memory", limits.per_tenant, limits.total),
        regex: Share::new("regex memory", per_tenant, total),
        one_list: limits.one_list,
        have: BTreeMap::new(),
    };
    let mut out = Vec::new();
    for (_, r) in order {
        match m.take(r, &mut shares) {
            Ok(()) => m.commit(r),
            Err(why) => out.push((Unit::Route(m.routes[r as usize].1.clone()), why)),
        }
    }
    if carrier != Carrier::Variable {
        out.extend(m.unpaid());
    }
    out
}

impl<'a> Model<'a> {
    /// Route `r`'s regex conditions new to its namespace and what it adds to the lists,
    /// taken from `shares` if all fit, else (nothing taken) why not: the regex budget first,
    /// then one list's parse, then the lists' share.
    fn take(&self, r: u32, shares: &mut Shares<'a>) -> Result<(), String> {
        let id = self.routes[r as usize].1;
        let have = shares.have.entry(id.namespace.as_str()).or_default();
        let at = self.patterns.partition_point(|p| p.0 < r);
        let mine = self.patterns[at..].iter().take_while(|p| p.0 == r).map(|p| p.1);
        let new: Vec<&'a str> = mine.filter(|p| !have.contains(p)).collect();
        let regex = new.iter().fold(0usize, |a, p| a.saturating_add(regex_charge(p.len())));
        let what = format!("{} new regex conditions may take", new.len());
        shares.regex.fits(id, regex, &what)?;
        let (cost, longest) = match self.carrier {
            Carrier::Variable => (0, 0),
            _ => self.cost(r),
        };
        if self.carrier == Carrier::Preload && peak(longest) > shares.one_list {
            return Err(format!(
                "route {id} would make a match list of {longest} bytes of JSON, which may take \
                 {} bytes of the module's http_matches_max_memory to parse and compile, past \
                 the {} one list may take (budget: list memory)",
                peak(longest),
                shares.one_list
            ));
        }
        shares.lists.take(id, cost, "match lists may hold")?;
        shares.regex.take(id, regex, &what)?;
        have.extend(new);
        Ok(())
    }

    /// The model of the servers written (one of each group [`Merged`] writes once).
    fn of(
        (ports, merged): (&'a [PortPlan], &Merged),
        ages: &Ages,
        left: &Left,
        carrier: Carrier,
    ) -> Model<'a> {
        let mut m = Model { carrier, ..Model::default() };
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        let listened = Merged::listened(ports, &|l| left.listeners.contains(l));
        for (pi, p) in ports.iter().enumerate() {
            for (si, s) in p.servers.iter().enumerate() {
                // Written once for its members left (emit's own predicate), as old as the
                // oldest of their listeners.
                let members =
                    merged.written_for((ports, &listened), (pi, si), &|s| left.written(s));
                let listener = |&(p, i): &ServerAt| ports[p].servers[i].listener.as_ref();
                let gateway = members.iter().map(|m| listener(m).map_or(0, |l| ages.listener(l)));
                let Some(gateway) = gateway.min() else { continue };
                let (mut runs, off, cuts) = (RunIds::default(), left.at(s), m.cut_by.len());
                for (li, l) in left.locations_of((pi, si), s) {
                    m.location((l, ((pi, si), li)), (&mut runs, &mut pairs), |c| {
                        (!off.candidate(c)).then(|| ages.attached(&c.id.route, gateway))
                    });
                }
                // A block whole in no list of the server: its pieces are its one copy, whose
                // entries its run holds (charged once); a cut adds only its keys.
                for cut in &mut m.cut_by[cuts..] {
                    if !runs.whole.contains(&cut.3) {
                        cut.2 = 0;
                    }
                }
            }
        }
        m.entries.sort_unstable();
        m.patterns.sort_unstable();
        m.patterns.dedup();
        m.makes.sort_unstable();
        m.makes.dedup();
        m.cuts = std::mem::take(&mut m.cut_by).into_iter().filter_map(|c| m.cut(c)).collect();
        m.cuts.sort_unstable();
        pairs.sort_unstable();
        m.run_lists = pairs.iter().map(|&(_, l)| l).collect();
        let mut at = 0;
        for (r, run) in m.runs.iter_mut().enumerate() {
            let end = at + pairs[at..].partition_point(|&(pr, _)| pr as usize == r);
            run.lists = (at as u32, end as u32);
            at = end;
        }
        m
    }

    /// Location `l` of a server whose runs so far are `runs` (with the (run, list) `pairs`);
    /// `kept`: a candidate's age, if it is not refused. A block's entries are read once (in
    /// the location where it is first met: there it is whole, in one piece or more), and a
    /// location's makers among the runs of its own path (a run is one path: whether it makes
    /// the location is its first candidate's).
    fn location(
        &mut self,
        (l, place): (&'a LocationPlan, (ServerAt, usize)),
        (runs, pairs): (&mut RunIds, &mut Vec<(u32, u32)>),
        kept: impl Fn(&Candidate) -> Option<(usize, usize)>,
    ) {
        let at = self.lists.len() as u32;
        let root = l.loc == Loc::Prefix("/".into());
        let (start, born) = (self.list_runs.len() as u32, self.runs.len() as u32);
        // `--carrier variable` charges no list (`memory`): its entries' JSON and its pieces
        // are not counted.
        let lists = self.carrier != Carrier::Variable;
        for (i, seg) in l.segments.iter().enumerate() {
            let (id, next) = (seg.id(), self.runs.len() as u32);
            if seg.range.len() == seg.block.len() {
                runs.whole.insert(id.0);
            }
            let first = !runs.pieces.contains_key(&id);
            let run =
                *runs.pieces.entry(id).or_insert_with(|| *runs.blocks.entry(id.0).or_insert(next));
            if run == next {
                self.runs.push(Run::default());
            }
            // A block's pieces (`segments::runs`: candidates of another block come between)
            // are its one run in the list; each after the first an include of its own.
            if seg.range.start == 0 {
                pairs.push((run, at));
                self.runs[run as usize].made += u32::from(root);
                self.list_runs.push(run);
            } else {
                self.list_pieces.push((at, run));
            }
            if lists && first && seg.range.len() < seg.block.len() {
                self.cut_at(&l.segments, i, run, &kept);
            }
            let making = seg.candidates().first().is_some_and(|c| makes(&l.loc, c));
            let fresh = run >= born;
            for c in seg.candidates().iter().filter(|_| fresh || making) {
                let Some(age) = kept(c) else { continue };
                let r = self.route(&c.id.route, age);
                if making {
                    self.makes.push((r, at));
                }
                if fresh {
                    if lists {
                        self.entries.push((r, run, json(c)));
                    }
                    if self.carrier != Carrier::Inline {
                        self.patterns.extend(regexes(&c.entry).map(|p| (r, p)));
                    }
                }
            }
        }
        let end = self.list_runs.len() as u32;
        self.lists.push(List { runs: (start, end), made: root, place, ..List::default() });
    }

    /// Piece `i` of `segments`, first met, is not its whole block: its cutters are the runs
    /// beside it that come between the block's pieces (before it unless it starts the block,
    /// after it unless it ends it).
    fn cut_at(
        &mut self,
        segments: &'a [Segment],
        i: usize,
        run: u32,
        kept: &impl Fn(&Candidate) -> Option<(usize, usize)>,
    ) {
        let seg = &segments[i];
        let before = (seg.range.start > 0).then(|| i.checked_sub(1)).flatten();
        let after = (seg.range.end < seg.block.len()).then_some(i + 1);
        let cutter = |j: Option<usize>| newest(segments.get(j?)?.candidates(), kept);
        let who = [newest(&seg.block, kept), cutter(before), cutter(after)];
        let json = seg.candidates().iter().filter(|c| kept(c).is_some()).map(json).sum();
        self.cut_by.push((who, run, json, seg.id().0));
    }

    /// A cut met, charged to the newest of its routes (numbered by now: each is kept in a
    /// run of this server).
    fn cut(
        &self,
        (who, run, json, _): ([Option<&'a RouteId>; 3], u32, u32, usize),
    ) -> Option<(u32, u32, u32)> {
        let r = who.iter().flatten().filter_map(|id| self.ids.get(id).copied());
        let newest = r.max_by_key(|&r| (self.routes[r as usize].0, r))?;
        Some((newest, run, json))
    }

    /// Route `id`'s number, as old as `age` at the most.
    fn route(&mut self, id: &'a RouteId, age: (usize, usize)) -> u32 {
        let next = self.routes.len() as u32;
        let ids = &mut self.ids;
        let r = *self.by_name.entry(&**id).or_insert_with(|| *ids.entry(id).or_insert(next));
        if r == next {
            self.routes.push((age, id));
        }
        let a = &mut self.routes[r as usize].0;
        *a = (*a).min(age);
        r
    }

    /// The locations left with admitted entries but none of the routes whose paths make
    /// them, whose lists were charged to no one (inline: any; preloaded: a list of includes,
    /// two runs or more): not written, as the regex budget's (their paths' requests take the
    /// longest prefix location left, whose list is the same without them).
    fn unpaid(&self) -> Vec<(Unit, String)> {
        let least = if self.carrier == Carrier::Inline { 1 } else { 2 };
        let mut pieces = self.list_pieces.iter().peekable();
        let mut live = |at: usize, l: &List| {
            let mine = std::iter::from_fn(|| pieces.next_if(|p| p.0 as usize == at));
            l.live + mine.filter(|p| self.runs[p.1 as usize].bytes > 0).count() as u32
        };
        let lists = self.lists.iter().enumerate();
        let unpaid = lists.filter(|&(at, l)| live(at, l) >= least && !l.made).map(|(_, l)| l);
        let why = "every route whose path makes this location is refused, and its list would \
                   hold other routes' entries charged to no one (budget: list memory)";
        unpaid.map(|l| (Unit::Location(l.place.0, l.place.1), why.to_owned())).collect()
    }

    fn run_lists(&self, run: u32) -> &[u32] {
        let (a, b) = self.runs[run as usize].lists;
        &self.run_lists[a as usize..b as usize]
    }

    fn list_runs(&self, list: u32) -> &[u32] {
        let (a, b) = self.lists[list as usize].runs;
        &self.list_runs[a as usize..b as usize]
    }

    /// Route `r`'s entries by run (JSON bytes each), and the lists its paths newly make.
    fn brings(&self, r: u32) -> (Vec<(u32, usize)>, Vec<u32>) {
        let at = self.entries.partition_point(|e| e.0 < r);
        let mut adds: Vec<(u32, usize)> = Vec::new();
        for &(_, run, b) in self.entries[at..].iter().take_while(|e| e.0 == r) {
            match adds.last_mut() {
                Some((last, bytes)) if *last == run => *bytes += b as usize,
                _ => adds.push((run, b as usize)),
            }
        }
        let at = self.makes.partition_point(|e| e.0 < r);
        let makes = self.makes[at..].iter().take_while(|e| e.0 == r).map(|e| e.1);
        (adds, makes.filter(|&l| !self.lists[l as usize].made).collect())
    }

    /// What admitting route `r` adds to the lists (bytes of the module's memory), and the
    /// longest run it adds to (bytes of JSON).
    fn cost(&self, r: u32) -> (usize, usize) {
        let (adds, new) = self.brings(r);
        let run = |run: u32| &self.runs[run as usize];
        let mut longest = adds.iter().map(|&(k, b)| run(k).bytes + b + 2).max().unwrap_or(0);
        let made = |l: u32| self.lists[l as usize].made || new.binary_search(&l).is_ok();
        let (mut json, mut lists, mut held) = (0usize, 0usize, 0usize);
        if self.carrier == Carrier::Inline {
            // (`json`, `lists`: what it adds.)
            // Its entries in every written list holding them; the lists it makes, whole.
            let mut fresh: Vec<u32> = new.clone();
            for &(k, b) in &adds {
                let holding = self.run_lists(k).iter().copied().filter(|&l| made(l));
                fresh.extend(holding.filter(|&l| !self.lists[l as usize].paid));
                let copies = run(k).made as usize
                    + self.run_lists(k).iter().filter(|l| new.binary_search(l).is_ok()).count();
                json = json.saturating_add(b.saturating_mul(copies));
            }
            for &l in &new {
                json += self.list_runs(l).iter().map(|&k| run(k).bytes).sum::<usize>();
            }
            fresh.sort_unstable();
            fresh.dedup();
            lists += fresh.len();
        } else {
            // Its entries under their keys; the lists of includes it makes or grows.
            let live: Vec<u32> = adds.iter().map(|a| a.0).filter(|&k| run(k).bytes == 0).collect();
            json += adds.iter().map(|a| a.1).sum::<usize>() + live.len() * KEY;
            lists += live.len();
            let mut grown: Vec<u32> = new.clone();
            for &k in &live {
                grown.extend(self.run_lists(k).iter().copied().filter(|&l| made(l)));
            }
            grown.sort_unstable();
            for g in grown.chunk_by(|a, b| a == b) {
                let l = &self.lists[g[0] as usize];
                let added = g.len() as u32 - u32::from(new.binary_search(&g[0]).is_ok());
                let before = if l.made { includes(l.live) } else { (0, 0) };
                let after = includes(l.live + added);
                // A list of includes is one list to parse too (`peak`).
                longest = longest.max(after.0);
                held += after.1 - before.1;
                lists += usize::from(before.0 == 0 && after.0 > 0);
            }
        }
        let cost = json.saturating_mul(RESIDENT).saturating_add(lists.saturating_mul(PER_LIST));
        let cost = cost.saturating_add(held).saturating_add(self.cuts_of(r));
        (cost, longest)
    }

    /// What the pieces charged to route `r` hold (preloaded: each its key and a copy of its
    /// entries, its list and an include in every list holding its block; inline lists have
    /// no keys).
    fn cuts_of(&self, r: u32) -> usize {
        if self.carrier == Carrier::Inline {
            return 0;
        }
        let at = self.cuts.partition_point(|c| c.0 < r);
        let cuts = self.cuts[at..].iter().take_while(|c| c.0 == r);
        let piece = |k: u32, json: u32| {
            let keyed = (KEY + json as usize) * RESIDENT + PER_LIST;
            keyed + self.run_lists(k).len() * PER_INCLUDE
        };
        cuts.map(|&(_, k, json)| piece(k, json)).sum()
    }

    /// Route `r` admitted: its entries are in their runs, the lists it makes written.
    fn commit(&mut self, r: u32) {
        let (adds, new) = self.brings(r);
        for &l in &new {
            self.lists[l as usize].made = true;
            self.lists[l as usize].paid = true;
            for i in self.lists[l as usize].runs.0..self.lists[l as usize].runs.1 {
                let k = self.list_runs[i as usize];
                self.runs[k as usize].made += 1;
            }
        }
        for (k, b) in adds {
            let (a, e) = self.runs[k as usize].lists;
            for &l in &self.run_lists[a as usize..e as usize] {
                let list = &mut self.lists[l as usize];
                list.live += u32::from(self.runs[k as usize].bytes == 0);
                list.paid |= list.made;
            }
            self.runs[k as usize].bytes += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{Carrier, Left, Model};
    use crate::plan::{PathKind, plan_yaml};

    /// Each route's charge, admitted oldest first with no budget: tenant a's route (`/`, `/a`
    /// and a header match) on a Gateway that admits every namespace, and `n` newer routes of
    /// tenant b, each a plain prefix `/bK` on a's host name.
    fn charges(n: usize, inline: bool) -> Vec<(String, usize)> {
        let mut y = "kind: Gateway\nmetadata: {name: gw, namespace: a, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP, hostname: a.test, allowedRoutes: {namespaces: {from: All}}}]\n---\nkind: HTTPRoute\nmetadata: {name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /a}, headers: [{name: x, value: y}]}, {path: {type: PathPrefix, value: /}}]\n".to_owned();
        for k in 0..n {
            y += &format!(
                "---\nkind: HTTPRoute\nmetadata: {{name: r{k}, namespace: b, creationTimestamp: \"2026-01-02T00:00:{:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw, namespace: a}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /b{k}}}}}]\n",
                k % 60
            );
        }
        charges_of(&y, inline)
    }

    /// Each route of `y`'s charge, admitted oldest first with no budget.
    fn charges_of(y: &str, inline: bool) -> Vec<(String, usize)> {
        let p = plan_yaml(y, |o| o.regex_per_location = inline);
        let carrier = if inline { Carrier::Inline } else { Carrier::Preload };
        let mut m = Model::of((&p.ports, &p.merged), &p.ages, &Left::default(), carrier);
        let mut order: Vec<_> =
            (0..m.routes.len() as u32).map(|r| (m.routes[r as usize].0, r)).collect();
        order.sort();
        let mut out = Vec::new();
        for (_, r) in order {
            out.push((m.routes[r as usize].1.to_string(), m.cost(r).0));
            m.commit(r);
        }
        out
    }

    /// The older route's charge is the same with 0, 16 and 32 newer paths on its host name
    /// (their lists of includes, or inline their copies of a's `/` entry, are theirs), and the
    /// newer routes' charges about double from 16 to 32: each pays its own.
    /// [`super::ELEMENT`] is the shortest element written: an entry of no condition, first slot.
    #[test]
    fn the_shortest_element_is_an_entry_of_no_condition() {
        let e = crate::plan::Entry {
            any: false,
            headers: Vec::new(),
            method: None,
            params: Vec::new(),
            path: None,
            slot: 0,
        };
        assert_eq!(serde_json::to_string(&e).unwrap().len() + 1, super::ELEMENT);
        const { assert!(super::INCLUDE > super::ELEMENT) };
    }

    #[test]
    fn an_older_route_is_charged_the_same_at_n_and_2n_newer_paths() {
        for inline in [false, true] {
            let (alone, n, twice) = (charges(0, inline), charges(16, inline), charges(32, inline));
            assert_eq!(alone[0].0, "a/r");
            assert_eq!((n[0].1, twice[0].1), (alone[0].1, alone[0].1), "inline {inline}");
            let b = |c: &[(String, usize)]| c[1..].iter().map(|x| x.1).sum::<usize>();
            assert!(
                b(&n) > 0 && (2 * b(&n) - b(&n) / 8..=2 * b(&n) + b(&n) / 8).contains(&b(&twice)),
                "inline {inline}: {n:?} {twice:?}"
            );
        }
    }

    /// rv-gb MED-3: tenant a's GRPCRoute (two rules on method a.S/M, one with two headers),
    /// and tenant b's newer one (a regex service and method, one header) on a's listener: b's
    /// candidate sorts between a's two, so `= /a.S/M`'s list holds a's block in two pieces,
    /// each its own key. a's charge is the same with and without b (the piece is b's cut,
    /// charged to b); b's is more than alone. Before, a paid the piece's key, list and
    /// include.
    #[test]
    fn a_newer_grpc_route_pays_for_the_pieces_it_cuts_an_older_block_into() {
        let a = "kind: Gateway\nmetadata: {name: gw, namespace: a, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP, hostname: a.test, allowedRoutes: {namespaces: {from: All}}}]\n---\nkind: GRPCRoute\nmetadata: {name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{method: {service: a.S, method: M}, headers: [{name: x, value: \"1\"}, {name: y, value: \"2\"}]}]\n  - matches: [{method: {service: a.S, method: M}}]\n";
        let b = "---\nkind: GRPCRoute\nmetadata: {name: r, namespace: b, creationTimestamp: \"2026-01-02T00:00:00Z\"}\nspec:\n  parentRefs: [{name: gw, namespace: a}]\n  rules:\n  - matches: [{method: {type: RegularExpression, service: \"b[.]S\", method: \"M.*\"}, headers: [{name: z, value: \"3\"}]}]\n";
        let both = format!("{a}{b}");
        let p = plan_yaml(&both, |_| {});
        let segments = p.ports.iter().flat_map(|p| &p.servers).flat_map(|s| &s.locations);
        let cut = segments.flat_map(|l| &l.segments).any(|s| s.range.start > 0);
        assert!(cut, "no block in pieces: {:?}", p.ports);
        let (alone, with_b) = (charges_of(a, false), charges_of(&both, false));
        assert_eq!(alone.len(), 1);
        assert_eq!(with_b[0], alone[0], "{with_b:?}");
        let gateway = a.split("---\n").next().unwrap();
        let b_alone = charges_of(&format!("{gateway}{b}"), false);
        assert!(with_b[1].1 > b_alone[0].1, "{with_b:?} {b_alone:?}");
    }

    /// Tenant a's Gateway (admitting every namespace) and older GRPCRoute: two regex rules
    /// (service and method named, two headers and none), a block that any exact method
    /// of a's listener with one header cuts in two.
    const A_REGEX: &str = "kind: Gateway\nmetadata: {name: gw, namespace: a, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP, hostname: a.test, allowedRoutes: {namespaces: {from: All}}}]\n---\nkind: GRPCRoute\nmetadata: {name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{method: {type: RegularExpression, service: \"a[.]S\", method: \"M.*\"}, headers: [{name: x, value: \"1\"}, {name: y, value: \"2\"}]}]\n  - matches: [{method: {type: RegularExpression, service: \"a[.]S\", method: \"N.*\"}}]\n";

    /// Tenant b's newer GRPCRoute on a's listener: exact b.S/M with one header of `len` bytes.
    fn b_exact(len: usize) -> String {
        format!(
            "---\nkind: GRPCRoute\nmetadata: {{name: r, namespace: b, creationTimestamp: \"2026-01-02T00:00:00Z\"}}\nspec:\n  parentRefs: [{{name: gw, namespace: a}}]\n  rules:\n  - matches: [{{method: {{service: b.S, method: M}}, headers: [{{name: z, value: \"{}\"}}]}}]\n",
            "v".repeat(len)
        )
    }

    /// Whether some location of `p` holds a block in pieces.
    fn cut(p: &crate::plan::Plan) -> bool {
        let locations = p.ports.iter().flat_map(|p| &p.servers).flat_map(|s| &s.locations);
        locations.flat_map(|l| &l.segments).any(|s| s.range.len() < s.block.len())
    }

    /// rv-gu MED-4: b's `= /b.S/M` (made by b alone) holds a's block in two pieces around
    /// b's run; b refused by the list budget (its 2,000-byte header past its share, a's
    /// charge), the location is refused too: it would hold a's two pieces, a list of
    /// includes charged to no one. Before (912c824), pieces were not counted: written.
    #[test]
    fn a_location_whose_makers_are_refused_is_not_written_with_another_s_pieces() {
        let y = format!("{A_REGEX}{}", b_exact(2000));
        let a = charges_of(&y, false)[0].1;
        let p = plan_yaml(&y, |o| o.list_memory_per_tenant = a);
        assert!(cut(&p), "no block in pieces: {:?}", p.ports);
        let refused = |what: &str| p.refused.iter().any(|(r, _)| format!("{r:?}").contains(what));
        assert!(refused("\"b\"") && !refused("\"a\""), "{:?}", p.refused);
        let exact = p.refused.iter().any(|(r, _)| match r {
            crate::plan::Unit::Location(at, li) => {
                p.ports[at.0].servers[at.1].locations[*li].loc
                    == crate::plan::Loc::Exact("/b.S/M".into())
            }
            _ => false,
        });
        assert!(exact, "{:?}", p.refused);
    }

    /// rv-gu HIGH-3: a's block is whole in `location /` and in two pieces in b's `= /b.S/M`:
    /// its entries are charged to a once (a's charge the same with and without b), the
    /// pieces' keys and copies to b. Before, each piece re-read a's entries into a's charge.
    #[test]
    fn a_block_whole_in_one_location_and_cut_in_another_is_charged_once_to_its_owner() {
        let both = format!("{A_REGEX}{}", b_exact(1));
        assert!(cut(&plan_yaml(&both, |_| {})));
        let (alone, with_b) = (charges_of(A_REGEX, false), charges_of(&both, false));
        assert_eq!(with_b[0], alone[0], "{with_b:?}");
    }

    /// Brief gr: A_REGEX with a's own exact method b.S/M (three headers, one of `len` bytes)
    /// and b's (one header): b's candidate comes between a's regex candidates, which come
    /// between a's exact one and b's, so `= /b.S/M`'s exact block is in two pieces and whole
    /// in no list: its pieces are its one copy, whose entries a and b pay once each. b's
    /// charge is the same whatever the length of a's entry. Before, b paid a copy of a's
    /// piece (its key and its entries).
    #[test]
    fn a_block_whole_in_no_list_is_not_charged_a_copy_of_its_pieces() {
        let y = |len: usize| {
            let mine = format!(
                "  - matches: [{{method: {{service: b.S, method: M}}, headers: [{{name: p, value: \"{}\"}}, {{name: q, value: \"1\"}}, {{name: r, value: \"1\"}}]}}]\n",
                "v".repeat(len)
            );
            format!("{A_REGEX}{mine}{}", b_exact(1))
        };
        let p = plan_yaml(&y(1), |_| {});
        let l = p.ports.iter().flat_map(|p| &p.servers).flat_map(|s| &s.locations);
        let exact = l.clone().find(|l| l.loc == crate::plan::Loc::Exact("/b.S/M".into())).unwrap();
        let block = |s: &crate::plan::Segment| s.candidates()[0].path_kind;
        let pieces: Vec<_> =
            exact.segments.iter().filter(|s| block(s) == PathKind::Exact).collect();
        assert_eq!(pieces.len(), 2, "{:?}", exact.segments);
        let whole = l.flat_map(|l| &l.segments).any(|s| {
            block(s) == PathKind::Exact && s.range.len() == s.block.len() && s.block.len() == 2
        });
        assert!(!whole);
        let (short, long) = (charges_of(&y(1), false), charges_of(&y(2000), false));
        assert_eq!(short.last().unwrap().0, "b/r");
        assert_eq!(short.last(), long.last(), "{short:?} {long:?}");
    }

    /// rv-gu HIGH-2: the ages of [`a_newer_grpc_route_pays_for_the_pieces_it_cuts_an_older_block_into`]
    /// swapped: o (older, its own Gateway admitting every namespace) a regex method of b.S
    /// with one header; n (newer, on o's Gateway) the two rules on a.S/M. n's block is cut by
    /// o's candidate in `= /a.S/M`: the piece is n's (the newer), o's charge the same with and
    /// without n. Before, the piece was charged to the route before it: o.
    #[test]
    fn a_cut_is_charged_to_the_newer_of_the_cut_block_and_the_cutter() {
        let o = "kind: Gateway\nmetadata: {name: gw, namespace: o, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP, hostname: a.test, allowedRoutes: {namespaces: {from: All}}}]\n---\nkind: GRPCRoute\nmetadata: {name: r, namespace: o, creationTimestamp: \"2026-01-01T00:00:01Z\"}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{method: {type: RegularExpression, service: \"b[.]S\", method: \"M.*\"}, headers: [{name: z, value: \"3\"}]}]\n";
        let n = "---\nkind: GRPCRoute\nmetadata: {name: r, namespace: n, creationTimestamp: \"2026-01-02T00:00:00Z\"}\nspec:\n  parentRefs: [{name: gw, namespace: o}]\n  rules:\n  - matches: [{method: {service: a.S, method: M}, headers: [{name: x, value: \"1\"}, {name: y, value: \"2\"}]}]\n  - matches: [{method: {service: a.S, method: M}}]\n";
        let both = format!("{o}{n}");
        assert!(cut(&plan_yaml(&both, |_| {})));
        let (alone, with_n) = (charges_of(o, false), charges_of(&both, false));
        assert_eq!(alone.len(), 1);
        assert_eq!(with_n[0], alone[0], "{with_n:?}");
    }

    /// With `--carrier inline` the lists' bytes are charged too (`--list-memory-per-tenant`): 40 routes, each a
    /// 1,000-byte header match on its own prefix (two written copies: `= /pK`, `/pK/`), against
    /// a total of 128 KiB: the oldest are kept, the newest refused, and the kept routes' copies'
    /// JSON at the module's resident factor stays within the total. Before, list bytes were
    /// charged to no one: all 40 kept, about twice the total.
    #[test]
    fn inline_list_bytes_are_charged_to_their_makers_within_the_total() {
        let total = 128 << 10;
        let mut y = "kind: Gateway\nmetadata: {name: gw, namespace: a}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP}]\n".to_owned();
        let v = "v".repeat(1000);
        for k in 0..40 {
            y += &format!(
                "---\nkind: HTTPRoute\nmetadata: {{name: r{k:02}, namespace: a, creationTimestamp: \"2026-01-01T00:00:{k:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /p{k}}}, headers: [{{name: x-v, value: {v}}}]}}]\n"
            );
        }
        let p = plan_yaml(&y, |o| {
            o.regex_per_location = true;
            o.list_word = Some(crate::syntax::Pos::Literal);
            o.list_memory_per_tenant = total;
        });
        let refused: BTreeSet<String> = p
            .refused
            .iter()
            .filter_map(|(r, _)| match r {
                crate::plan::Unit::Route(id) => Some(id.to_string()),
                _ => None,
            })
            .collect();
        let kept: BTreeSet<String> = (0..40).map(|k| format!("a/r{k:02}")).collect();
        let kept: BTreeSet<&String> = kept.iter().filter(|r| !refused.contains(*r)).collect();
        assert!(!refused.is_empty() && !kept.is_empty(), "{refused:?}");
        assert!(p.refused.iter().all(|(_, why)| why.contains("budget: list memory")), "{p:?}");
        assert!(kept.iter().all(|k| refused.iter().all(|r| *k < r)), "{kept:?} {refused:?}");
        let locations = p.ports.iter().flat_map(|p| &p.servers).flat_map(|s| &s.locations);
        let candidates = locations.flat_map(|l| l.candidates());
        let written: usize = candidates
            .filter(|c| !refused.contains(&c.id.route.to_string()))
            .map(|c| {
                (serde_json::to_string(&c.entry).unwrap().len() + 2)
                    * route_match::LIST_RESIDENT_BYTES_PER_JSON_BYTE
            })
            .sum();
        assert!(written <= total, "{written} > {total} ({} kept)", kept.len());
    }

    /// `--carrier inline`: a location whose makers are all refused still holds an older
    /// route's copy (tenant a's `/`) charged to no one, so it is refused too (not written):
    /// b's 10 routes of a 1,000-byte header on `/bK`, a's host name, a 16 KiB share; each
    /// refused route's two locations (`= /bK`, `/bK/`) are refused. Before, they were written
    /// with a's copies, uncharged.
    #[test]
    fn locations_whose_makers_are_refused_are_not_written_uncharged() {
        let mut y = "kind: Gateway\nmetadata: {name: gw, namespace: a, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP, hostname: a.test, allowedRoutes: {namespaces: {from: All}}}]\n---\nkind: HTTPRoute\nmetadata: {name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /}}]\n".to_owned();
        let v = "v".repeat(1000);
        for k in 0..10 {
            y += &format!(
                "---\nkind: HTTPRoute\nmetadata: {{name: r{k}, namespace: b, creationTimestamp: \"2026-01-02T00:00:{k:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw, namespace: a}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /b{k}}}, headers: [{{name: x-v, value: {v}}}]}}]\n"
            );
        }
        let p = plan_yaml(&y, |o| {
            o.regex_per_location = true;
            o.list_word = Some(crate::syntax::Pos::Literal);
            o.list_memory_per_tenant = 16 << 10;
        });
        let (mut routes, mut places) = (BTreeSet::new(), BTreeSet::new());
        for (r, _) in &p.refused {
            match r {
                crate::plan::Unit::Route(id) => _ = routes.insert(id.name.clone()),
                crate::plan::Unit::Location(at, li) => {
                    _ = places
                        .insert(format!("{:?}", p.ports[at.0].servers[at.1].locations[*li].loc))
                }
                _ => {}
            }
        }
        assert!(!routes.is_empty() && routes.len() < 10, "{routes:?}");
        let expected: BTreeSet<String> = routes
            .iter()
            .flat_map(|r| {
                let k = r.trim_start_matches('r');
                [format!("Exact(\"/b{k}\")"), format!("Prefix(\"/b{k}/\")")]
            })
            .collect();
        assert_eq!(places, expected);
    }

    /// `--carrier variable` compiles each list per request: its lists are not charged (a
    /// 1 KiB list share refuses nothing), its patterns are, once per namespace, oldest route
    /// first: b's three routes, r0 and r1 of one pattern and r2 of another, a regex share of
    /// one pattern: r2 refused "budget: regex memory" alone.
    #[test]
    fn variable_lists_charge_their_patterns_alone() {
        let pattern = |c: char| format!("/{c}{}", "[0-9]".repeat(20));
        let mut y = "kind: Gateway\nmetadata: {name: gw, namespace: b, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP}]\n".to_owned();
        for (k, c) in ['a', 'a', 'b'].into_iter().enumerate() {
            y += &format!(
                "---\nkind: HTTPRoute\nmetadata: {{name: r{k}, namespace: b, creationTimestamp: \"2026-01-02T00:00:{k:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: RegularExpression, value: \"{}\"}}, headers: [{{name: x, value: \"{}\"}}]}}]\n",
                pattern(c),
                "v".repeat(1000)
            );
        }
        let p = plan_yaml(&y, |o| {
            o.list_word = Some(crate::syntax::Pos::Variables);
            o.regex_memory_per_tenant = crate::limits::regex_charge(pattern('a').len() + 64);
            o.list_memory_per_tenant = 1 << 10;
        });
        let refused: Vec<(String, bool)> = p
            .refused
            .iter()
            .map(|(r, why)| (format!("{r:?}"), why.contains("budget: regex memory")))
            .collect();
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].0.contains("\"r2\"") && refused[0].1, "{refused:?}");
    }

    /// `--carrier variable` charges no list: its model counts no entry's JSON and no piece,
    /// its patterns all the same (a's two regex methods, a's block cut by b's candidate).
    /// Before, each entry's JSON was written to a counter and each piece's summed, unread.
    #[test]
    fn a_variable_model_counts_no_json() {
        let y = format!("{A_REGEX}{}", b_exact(1));
        let p = plan_yaml(&y, |o| o.list_word = Some(crate::syntax::Pos::Variables));
        assert!(cut(&p));
        let m = Model::of((&p.ports, &p.merged), &p.ages, &Left::default(), Carrier::Variable);
        assert_eq!((m.entries.len(), m.cuts.len()), (0, 0));
        assert!(m.patterns.len() >= 2, "{:?}", m.patterns);
        let m = Model::of((&p.ports, &p.merged), &p.ages, &Left::default(), Carrier::Preload);
        assert!(!m.entries.is_empty() && !m.cuts.is_empty());
    }

    /// Preloaded lists of includes (HIGH-2 of gb's review): tenant b's 40 routes on nested
    /// prefixes `/d`, `/d/d`, ... (the deepest locations' lists include 40 runs): the newest
    /// route is charged its lists' includes at `LIST_RESIDENT_BYTES_PER_INCLUDE` each, and its
    /// longest list (for the one-list parse) is its list of includes, 40 x 48 bytes of JSON.
    /// Before, an include was charged 96 bytes and the longest list was its one-entry run.
    #[test]
    fn lists_of_includes_are_charged_per_include_and_parsed_as_one_list() {
        let mut y = "kind: Gateway\nmetadata: {name: gw, namespace: b, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP}]\n".to_owned();
        for k in 1..=40 {
            y += &format!(
                "---\nkind: HTTPRoute\nmetadata: {{name: r{k:02}, namespace: b, creationTimestamp: \"2026-01-02T00:00:{k:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: {}}}}}]\n",
                "/d".repeat(k)
            );
        }
        let p = plan_yaml(&y, |_| {});
        let mut m = Model::of((&p.ports, &p.merged), &p.ages, &Left::default(), Carrier::Preload);
        let mut order: Vec<_> =
            (0..m.routes.len() as u32).map(|r| (m.routes[r as usize].0, r)).collect();
        order.sort();
        let mut last = (0, 0);
        for (_, r) in order {
            last = m.cost(r);
            m.commit(r);
        }
        assert!(last.1 >= 40 * super::INCLUDE, "{last:?}");
        assert!(last.0 >= 40 * route_match::LIST_RESIDENT_BYTES_PER_INCLUDE, "{last:?}");
    }
}
