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
use crate::model::{Cors, HeaderModifier, HeaderValue, PathModifier, RequestRedirect, UrlRewrite};
use crate::plan::{Backend, Loc, Plan, Pool, RulePlan, ServerPlan, Target};

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
/// cannot take: its strings summed as if they were one word's; or a GRPCRoute's long header
/// name.
fn rule_may_refuse(r: &RulePlan) -> bool {
    let (mut bytes, mut dollars, mut control) = (0, 0, false);
    rule_strings(r, &mut |s| {
        bytes += s.len();
        dollars += s.bytes().filter(|&b| b == b'$').count();
        control |= s.chars().any(unwritable);
    });
    if control || CODE + 4 * bytes + 20 * dollars > MAX_WORD {
        return true;
    }
    let long = |m: &HeaderModifier| {
        let names = m.set.iter().chain(&m.add).map(|h| &h.name).chain(&m.remove);
        names.into_iter().any(|n| n.len() > FIXED_BUCKET_HEADER)
    };
    r.grpc
        && [&r.request_headers, &r.response_headers]
            .into_iter()
            .chain(r.backends.iter().flat_map(|b| [&b.request_headers, &b.response_headers]))
            .any(long)
}

/// Every string of rule `r` a word may be written from, to `f` (a list joined with `", "`:
/// each element and its joiner). The patterns name every field, so a field added to these
/// types does not build until it is given here or said not to be written.
fn rule_strings(r: &RulePlan, f: &mut dyn FnMut(&str)) {
    let RulePlan {
        id: _,
        rule_name: _,
        backends,
        request_headers,
        response_headers,
        redirect,
        rewrite,
        match_prefix,
        mirrors,
        cors,
        grpc: _,
        retry: _,
        timeout_ms: _,
        match_count: _,
        skipped_matches: _,
    } = r;
    for b in backends {
        let Backend {
            index: _,
            target,
            tls: _,
            weight: _,
            request_headers,
            response_headers,
            problem: _,
        } = b;
        target_strings(target, f);
        header_strings(request_headers, f);
        header_strings(response_headers, f);
    }
    header_strings(request_headers, f);
    header_strings(response_headers, f);
    let path = |p: &Option<PathModifier>, f: &mut dyn FnMut(&str)| {
        if let Some(PathModifier { kind, replace_full_path, replace_prefix_match }) = p {
            f(kind);
            replace_full_path.iter().chain(replace_prefix_match).for_each(|s| f(s));
        }
    };
    if let Some(r) = redirect {
        let RequestRedirect { scheme, hostname, path: p, port: _, status_code: _ } = &**r;
        scheme.iter().chain(hostname).for_each(|s| f(s));
        path(p, f);
    }
    if let Some(r) = rewrite {
        let UrlRewrite { hostname, path: p } = &**r;
        hostname.iter().for_each(|s| f(s));
        path(p, f);
    }
    f(match_prefix);
    for (t, _) in mirrors {
        target_strings(t, f);
    }
    if let Some(c) = cors {
        let Cors {
            allow_origins,
            allow_credentials: _,
            allow_methods,
            allow_headers,
            expose_headers,
            max_age: _,
        } = &**c;
        for s in [allow_origins, allow_methods, allow_headers, expose_headers].into_iter().flatten()
        {
            f(s);
            f(", ");
        }
    }
}

fn target_strings(t: &Target, f: &mut dyn FnMut(&str)) {
    match t {
        Target::Upstream { name, servers } => {
            f(name);
            servers.iter().for_each(|s| f(s));
        }
        Target::Resolve(addr) => f(addr),
        Target::Status(_) => {}
        Target::Inference(p) => {
            let Pool { id, upstream, servers, picker, fail_open: _ } = &**p;
            [id, upstream].into_iter().chain(servers).for_each(|s| f(s));
            target_strings(picker, f);
        }
    }
}

fn header_strings(m: &HeaderModifier, f: &mut dyn FnMut(&str)) {
    let HeaderModifier { set, add, remove } = m;
    for HeaderValue { name, value } in set.iter().chain(add) {
        f(name);
        f(value);
    }
    remove.iter().for_each(|s| f(s));
}
