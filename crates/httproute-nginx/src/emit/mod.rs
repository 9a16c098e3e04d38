//! The plan as NGINX configuration and `matches.json`. Configuration text is written only
//! through the typed writer of [`crate::conf`]: this module builds the tree of directives,
//! with every byte from the manifests or the command line as data ([`Part::Data`]).
//!
//! Emit writes what the plan decided (servers merged over ports, header filters merged,
//! retries expanded: see [`crate::plan`]). One file per NGINX block:
//! - this file: [`emit_with`]: what is left out (the plan's refusals: its budgets and the
//!   tenant words NGINX cannot take, `plan/words.rs`; NGINX's, `crate::nginx_check`), then one pass
//!   that writes the rest;
//! - `options`: the options and the output; `state`: the writer's state during a pass and the
//!   helpers of every block;
//! - `http`: one pass: the main context and the `http` block around the servers;
//! - `location`: a rule's internal locations (redirect, proxy, filters, backends, mirrors);
//! - `upstream`: `split_clients` shares;
//! - `maps`: the `map` blocks (SNI, raw path, upgrade, preflight);
//! - `cors`: a rule's CORS filter (its maps and headers);
//! - `tls`: an HTTPS server's certificates and SNI check.
//!
//! Imports go one way: `state` and `options` import no other file here; `upstream`, `maps`,
//! `tls`, `cors` import those; `location` imports `state` and `upstream`; `http` imports
//! the blocks; this file imports `http`, `options` and `state`, and none imports it.

mod cors;
mod http;
mod inference;
mod location;
mod maps;
mod options;
mod state;
mod tls;
mod upstream;

pub use crate::limits::FIXED_BUCKET_HEADER;
pub use options::{Carrier, Options, Output, Streams, Tree, Work};
pub use upstream::basis_points;

use std::collections::HashSet;

use crate::plan::{Dropped, PathKind, Plan, Reason, RuleId, ServerAt, makes};

pub use crate::plan::Unit;
use http::emit_pass;
use state::Skip;
pub use tls::certificate_files;

pub fn emit(plan: &Plan, opts: &Options) -> Result<Output, String> {
    emit_with(plan, opts, Tree::Keep)
}

/// [`emit`], with or without [`Output::tree`].
///
/// A tenant object's failure is confined to it: what is left out is decided before the
/// configuration is written ([`Plan::refused`]: a word NGINX cannot take, `plan/words.rs`,
/// leaves out the smallest [`Unit`] that holds it; a budget; NGINX's refusal,
/// `crate::nginx_check`), each with a warning and [`Output::dropped`]; the configuration is
/// then written once. A word refused while writing is a bug of the generator: an error.
pub fn emit_with(plan: &Plan, opts: &Options, tree: Tree) -> Result<Output, String> {
    emit_left_out(plan, opts, tree, None, |_| Ok(()))
}

/// [`emit_with`] without the tree, nginx.conf and matches.json written to `streams` as they
/// are made, byte for byte the texts [`emit_with`] returns: beyond the plan, emit then holds
/// one server's nodes and text at a time, the lists' keys (not their text) and the `http`
/// block's own parts. The output's texts are empty. `before` is given what is left out
/// ([`Output::dropped`]) before anything is written.
pub fn emit_streamed(
    plan: &Plan,
    opts: &Options,
    streams: Streams<'_>,
    before: impl FnOnce(&[Dropped]) -> Result<(), String>,
) -> Result<Output, String> {
    emit_left_out(plan, opts, Tree::Drop, Some(streams), before)
}

/// [`emit_with`], streamed when `streams` is given ([`emit_streamed`]).
fn emit_left_out(
    plan: &Plan,
    opts: &Options,
    tree: Tree,
    streams: Option<Streams<'_>>,
    before: impl FnOnce(&[Dropped]) -> Result<(), String>,
) -> Result<Output, String> {
    let mut left = LeftOut::default();
    left.add(plan, plan.refused.iter().cloned());
    before(&left.dropped)?;
    let mut out = emit_pass(plan, opts, tree, &left.skip, streams)?;
    left.warnings.append(&mut out.warnings);
    out.warnings = left.warnings;
    out.dropped = left.dropped;
    left.work.listed = out.work.listed;
    out.work = left.work;
    Ok(out)
}

