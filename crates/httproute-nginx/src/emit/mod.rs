//! The plan as NGINX configuration and `matches.json`. Configuration text is written only
//! through the typed writer of [`crate::conf`]: this module builds the tree of directives,
//! with every byte from the manifests or the command line as data ([`Part::Data`]).
//!
//! Emit writes what the plan decided (servers merged over ports, header filters merged,
//! retries expanded: see [`crate::plan`]). One file per NGINX block:
//! - this file: the passes of [`emit_with`] (a tenant object whose words NGINX cannot take is
//!   left out and the configuration written again);
//! - `options`: the options and the output; `state`: the writer's state during a pass and the
//!   helpers of every block;
//! - `http`: one pass: the main context and the `http` block around the servers;
//! - `location`: a rule's internal locations (redirect, proxy, filters, backends, mirrors);
//! - `upstream`: `split_clients` shares;
//! - `maps`: the `map` blocks (SNI, raw path, upgrade, preflight);
//! - `cors`: a rule's CORS filter (its maps and headers);
//! - `tls`: an HTTPS server's certificates and SNI check.
//!
//! Imports go one way: `state` imports no other file here, `options` only `state` (the
//! output names the objects written for); `upstream`, `maps`,
//! `tls`, `cors` import those; `location` imports `state` and `upstream`; `http` imports
//! the blocks; this file imports `http`, `options` and `state`, and none imports it.

mod cors;
mod http;
mod location;
mod maps;
mod options;
mod state;
mod tls;
mod upstream;

pub use options::{Carrier, Options, Output, Tree, Work};
pub use state::FIXED_BUCKET_HEADER;
pub use upstream::basis_points;

use std::collections::HashSet;

use crate::plan::{Dropped, DroppedUnit, Loc, PathKind, Plan, Reason, Refused};

use http::emit_once;
use state::Skip;
pub use state::Unit;
pub use tls::certificate_files;

pub fn emit(plan: &Plan, opts: &Options) -> Result<Output, String> {
    emit_with(plan, opts, Tree::Keep)
}

/// [`emit`], with or without [`Output::tree`].
///
/// A tenant object's failure is confined to it: every directive is written with the object it
/// comes from ([`Provenance`], the smallest [`Unit`] that holds it), and a word NGINX cannot
/// take (a control character, a word past its 4,094 bytes) leaves out that object (a
/// backendRef's share, the match's location, the rule, the route, the listener), with a
/// warning and [`Output::dropped`], and the configuration is written again without it. Each pass
/// leaves out every object it finds, and at least one more than the pass before, so the
/// passes end; in practice there are two. Only the run's own words (options, the generator's
/// text) are an error.
pub fn emit_with(plan: &Plan, opts: &Options, tree: Tree) -> Result<Output, String> {
    emit_dropping(plan, opts, tree, &[])
}

/// The objects the plan's budgets refuse ([`Plan::refused`]), as units left out.
fn budget_drops(plan: &Plan) -> impl Iterator<Item = (Unit, String)> + '_ {
    plan.refused.iter().map(|(r, why)| match r {
        Refused::Listener(id) => (Unit::Listener(id.clone()), why.clone()),
        Refused::Route(id) => (Unit::Route(id.clone()), why.clone()),
    })
}

/// Words refused in a pass, by object number, and the objects.
type Refusals = (Vec<(u32, String)>, Vec<Unit>);

