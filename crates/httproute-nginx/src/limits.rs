//! NGINX's hash tables, computed: the `*_hash_bucket_size` and `*_hash_max_size` that make
//! NGINX build every hash the configuration fills without "could not build optimal ...
//! hash" (or, past that, without refusing it).
//!
//! NGINX (`ngx_hash_init`, src/core/ngx_hash.c) puts each key in bucket `hash % size`, with
//! `hash` the `h * 31 + c` of its bytes (lower-cased for host names); an element takes a
//! pointer and its key with 2 bytes, aligned to the pointer, and a bucket ends with a pointer.
//! It tries every `size` from `start = n / (bucket_size / 16)` to `max_size` and takes the
//! first whose buckets all hold their keys; if none does it warns and builds with `max_size`
//! buckets anyway (refusing only a bucket past 65,536 - `ngx_cacheline_size` bytes). Wildcard names
//! (`*.example.com`) are a tree of hashes, one per label level (`ngx_hash_wildcard_init`),
//! each built the same way. [`hash_sizes`] runs the same search on the keys the
//! configuration writes and returns the sizes NGINX will succeed with.
//!
//! Any subset of the keys fits in the size the whole set fits in, and starts its search no
//! later: so one pair of sizes, computed from every host name of every port, holds for each
//! port's server names and each SNI map.

/// The bucket sizes the generator computes are multiples of this (NGINX rounds them up to
/// its `ngx_cacheline_size`, decided at run time: 64 on most x86-64 and arm64).
const CACHELINE: usize = 64;
/// The largest `ngx_cacheline_size` (256 on s390x; 128 on some x86 and ppc64).
const MAX_CACHELINE: usize = 256;
/// The largest bucket NGINX takes on every machine (it refuses one past 65,536 - its cache
/// line): a multiple of [`MAX_CACHELINE`], so rounding it up leaves it as it is.
const MAX_BUCKET: usize = 65536 - MAX_CACHELINE;
/// Sizes tried past NGINX's `start` for one bucket size before a larger bucket is tried: the
/// search costs at most this many passes over the keys per bucket size.
const SPAN: usize = 256;

/// The module's `http_matches_max_memory` when not set (`src/state.rs`): unless the operator
/// gives another (`--module-max-memory`, then written), every compiled list of the
/// configuration shares this.
pub const MODULE_MAX_MEMORY: usize = 128 * 1024 * 1024;
/// What the regex conditions of all tenants together may take of it by default
/// (`--regex-memory-total`): half (the other half for the lists' compiled entries, their
/// keys, and the parse of the longest list).
pub const DEFAULT_REGEX_MEMORY_TOTAL: usize = MODULE_MAX_MEMORY / 2;
/// The most `--regex-memory-total` may be of the module's `http_matches_max_memory`: three
/// quarters. The budget counts the regex conditions only; the last quarter is the lists' own
/// (their compiled entries, keys, and the parse of the longest list), so a total equal to the
/// module's memory is refused.
pub const fn regex_memory_room(module_max_memory: usize) -> usize {
    module_max_memory - module_max_memory / 4
}
/// What one namespace's regex conditions may take by default (`--regex-memory-per-tenant`):
/// a quarter of [`DEFAULT_REGEX_MEMORY_TOTAL`], 240 patterns at the most each may compile to.
pub const DEFAULT_REGEX_MEMORY_PER_TENANT: usize = DEFAULT_REGEX_MEMORY_TOTAL / 4;
/// What one namespace's match lists may hold by default (`--list-memory-per-tenant`): half
/// of what the lists of all tenants may hold beside the default regex total and one list's
/// parse (`plan::ListLimits`: 48 MiB of the 128 MiB).
pub const DEFAULT_LIST_MEMORY_PER_TENANT: usize = 24 * 1024 * 1024;

