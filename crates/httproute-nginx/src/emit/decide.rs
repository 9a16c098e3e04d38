//! The tenant words NGINX cannot take, decided before the configuration is written.
//!
//! A word is refused by the writer ([`crate::conf`]) only for what NGINX's parser cannot take:
//! a control character of data, a word past [`MAX_WORD`] bytes, a location path not starting
//! with `/`, a server name NGINX would read as a regex; and a rule passes a limit no directive
//! raises (a GRPCRoute's header name past [`FIXED_BUCKET_HEADER`]). Whether a unit may hold
//! such a word is a bound on its values ([`may_refuse`]): a word's data is written in at most 4
//! bytes a byte (a regex's and the quotes' escapes), 20 for a `$`, around at most [`CODE`]
//! bytes of the generator's. The units that may are then written without text kept, alone
//! (the servers' own words and the rules that may), and the words the writer refuses there
//! leave out their units: the same words, the same units and the same reasons as writing the
//! whole configuration would find. A plan none of whose units may (every plan of CRD-valid
//! values but long or `$`-laden ones) is not looked at again.

use std::collections::HashSet;

use crate::conf::{MAX_WORD, unwritable};
use crate::plan::{Loc, Plan, RulePlan, ServerPlan};

use super::http::emit_once;
use super::options::{Options, Tree, Work};
use super::state::{FIXED_BUCKET_HEADER, Skip, Unit};
use super::tls::certificate_files;

/// The most bytes of the generator's own text in one word around a tenant's data (a CORS
/// origin's regex, a redirect's URL, a rewritten prefix's regex: under 100).
const CODE: usize = 256;

/// The units a word NGINX cannot take leaves out, each with the word's reason, in the order
/// the configuration would be written; `skip`: what is left out already.
pub(super) fn refused_words(
    plan: &Plan,
    opts: &Options,
    skip: &Skip,
    work: &mut Work,
) -> Result<Vec<(Unit, String)>, String> {
    let mut any = false;
    let mut rules: HashSet<crate::plan::RuleId> = HashSet::new();
    let mut seen: HashSet<*const RulePlan> = HashSet::new();
    for s in plan.ports.iter().flat_map(|p| &p.servers) {
        any |= server_may_refuse(s, opts);
        for r in &s.rules {
            if seen.insert(std::sync::Arc::as_ptr(r)) && !skip.rule(&r.id) && rule_may_refuse(r) {
                rules.insert(r.id.clone());
            }
        }
    }
    if !any && rules.is_empty() {
        return Ok(Vec::new());
    }
    work.checked += rules.len();
    let check = Skip { only: Some(rules), ..skip.clone() };
    let (_, refused, units) = emit_once(plan, opts, Tree::Drop, &check)?;
    Ok(refused.into_iter().map(|(o, why)| (units[o as usize].clone(), why)).collect())
}

/// Whether data `text` may make a word NGINX cannot take.
pub fn may_refuse(text: &str) -> bool {
    let dollars = text.bytes().filter(|&b| b == b'$').count();
    text.chars().any(unwritable) || CODE + 4 * text.len() + 20 * dollars > MAX_WORD
}

/// Whether a word of server `s`'s own (its names, its locations' paths, its certificates)
/// may be one NGINX cannot take.
fn server_may_refuse(s: &ServerPlan, opts: &Options) -> bool {
    let name = |h: &str| may_refuse(h) || h.starts_with('~') || h.contains('$');
    let path = |l: &Loc| match l {
        Loc::Exact(p) | Loc::Prefix(p) => may_refuse(p) || !p.starts_with('/'),
    };
    let files = |c: &String| {
        let (crt, key) =
            opts.certificates.get(c).cloned().unwrap_or_else(|| certificate_files(opts, c));
        may_refuse(&crt) || may_refuse(&key)
    };
    s.hostname.as_deref().is_some_and(name)
        || s.fallback.as_ref().is_some_and(|f| f.as_deref().is_some_and(name))
        || s.locations.iter().any(|l| path(&l.loc))
        || s.certificates.iter().any(files)
}

/// Whether a word of rule `r` (its locations, maps, shares, upstreams) may be one NGINX
/// cannot take: every string of the rule, as its `Debug` text holds them (whatever field they
/// are in), summed as if they were one word's; or a GRPCRoute's long header name.
fn rule_may_refuse(r: &RulePlan) -> bool {
    use std::fmt::Write as _;
    let mut w = Weigh::default();
    let _ = write!(w, "{r:?}");
    if w.escape || CODE + 4 * w.bytes + 20 * w.dollars > MAX_WORD {
        return true;
    }
    let long = |m: &crate::model::HeaderModifier| {
        let names = m.set.iter().chain(&m.add).map(|h| &h.name).chain(&m.remove);
        names.into_iter().any(|n| n.len() > FIXED_BUCKET_HEADER)
    };
    r.grpc
        && [&r.request_headers, &r.response_headers]
            .into_iter()
            .chain(r.backends.iter().flat_map(|b| [&b.request_headers, &b.response_headers]))
            .any(long)
}

/// The strings of a `Debug` text (the bytes between its unescaped `"`s; the plan holds no
/// `char`, whose `'"'` would be one): their bytes, their `$`s, and whether one holds an
/// escape other than `\\` and `\"` (a control character, or another character `Debug`
/// escapes).
#[derive(Default)]
struct Weigh {
    in_str: bool,
    escaped: bool,
    bytes: usize,
    dollars: usize,
    escape: bool,
}

impl std::fmt::Write for Weigh {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for b in s.bytes() {
            if !self.in_str {
                self.in_str = b == b'"';
                continue;
            }
            if self.escaped {
                self.escaped = false;
                self.escape |= !matches!(b, b'\\' | b'"');
                self.bytes += 1;
                continue;
            }
            match b {
                b'\\' => self.escaped = true,
                b'"' => self.in_str = false,
                b'$' => {
                    self.dollars += 1;
                    self.bytes += 1;
                }
                _ => self.bytes += 1,
            }
        }
        Ok(())
    }
}