/// What a configuration leaves out, and the warnings and [`Dropped`] records of it.
#[derive(Default)]
struct LeftOut {
    skip: Skip,
    dropped: Vec<Dropped>,
    // The matches said with a left-out location, once each. Not in `skip`: see `location`.
    said_matches: HashSet<Unit>,
    warnings: Vec<String>,
    work: Work,
}

impl LeftOut {
    /// Leaves out each unit of `units` (once), with its reason.
    /// A location's units go last: its matches are recorded only for the routes served in its
    /// server (not those left out there, by route, rule or attachment).
    fn add(&mut self, plan: &Plan, units: impl IntoIterator<Item = (Unit, String)>) {
        let mut locations = Vec::new();
        for (unit, why) in units {
            match unit {
                _ if !self.skip.add(&unit) => {}
                Unit::Location(at, li) => locations.push(((at, li), why)),
                unit => self.say(unit, why),
            }
        }
        for (at, why) in locations {
            self.location(plan, at, &why);
        }
    }

    /// Records `unit` left out: its warning and its [`Dropped`].
    fn say(&mut self, unit: Unit, why: String) {
        let (said, reason, why) = match &unit {
            // The rule's fields are named after it (`field`): said once.
            Unit::Rule(id) => {
                let why = strip(&why, id);
                (format!("{id}: {why}; the rule is not served"), Reason::UnsupportedValue, why)
            }
            Unit::BackendShare { rule, index } => {
                let why = strip(&why, rule);
                let said = format!(
                    "{rule}: backendRefs[{index}]: {why}; its share of requests answers 500"
                );
                (said, Reason::UnsupportedValue, why)
            }
            Unit::Match { rule, index } => {
                let said = format!("{rule} match {index}: {why}; the match is not served");
                (said, Reason::UnsupportedValue, why)
            }
            Unit::Listener(id) => {
                let said = format!("listener {id}: {why}; the listener is not programmed");
                (said, Reason::Invalid, why)
            }
            Unit::Route(id) => {
                (format!("{id}: {why}; the route is not served"), Reason::UnsupportedValue, why)
            }
            Unit::Attachment { route, gateway } => {
                let said =
                    format!("{route}: {why}; the route is not served through Gateway {gateway}");
                (said, Reason::NotAllowedByListeners, why)
            }
            // `add` says a location as its matches.
            Unit::Location(..) => return,
        };
        self.warnings.push(said);
        self.dropped.push(Dropped { unit, reason, message: why });
    }

    /// The matches that make location `li` of server `(pi, si)` ([`makes`], as the plan
    /// makes locations), said left out: those of the routes served in that server (a route
    /// whose attachment to its Gateway is left out is not, and is said with its attachment).
    /// Not put in `skip`, which is keyed by rule, not by server: a location a budget refuses
    /// is made only by refused routes (so none is said here), and a path `plan/words.rs`
    /// refuses is refused in every longer path that holds its matches, so these matches are
    /// in no location NGINX serves whether skipped or not, and a shorter path that does not
    /// make the location (another tenant's `PathPrefix /api` beside `Exact /api/`) is never
    /// taken for one that does.
    fn location(&mut self, plan: &Plan, ((pi, si), li): (ServerAt, usize), why: &str) {
        let server = &plan.ports[pi].servers[si];
        let loc = &server.locations[li];
        self.work.candidates += loc.len();
        let off = self.skip.at(server);
        // A match of a rule already left out is said with its rule.
        let matches: Vec<Unit> = loc
            .candidates()
            .filter(|c| c.path_kind != PathKind::Regex && !off.candidate(c))
            .filter(|c| makes(&loc.loc, c))
            .map(|c| Unit::Match { rule: c.id.clone(), index: c.match_index })
            .collect();
        for unit in matches {
            if self.said_matches.insert(unit.clone()) {
                self.say(unit, why.to_owned());
            }
        }
    }
}

/// `why` without the rule's name in front (`field` names a rule's fields after it).
fn strip(why: &str, id: &RuleId) -> String {
    match why.strip_prefix(&format!("{id}: ")) {
        Some(rest) => rest.to_owned(),
        None => why.to_owned(),
    }
}