/// [`emit_with`], with the units of `drops` left out from the start, each with its reason (as
/// a word NGINX cannot take leaves out its unit): what NGINX refused in an earlier output
/// (`crate::nginx_check`).
pub fn emit_dropping(
    plan: &Plan,
    opts: &Options,
    tree: Tree,
    drops: &[(Unit, String)],
) -> Result<Output, String> {
    let mut skip = Skip::default();
    let mut dropped: Vec<Dropped> = Vec::new();
    // The matches among `dropped`: looked up per candidate of a dropped location, so a hash
    // set, not a scan of `dropped`.
    let mut dropped_matches: HashSet<DroppedUnit> = HashSet::new();
    let mut warnings = Vec::new();
    let mut work = Work::default();
    // The plan's budgets' refusals, then the drops given, as a pass that refused them.
    let drops: Vec<(Unit, String)> = budget_drops(plan).chain(drops.iter().cloned()).collect();
    let mut first: Option<Refusals> = (!drops.is_empty()).then(|| {
        let units = drops.iter().map(|(u, _)| u.clone()).collect();
        let refused = drops.iter().enumerate().map(|(i, (_, w))| (i as u32, w.clone())).collect();
        (refused, units)
    });
    loop {
        let (out, refused, units) = match first.take() {
            Some((refused, units)) => (None, refused, units),
            None => {
                let pass = emit_once(plan, opts, tree, &skip)?;
                work.passes += 1;
                // A pass that writes holds its objects in the output (`Output::units`).
                work.units += pass.0.as_ref().map_or(pass.2.len(), |o| o.all_units().count());
                pass
            }
        };
        let Some(mut out) = out else {
            let before = skip.len();
            for (o, why) in refused {
                match &units[o as usize] {
                    Unit::Rule(id) => {
                        // The rule's fields are named after it (`field`): said once.
                        let why = match why.strip_prefix(&format!("{id}: ")) {
                            Some(rest) => rest.to_owned(),
                            None => why,
                        };
                        if skip.rules.insert(id.clone()) {
                            warnings.push(format!("{id}: {why}; the rule is not served"));
                            dropped.push(Dropped {
                                unit: DroppedUnit::Rule(id.clone()),
                                reason: Reason::UnsupportedValue,
                                message: why,
                            });
                        }
                    }
                    Unit::BackendShare { rule, index } => {
                        let why = match why.strip_prefix(&format!("{rule}: ")) {
                            Some(rest) => rest.to_owned(),
                            None => why,
                        };
                        if skip.shares.insert((rule.clone(), *index)) {
                            warnings.push(format!(
                                "{rule}: backendRefs[{index}]: {why}; its share of requests \
                                 answers 500"
                            ));
                            dropped.push(Dropped {
                                unit: DroppedUnit::BackendShare {
                                    rule: rule.clone(),
                                    index: *index,
                                },
                                reason: Reason::UnsupportedValue,
                                message: why,
                            });
                        }
                    }
                    Unit::Listener(id) => {
                        if skip.listeners.insert(id.clone()) {
                            warnings.push(format!(
                                "listener {id}: {why}; the listener is not programmed"
                            ));
                            dropped.push(Dropped {
                                unit: DroppedUnit::Listener(id.clone()),
                                reason: Reason::Invalid,
                                message: why,
                            });
                        }
                    }
                    Unit::Route(id) => {
                        if skip.routes.insert(id.clone()) {
                            warnings.push(format!("{id}: {why}; the route is not served"));
                            dropped.push(Dropped {
                                unit: DroppedUnit::Route(id.clone()),
                                reason: Reason::UnsupportedValue,
                                message: why,
                            });
                        }
                    }
                    Unit::Location((pi, si), li) => {
                        if !skip.locations.insert(((*pi, *si), *li)) {
                            continue;
                        }
                        let loc = &plan.ports[*pi].servers[*si].locations[*li];
                        let path = match &loc.loc {
                            Loc::Exact(p) | Loc::Prefix(p) => p.trim_end_matches('/'),
                        };
                        // The matches whose path is the location's.
                        work.candidates += loc.len();
                        for c in loc.candidates() {
                            let unit =
                                DroppedUnit::Match { rule: c.id.clone(), index: c.match_index };
                            if c.path_kind != PathKind::Regex
                                && c.path.trim_end_matches('/') == path
                                && !dropped_matches.contains(&unit)
                            {
                                warnings.push(format!(
                                    "{} match {}: {why}; the match is not served",
                                    c.id, c.match_index
                                ));
                                dropped_matches.insert(unit.clone());
                                dropped.push(Dropped {
                                    unit,
                                    reason: Reason::UnsupportedValue,
                                    message: why.clone(),
                                });
                            }
                        }
                    }
                }
            }
            if before == skip.len() {
                return Err(format!(
                    "generator bug: a configuration word NGINX cannot take, again: {warnings:?}"
                ));
            }
            continue;
        };
        warnings.append(&mut out.warnings);
        out.warnings = warnings;
        out.dropped = dropped;
        out.work = work;
        return Ok(out);
    }
}