/// Units one namespace's InferencePools may take by default (`plan::inference::admit`,
/// `--pool-units-per-tenant`): an EndpointSlice
/// looked at and an address written are a unit each. Pools sharing a selector wrote pools x
/// slices addresses (400 pools over 400 one-address slices: 5.3 MB of nginx.conf, 800: 20.8
/// MB); 8 pools of 1,000 endpoints on 8 ports each take about 64,000.
pub const POOL_UNITS_PER_TENANT: usize = 256 * 1024;

/// The most one distinct regex condition of `len` bytes holds in the module: PCRE2's code
/// and JIT code (at most `DEFAULT_PATTERN_MEMORY`, a pattern past it is a malformed entry
/// that holds nothing), its text (twice: the pattern and the interned string), and its
/// share of the prefilter's automaton (`nfa_estimate`: 80 bytes per literal byte, a literal
/// is at most the pattern, and two dense rows of 1,024 bytes). An upper bound on every
/// machine, whatever PCRE2 compiles the pattern to. Saturating: a charge past `usize::MAX`
/// (a long pattern on a 32-bit `usize`) is `usize::MAX`, past every budget, never a small
/// number that wrapped around.
pub fn regex_charge(len: usize) -> usize {
    len.saturating_mul(96).saturating_add(route_match::DEFAULT_PATTERN_MEMORY).saturating_add(4096)
}

/// The longest header name a hash with NGINX's fixed 64-byte buckets holds (the grpc module's
/// headers and hidden headers: no `grpc_headers_hash_bucket_size` exists): an element is a
/// pointer and the name with 2 bytes, aligned to 8, and a bucket ends with a pointer.
pub const FIXED_BUCKET_HEADER: usize = 64 - 8 - 8 - 2;

/// `ngx_hash` over the bytes, lower-cased (`ngx_hash_key_lc`).
pub fn ngx_hash_key_lc(key: &[u8]) -> u64 {
    key.iter()
        .fold(0u64, |h, &c| h.wrapping_mul(31).wrapping_add(u64::from(c.to_ascii_lowercase())))
}

/// `NGX_HASH_ELT_SIZE`: the bytes an element with a key of `len` bytes takes in a bucket.
pub fn element_size(len: usize) -> usize {
    8 + (len + 2).div_ceil(8) * 8
}

fn align(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

/// Bucket and max sizes for one directive pair (`server_names_hash_*`, `map_hash_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashSizes {
    pub bucket_size: usize,
    pub max_size: usize,
}

/// Whether `ngx_hash_init` with these sizes builds a hash of `keys` (given by their hashes
/// and lengths) within `max_size` buckets: the `size` it takes, or `None` (it would warn).
fn first_fit(keys: &[(u64, usize)], bucket_size: usize, max_size: usize) -> Option<usize> {
    if keys.is_empty() {
        return Some(1);
    }
    if keys.iter().any(|&(_, len)| bucket_size < element_size(len) + 8) {
        return None;
    }
    let room = bucket_size - 8;
    let start = (keys.len() / (room / 16)).max(1);
    let start = if max_size > 10000 && max_size / keys.len() < 100 {
        max_size.saturating_sub(1000).max(start)
    } else {
        start
    };
    let mut test = vec![0usize; max_size.max(1)];
    'size: for size in start..=max_size {
        test[..size].fill(0);
        for &(h, len) in keys {
            let b = (h % size as u64) as usize;
            test[b] += element_size(len);
            if test[b] > room {
                continue 'size;
            }
        }
        return Some(size);
    }
    None
}

