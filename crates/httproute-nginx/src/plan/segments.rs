//! Where a location's candidate list splits into runs that other locations share.
//!
//! Precedence sorts a server's candidates by host rank, then path type (Exact, regex, prefix),
//! then path length. Whether a candidate is in a location's list depends only on its path type
//! and path ([`super::Loc::covered_by`]), so every list holds each *block* of candidates (one
//! host rank, one path type, one path; for regexes, one host rank) whole or not at all, in one
//! order. A list is then a few maximal runs of one block each: within a host rank, the exact
//! candidates of its path, every regex candidate, and the prefix candidates of each ancestor,
//! deepest first. Each run is written once (its own key) and each list as includes of them
//! (`crate::lists`), so the output grows with the candidates and the locations, not with
//! their product.

use std::ops::Range;

use super::precedence::host_rank;
use super::{Candidate, PathKind};

/// The block of a candidate: its host rank, path type and (but for a regex) path.
fn block(c: &Candidate) -> ((usize, usize), u8, &str) {
    let (kind, path) = match c.path_kind {
        PathKind::Exact => (0, c.path.as_str()),
        PathKind::Regex => (1, ""),
        PathKind::Prefix => (2, c.path.as_str()),
    };
    (host_rank(&c.route_hostname), kind, path)
}

/// The maximal runs of one block each of `list` (a location's candidates in precedence
/// order), in order; together they are the whole list.
///
/// Runs are cut where the block changes, whatever the order of the blocks: a block that comes
/// in two pieces (GRPCRoutes rank service and method, not path type) is two runs, and the
/// lists are still exactly the candidates, in order.
pub fn runs(list: &[&Candidate]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for (i, c) in list.iter().enumerate() {
        match out.last_mut() {
            Some(r) if block(list[r.start]) == block(c) => r.end = i + 1,
            _ => out.push(i..i + 1),
        }
    }
    debug_assert_eq!(out.iter().map(|r| r.len()).sum::<usize>(), list.len());
    out
}
