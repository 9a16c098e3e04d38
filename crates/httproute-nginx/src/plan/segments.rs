//! Where a location's candidate list splits into runs that other locations share.
//!
//! Precedence sorts a server's candidates by host rank, then path type (Exact, regex, prefix),
//! then path length. Whether a candidate is in a location's list depends only on its path type
//! and path ([`super::Loc::covered_by`]), so every list holds each *block* of candidates (one
//! host rank, one path type, one path; for regexes, one host rank) whole or not at all, in one
//! order. The server holds each block once ([`super::precedence::locations`]); a location's
//! list is the maximal runs of one block each: within a host rank, the exact candidates of its
//! path, every regex candidate, and the prefix candidates of each ancestor, deepest first
//! ([`runs`]). Emit writes each run once (its own key) and each list as includes of them
//! (`crate::lists`), so the plan and the output grow with the candidates and the locations,
//! not with their product.

use std::sync::Arc;

use super::types::{Candidate, PathKind, Segment, host_rank};

/// The block of a candidate: its host rank, path type and (but for a regex) path.
pub(super) fn block(c: &Candidate) -> ((usize, usize), u8, &str) {
    let (kind, path) = match c.path_kind {
        PathKind::Exact => (0, c.path.as_str()),
        PathKind::Regex => (1, ""),
        PathKind::Prefix => (2, c.path.as_str()),
    };
    (host_rank(c.route_hostname.as_deref()), kind, path)
}

/// The list of the blocks `taken` (indexes into `blocks`, each block in precedence order and
/// not empty) as its maximal runs of one block each, in precedence order: together they are
/// every candidate of those blocks, sorted.
///
/// Blocks of HTTPRoutes do not interleave (their keys differ in host rank, path type or path
/// length first): the runs are the blocks, sorted, found in `taken` log `taken` steps. A
/// block that comes in pieces (GRPCRoutes rank service and method, not path type) is cut where
/// another block's candidate comes between: a run per piece.
pub(super) fn runs(blocks: &[Arc<[Candidate]>], mut taken: Vec<usize>) -> Vec<Segment> {
    // A block taken twice (`/` is every path's ancestor, and `= /`'s own) is one run.
    taken.sort_unstable();
    taken.dedup();
    taken.retain(|&b| !blocks[b].is_empty());
    let head = |b: usize| blocks[b][0].key;
    let tail = |b: usize| blocks[b][blocks[b].len() - 1].key;
    taken.sort_by_key(|&b| head(b));
    let whole = |b: usize| Segment { block: Arc::clone(&blocks[b]), range: 0..blocks[b].len() };
    if taken.windows(2).all(|w| tail(w[0]) < head(w[1])) {
        return taken.into_iter().map(whole).collect();
    }
    // Interleaved: repeatedly the block whose next candidate comes first, up to the next
    // candidate of any other block.
    let mut at = vec![0; taken.len()];
    let mut out = Vec::new();
    loop {
        let next = |i: usize, at: &[usize]| blocks[taken[i]].get(at[i]).map(|c| c.key);
        let Some(i) =
            (0..taken.len()).filter(|&i| next(i, &at).is_some()).min_by_key(|&i| next(i, &at))
        else {
            break;
        };
        let bound = (0..taken.len()).filter(|&j| j != i).filter_map(|j| next(j, &at)).min();
        let b = &blocks[taken[i]];
        let start = at[i];
        let end = match bound {
            None => b.len(),
            Some(k) => (start + b[start..].partition_point(|c| c.key < k)).max(start + 1),
        };
        out.push(Segment { block: Arc::clone(b), range: start..end });
        at[i] = end;
    }
    out
}