/// The key sets NGINX builds hashes of for these server names (exact names; each level of
/// the wildcard trees), as (hash, length) pairs. The exact names hold the empty name too:
/// every port's catch-all is `server_name ""` (a key of its own, `ngx_http_server_names`),
/// and every SNI map has the key `""`.
fn key_sets<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<Vec<(u64, usize)>> {
    let mut exact: Vec<(u64, usize)> = vec![(0, 0)];
    // Wildcards `*.a.b`: NGINX keeps them reversed (`b.a`) and builds a hash per node of the
    // label tree, of the node's child labels.
    let mut tree = LabelTree::default();
    let mut seen = std::collections::HashSet::new();
    for n in names {
        if !seen.insert(n) {
            continue;
        }
        match n.strip_prefix("*.") {
            None => exact.push((ngx_hash_key_lc(n.as_bytes()), n.len())),
            Some(rest) => {
                let mut node = 0;
                for label in rest.rsplit('.') {
                    node = tree.child(node, label).unwrap_or_else(|| tree.add(node, label));
                }
            }
        }
    }
    let mut sets = vec![exact];
    for node in tree.nodes.iter().filter(|n| !n.children.is_empty()) {
        let keys = node.children.keys();
        sets.push(keys.map(|l| (ngx_hash_key_lc(l.as_bytes()), l.len())).collect());
    }
    sets
}

/// NGINX's wildcard label tree (`*.a.b` kept reversed: `b`, then `a`), its nodes numbered in
/// the order made (0: the root), each with its child labels and the bytes per bucket of
/// their keys: a name of n labels stores each label once (a node keyed by its whole path
/// stored n^2 / 2 labels: 854 MB for 704 KB of 124-label names).
#[derive(Debug)]
struct LabelTree {
    nodes: Vec<Node>,
}

#[derive(Debug, Default)]
struct Node {
    children: std::collections::HashMap<String, usize>,
    buckets: Buckets,
}

impl Default for LabelTree {
    fn default() -> Self {
        LabelTree { nodes: vec![Node::default()] }
    }
}

impl LabelTree {
    /// The child of `node` by `label`, if made.
    fn child(&self, node: usize, label: &str) -> Option<usize> {
        self.nodes[node].children.get(label).copied()
    }

    /// Makes the child of `node` by `label`: its number.
    fn add(&mut self, node: usize, label: &str) -> usize {
        let id = self.nodes.len();
        self.nodes.push(Node::default());
        self.nodes[node].children.insert(label.to_owned(), id);
        id
    }
}

/// The sizes that build every hash of `sets` ([`first_fit`] for each), starting from
/// `default` (NGINX's, or what the configuration would write anyway): `None` when `default`
/// already does, so that nothing needs writing.
fn sizes_for(sets: &[Vec<(u64, usize)>], default: HashSizes) -> Option<HashSizes> {
    let fits =
        |s: HashSizes| sets.iter().all(|k| first_fit(k, s.bucket_size, s.max_size).is_some());
    if fits(default) {
        return None;
    }
    let longest = sets.iter().flatten().map(|&(_, len)| len).max().unwrap_or(0);
    let mut bucket = align(default.bucket_size.max(element_size(longest) + 8), CACHELINE);
    loop {
        // The smallest max_size that holds every set with this bucket, searched no further
        // than SPAN sizes past each set's start.
        let mut max_size = default.max_size;
        let mut ok = true;
        for k in sets {
            let room = bucket - 8;
            let start = (k.len() / (room / 16)).max(1);
            match first_fit(k, bucket, start + SPAN) {
                Some(size) => max_size = max_size.max(size),
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if ok && max_size <= 10000 {
            return Some(HashSizes { bucket_size: bucket, max_size });
        }
        if bucket >= MAX_BUCKET {
            // No size the search affords holds them (keys whose hashes collide on purpose):
            // the largest buckets and FALLBACK_SIZE of them, which the names admitted
            // ([`NameBudget`]) fill to at most ADMIT_ROOM each, so that NGINX builds it
            // whether its search finds a size or falls back to this one.
            return Some(HashSizes { bucket_size: MAX_BUCKET, max_size: FALLBACK_SIZE });
        }
        bucket = (bucket * 2).min(MAX_BUCKET);
    }
}

/// The `*_hash_max_size` written when no size NGINX's search affords holds the names (see
/// [`sizes_for`]): NGINX then builds with this many buckets, each of which [`NameBudget`]
/// keeps within what NGINX takes.
pub const FALLBACK_SIZE: usize = 10007;
/// The bytes the keys of one bucket may take at [`FALLBACK_SIZE`] buckets: NGINX's largest
/// bucket, less its end pointer and the SNI map's empty key (`map_hostnames`).
pub const ADMIT_ROOM: usize = MAX_BUCKET - 8 - 16;

/// NGINX's server-name hashes (and the SNI maps, keyed by the same names) as names are
/// admitted into them oldest first: each set of [`key_sets`] laid out at [`FALLBACK_SIZE`]
/// buckets. A name is admitted when every bucket its keys go to stays within [`ADMIT_ROOM`];
/// so whatever the names (colliding on purpose included), the admitted ones, and any subset
/// of them, build with the sizes [`server_names`] and [`map_hostnames`] give. The cost is
/// one hash of each new key.
#[derive(Debug, Default)]
pub struct NameBudget {
    seen: std::collections::HashSet<String>,
    /// Bytes per bucket of the exact names.
    exact: Buckets,
    /// The wildcards' label tree, with the bytes per bucket of each node's child labels.
    tree: LabelTree,
}

/// Bytes per bucket (by its index) of one hash.
type Buckets = std::collections::HashMap<usize, usize>;

impl NameBudget {
    /// Admits `name` (a server name: exact or `*.` wildcard) if its keys fit; `false`: NGINX
    /// could not build a hash with it beside the names admitted before.
    pub fn admit(&mut self, name: &str) -> bool {
        if self.seen.contains(name) {
            return true;
        }
        let bucket = |key: &str| (ngx_hash_key_lc(key.as_bytes()) % FALLBACK_SIZE as u64) as usize;
        let fits = |b: &Buckets, key: &str| {
            b.get(&bucket(key)).copied().unwrap_or(0) + element_size(key.len()) <= ADMIT_ROOM
        };
        match name.strip_prefix("*.") {
            None => {
                if !fits(&self.exact, name) {
                    return false;
                }
                *self.exact.entry(bucket(name)).or_default() += element_size(name.len());
            }
            Some(rest) => {
                // Past the nodes made, each label is a new key, alone in a new node but the
                // first (in the last node made).
                let mut node = 0;
                let mut labels = rest.rsplit('.').peekable();
                while let Some(c) = labels.peek().and_then(|l| self.tree.child(node, l)) {
                    node = c;
                    labels.next();
                }
                let new: Vec<&str> = labels.collect();
                let none = Buckets::new();
                let first = new.first().is_none_or(|l| fits(&self.tree.nodes[node].buckets, l));
                if !first || !new.iter().all(|l| fits(&none, l)) {
                    return false;
                }
                for l in new {
                    *self.tree.nodes[node].buckets.entry(bucket(l)).or_default() +=
                        element_size(l.len());
                    node = self.tree.add(node, l);
                }
            }
        }
        self.seen.insert(name.to_owned());
        true
    }
}

/// Whether NGINX builds every hash of these server names with these sizes (`ngx_hash_init`:
/// the first size from its start up to `max_size` whose buckets hold their keys, else
/// `max_size` buckets, refused when one passes 65,280 bytes), the server-name hashes and the
/// SNI maps alike. For tests: the model the sizes written are checked against.
pub fn nginx_builds<'a>(names: impl IntoIterator<Item = &'a str>, sizes: HashSizes) -> bool {
    key_sets(names).iter().all(|k| {
        if k.iter().any(|&(_, len)| sizes.bucket_size < element_size(len) + 8) {
            return false;
        }
        if first_fit(k, sizes.bucket_size, sizes.max_size).is_some() {
            return true;
        }
        let mut test = vec![8usize; sizes.max_size.max(1)];
        k.iter().all(|&(h, len)| {
            let b = (h % sizes.max_size.max(1) as u64) as usize;
            test[b] += element_size(len);
            test[b] <= MAX_BUCKET
        })
    })
}

/// `server_names_hash_*` for these host names (every `server_name` of every port), given what
/// the configuration writes without this (`bucket`: its `server_names_hash_bucket_size`, or
/// NGINX's default 64); `None`: the defaults build every hash.
pub fn server_names<'a>(
    names: impl IntoIterator<Item = &'a str>,
    bucket: usize,
) -> Option<HashSizes> {
    sizes_for(&key_sets(names), HashSizes { bucket_size: bucket.max(CACHELINE), max_size: 512 })
}

/// `map_hash_*` for maps with `hostnames` keyed by these names (the SNI maps; the other maps
/// the generator writes have 2 or 3 plain keys), given its `map_hash_bucket_size` or 64.
pub fn map_hostnames<'a>(
    names: impl IntoIterator<Item = &'a str>,
    bucket: usize,
) -> Option<HashSizes> {
    // `default` is not in the hash (a default value); the key `""` is (in [`key_sets`]).
    sizes_for(&key_sets(names), HashSizes { bucket_size: bucket.max(CACHELINE), max_size: 2048 })
}

/// `variables_hash_*` for a configuration that defines `defined` variables of at most
/// `longest` bytes on top of NGINX's own (about 150 short names in the modules the vendored
/// NGINX has, which its defaults of 1,024 buckets of 64 bytes hold): `None` up to 256 of the
/// generator's. The names of NGINX's own variables are not known here, so this is not an
/// exact search: past that, buckets that hold four of the longest and twice as many buckets
/// as variables (the search NGINX runs then stops at a load below one per bucket).
pub fn variables(defined: usize, longest: usize) -> Option<HashSizes> {
    if defined <= 256 {
        return None;
    }
    let n = defined + 256;
    let bucket = align(4 * element_size(longest.max(32)) + 8, CACHELINE).max(128);
    Some(HashSizes { bucket_size: bucket, max_size: (2 * n).next_power_of_two().max(1024) })
}

/// At least the longest name of a variable the generator defines (`httproute_cors_TAG_m`, 42
/// bytes, and `httproute_split_TAG_N`, 41 with N below 100: `emit::state::rule_tag`).
const LONGEST_VARIABLE: usize = 48;

/// The `http`-level directives that size NGINX's hashes for a configuration with these server
/// names (`names`: every port's; `sni`: those of TLS ports, the keys of the SNI maps) and
/// `variables` variables of its own. Nothing for a configuration NGINX's defaults hold, and
/// the bucket sizes of names over 32 bytes as before (so the output is the same for them).
pub fn hash_directives<'a>(
    names: impl Iterator<Item = &'a str> + Clone,
    sni: impl Iterator<Item = &'a str>,
    variables_defined: usize,
) -> Vec<crate::conf::Node> {
    use crate::conf::Directive;
    let dir = |name: &'static str, v: usize| Directive::new(name).code(v.to_string()).into();
    let mut out = Vec::new();
    let longest = names.clone().map(str::len).max().unwrap_or(0);
    // What a configuration with a name over 32 bytes always wrote.
    let bucket = if longest > 32 { (longest + 32).next_power_of_two().max(128) } else { 0 };
    let hashes = [
        (
            ("server_names_hash_bucket_size", "server_names_hash_max_size"),
            server_names(names, bucket),
        ),
        (("map_hash_bucket_size", "map_hash_max_size"), map_hostnames(sni, bucket)),
    ];
    for ((b, m), sizes) in hashes {
        match sizes {
            Some(s) => out.extend([dir(b, s.bucket_size), dir(m, s.max_size)]),
            None if bucket > 0 => out.push(dir(b, bucket)),
            None => {}
        }
    }
    if let Some(s) = variables(variables_defined, LONGEST_VARIABLE) {
        out.push(dir("variables_hash_bucket_size", s.bucket_size));
        out.push(dir("variables_hash_max_size", s.max_size));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The charge saturates: at the extreme lengths (`usize::MAX`, and the longest whose
    /// `x 96` still fits, where the additions would overflow) it is `usize::MAX`, so no
    /// budget admits the pattern; it never decreases with the length.
    #[test]
    fn the_regex_charge_saturates_at_the_extreme() {
        let widest = usize::MAX / 96;
        for len in [usize::MAX, widest, widest - 1] {
            assert_eq!(regex_charge(len), usize::MAX, "{len}");
        }
        assert_eq!(regex_charge(0), route_match::DEFAULT_PATTERN_MEMORY + 4096);
        let lens = [0, 1, 64, widest - 100, widest - 99, widest, usize::MAX];
        assert!(lens.windows(2).all(|w| regex_charge(w[0]) <= regex_charge(w[1])));
    }

    /// A wildcard of n labels stores each label once, in the budget and in the key sets: at
    /// 62 and 124 labels the labels stored are 62 and 124 (before, each node was keyed by its
    /// whole path: 1,953 and 7,750 labels).
    #[test]
    fn a_wildcard_stores_each_label_once() {
        for n in [62, 124] {
            let name = format!("*.{}example", "q.".repeat(n - 1));
            let mut budget = NameBudget::default();
            assert!(budget.admit(&name));
            let stored: usize = budget.tree.nodes.iter().map(|x| x.children.len()).sum();
            assert_eq!((stored, budget.tree.nodes.len()), (n, n + 1));
            let sets = key_sets([name.as_str()]);
            assert_eq!(sets.iter().skip(1).map(Vec::len).sum::<usize>(), n);
        }
    }

    #[test]
    fn the_hash_is_nginx_s() {
        // ngx_hash("ab") = 'a' * 31 + 'b'.
        assert_eq!(ngx_hash_key_lc(b"ab"), 97 * 31 + 98);
        assert_eq!(ngx_hash_key_lc(b"AB"), ngx_hash_key_lc(b"ab"));
        // "c0" and "an" collide: 99 * 31 + 48 = 97 * 31 + 110.
        assert_eq!(ngx_hash_key_lc(b"c0"), ngx_hash_key_lc(b"an"));
        assert_eq!(element_size(0), 16);
        assert_eq!(element_size(6), 16);
        assert_eq!(element_size(7), 24);
        assert_eq!(element_size(253), 8 + 256);
    }

    /// Every port's catch-all writes `server_name ""`, a key of the port's server-name hash:
    /// the sizes written hold it beside the names. 1,277 names `N.x`: before, 64-byte buckets
    /// and 676 of them, which hold the names but not the empty one beside them (NGINX warns
    /// "could not build optimal server_names_hash").
    #[test]
    fn the_catch_all_s_empty_name_is_a_key() {
        let names: Vec<String> = (0..1277).map(|i| format!("{i}.x")).collect();
        let s = server_names(names.iter().map(String::as_str), 64).expect("sizes");
        let mut keys: Vec<(u64, usize)> =
            names.iter().map(|n| (ngx_hash_key_lc(n.as_bytes()), n.len())).collect();
        keys.push((0, 0));
        assert!(first_fit(&keys, s.bucket_size, s.max_size).is_some(), "{s:?}");
    }

    #[test]
    fn few_short_names_need_nothing() {
        assert_eq!(server_names(["a.example", "b.example", "*.c.example"], 64), None);
        assert_eq!(map_hostnames(["a.example"], 64), None);
        assert_eq!(variables(10, 20), None);
    }

    /// Whatever the names, the sizes returned build every hash within max_size (the search
    /// NGINX runs succeeds): many names, long names, wildcards, colliding names.
    #[test]
    fn the_sizes_returned_build_every_hash() {
        let long = |i: usize| format!("{i:05}.{}.example", "a".repeat(57));
        let mut cases: Vec<Vec<String>> = vec![
            (0..3000).map(|i| format!("h{i}.example")).collect(),
            (0..600).map(|i| format!("{i}.{}", "x".repeat(240))).collect(),
            (0..400).map(|i| format!("*.w{i}.example")).collect(),
            (0..100).map(long).collect(),
        ];
        // 64 names with one hash: "c0"/"an" blocks.
        cases.push(
            (0..64u32)
                .map(|m| {
                    let blocks: String =
                        (0..6).map(|b| if m >> b & 1 == 1 { "c0" } else { "an" }).collect();
                    format!("{blocks}.example")
                })
                .collect(),
        );
        for names in &cases {
            let sets = key_sets(names.iter().map(String::as_str));
            let s = server_names(names.iter().map(String::as_str), 64)
                .unwrap_or(HashSizes { bucket_size: 64, max_size: 512 });
            for k in &sets {
                assert!(
                    first_fit(k, s.bucket_size, s.max_size).is_some(),
                    "{} names from {:?}: {s:?}",
                    names.len(),
                    names[0]
                );
            }
        }
    }

    /// Names crafted to share one bucket (1,024 of 253 bytes with one hash; 1,024 wildcard
    /// labels of 63 bytes with one hash, at one level of the tree) and ordinary ones: the
    /// names [`NameBudget`] admits, oldest first, build with the sizes written for them (and
    /// for any part of them: every other one), in the server-name hashes and the SNI map;
    /// all of them, with the sizes written for all, do not (NGINX refused the configuration).
    #[test]
    fn the_names_admitted_always_build() {
        let blocks = |i: usize| -> String {
            (0..10).map(|b| if i >> b & 1 == 1 { "c0" } else { "an" }).collect()
        };
        let mut names: Vec<String> = (0..50).map(|i| format!("h{i}.example")).collect();
        names.extend((0..1024).map(|i| {
            format!(
                "{}{}.{}.{}.{}",
                blocks(i),
                "x".repeat(43),
                "y".repeat(63),
                "z".repeat(63),
                "w".repeat(61)
            )
        }));
        names.extend((0..1024).map(|i| format!("*.{}{}.example", blocks(i), "x".repeat(43))));
        let mut budget = NameBudget::default();
        let admitted: Vec<&str> =
            names.iter().map(String::as_str).filter(|n| budget.admit(n)).collect();
        // The ordinary names first: all of them kept.
        assert_eq!(&admitted[..50], &names.iter().map(String::as_str).collect::<Vec<_>>()[..50]);
        // 65,256 bytes hold 247 elements of 264 and 815 of 80.
        assert_eq!(admitted.len(), 50 + 247 + 815);
        let halves: Vec<&str> = admitted.iter().copied().step_by(2).collect();
        for set in [&admitted, &halves] {
            let s = server_names(set.iter().copied(), 64)
                .unwrap_or(HashSizes { bucket_size: 64, max_size: 512 });
            assert!(nginx_builds(set.iter().copied(), s), "{s:?}");
            let m = map_hostnames(set.iter().copied(), 64)
                .unwrap_or(HashSizes { bucket_size: 64, max_size: 2048 });
            assert!(nginx_builds(set.iter().copied(), m), "{m:?}");
        }
        let all = names.iter().map(String::as_str);
        let s = server_names(all.clone(), 64).expect("sizes");
        assert!(!nginx_builds(all, s));
    }

    /// Whatever the names, every `*_hash_bucket_size` written is one NGINX takes with any
    /// cache line it may decide at run time (64 to 256: it rounds the size up to it and
    /// refuses one past 65,536 less it). Before: 65,472 for colliding names, 65,536 on s390x.
    #[test]
    fn the_bucket_sizes_written_hold_with_any_cache_line() {
        let colliding: Vec<String> = (0..1024)
            .map(|i: usize| {
                let blocks: String =
                    (0..10).map(|b| if i >> b & 1 == 1 { "c0" } else { "an" }).collect();
                format!("{blocks}{}.example", "x".repeat(200))
            })
            .collect();
        let sets = [colliding, (0..3000).map(|i| format!("h{i}.example")).collect()];
        for names in &sets {
            let names = || names.iter().map(String::as_str);
            let written = [server_names(names(), 64), map_hostnames(names(), 64)];
            for n in written.iter().flatten().map(|s| s.bucket_size) {
                for cacheline in [64, 128, 256] {
                    assert!(align(n, cacheline) <= 65536 - cacheline, "{n} at {cacheline}");
                }
            }
        }
    }
}
