//! Every tenant value that becomes an NGINX word, judged once before anything is written: the
//! one validator of NGINX's word syntax. Each value is put in the word the writer puts it in
//! (with the generator's text around it, at its place in its directive: [`Pos`]) and asked of
//! [`check_word`], the writer's own judge, quoted (the longest way the
//! writer writes a word: a bare one is never longer). A word NGINX cannot take (a control
//! character, past 4,094 bytes, a path or a server name it would read otherwise, a GRPCRoute
//! header name past the grpc module's fixed hash bucket) refuses the smallest unit that holds
//! it ([`Unit`]): a backendRef's share for its target or its own filters, a rule for its
//! filters and mirrors, a match's location for its path, the owners of a server name
//! (its routes, else its listener) and a listener for its certificates. So the writer never
//! meets a tenant word it refuses.
//!
//! Where a word holds more than the value (a redirect's port, the URI after an upstream's
//! name, a certificate's directory), the most the generator writes there is assumed.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};

use crate::limits::FIXED_BUCKET_HEADER;
use crate::model::{Cors, HeaderModifier, PathModifier};
use crate::syntax::{
    Arg, HOSTNAME_FIELD, MAX_WORD, PATH_FIELD, Part, Pos, braced_var, check_word, code, data,
    is_var_name, regex_data, var,
};

use super::budget::{self, Left};
use super::entry::word_bytes;
use super::ids::{Ages, RouteId, RuleId, Unit};
use super::types::{Kept, Loc, LocationPlan, PortPlan, RulePlan, Segment, ServerPlan, Target};

/// What `proxy_pass` writes after an upstream's name at the most.
const URI: &str = "$httproute_path$is_args$args";
/// Room for the directory of a Secret's certificate file (`--dir`, the operator's).
const CERT_DIR: usize = 512;

type Field = Cow<'static, str>;

/// Word `parts`, quoted, at `pos`: the writer's verdict.
fn word(pos: Pos, parts: Vec<Part>) -> Result<(), String> {
    check_word(&Arg::parts(parts).quoted(), pos)
}

/// The units the plan's words refuse, each with the writer's reason, in the plan's order (a
/// caller that changes a plan's `ports` asks again: [`super::Plan::refused`]).
pub fn refusals(ports: &[PortPlan]) -> Vec<(Unit, String)> {
    let mut out = Vec::new();
    let mut seen: BTreeSet<Unit> = BTreeSet::new();
    let mut push = |r: Unit, why: String, out: &mut Vec<(Unit, String)>| {
        if seen.insert(r.clone()) {
            out.push((r, why));
        }
    };
    // Servers share a route's rule plans ([`RulePlan`] behind an `Arc`): each judged once.
    let mut rules = rustc_hash::FxHashSet::default();
    // The upstreams whose words were taken: one upstream serves many rules.
    let mut upstreams = HashSet::new();
    for (pi, p) in ports.iter().enumerate() {
        for (si, s) in p.servers.iter().enumerate() {
            if let Err(why) = server_name(s) {
                for o in name_owners(s) {
                    push(o, why.clone(), &mut out);
                }
            }
            if let Some(l) = &s.listener
                && let Err(why) = certificates(s)
            {
                push(Unit::Listener(l.clone()), why, &mut out);
            }
            for (li, l) in s.locations.iter().enumerate() {
                let (Loc::Exact(path) | Loc::Prefix(path)) = &l.loc;
                if let Err(why) = word(Pos::LocationPath, vec![data(PATH_FIELD, path.clone())]) {
                    push(Unit::Location((pi, si), li), why, &mut out);
                }
            }
            for r in s.rules.iter().filter(|r| rules.insert(std::sync::Arc::as_ptr(r))) {
                if let Err(why) = rule(r) {
                    push(Unit::Rule(r.id.clone()), why, &mut out);
                    continue;
                }
                for b in &r.backends {
                    let filters = headers(r, &b.request_headers, &b.response_headers);
                    let target = filters.and_then(|()| target_once(&b.target, &mut upstreams));
                    if let Err(why) = target {
                        let share = Unit::BackendShare { rule: r.id.clone(), index: b.index };
                        push(share, why, &mut out);
                    }
                }
            }
        }
    }
    out
}

/// Who a server's name is written for: the routes that alone bring it, else its listener.
fn name_owners(s: &ServerPlan) -> BTreeSet<Unit> {
    if s.brought_by.is_empty() {
        s.listener.iter().cloned().map(Unit::Listener).collect()
    } else {
        s.brought_by.iter().cloned().map(Unit::Route).collect()
    }
}

/// A server's name and fallback name, in every word they are written in: `server_name`, the
/// SNI map's key and value, `http_matches_fallback`, the SNI check's regex.
fn server_name(s: &ServerPlan) -> Result<(), String> {
    for h in s.hostname.iter().chain(s.fallback.iter().flatten()) {
        for pos in [Pos::ServerName, Pos::MapKey, Pos::Variables] {
            word(pos, vec![data(HOSTNAME_FIELD, h.clone())])?;
        }
        let re = regex_data(HOSTNAME_FIELD, h.clone());
        word(Pos::Literal, vec![code("^(|"), re, code(")$")])?;
    }
    Ok(())
}

/// A server's certificate files (`DIR/certs/NAMESPACE_NAME.crt`).
fn certificates(s: &ServerPlan) -> Result<(), String> {
    for c in &s.certificates {
        let dir = code("d".repeat(CERT_DIR));
        let f = "certificate file (--certificate, Secret)";
        word(Pos::Variables, vec![dir, data(f, c.replace('/', "_")), code(".crt")])?;
    }
    Ok(())
}

/// A rule's own words: its filters (and its backends' header names on a GRPCRoute, whose
/// hash is the rule's), redirect, rewrite, mirrors and CORS.
fn rule(r: &RulePlan) -> Result<(), String> {
    let f = |name: &str| -> Field { format!("{}: {name}", r.id).into() };
    headers(r, &r.request_headers, &r.response_headers)?;
    if r.grpc {
        let own = [(&r.request_headers, &r.response_headers)].into_iter();
        let backends = r.backends.iter().map(|b| (&b.request_headers, &b.response_headers));
        for (req, resp) in own.chain(backends) {
            grpc_names(req, resp)?;
        }
    }
    if let Some(rd) = &r.redirect {
        let scheme = rd
            .scheme
            .as_ref()
            .map_or(var("scheme"), |s| data(f("RequestRedirect scheme"), s.clone()));
        let host = rd
            .hostname
            .as_ref()
            .map_or(var("host"), |h| data(f("RequestRedirect hostname"), h.clone()));
        let tail = [code(":65535"), var("httproute_path"), var("is_args"), var("args")];
        let parts = [scheme, code("://"), host].into_iter().chain(tail).collect();
        word(Pos::Variables, parts)?;
        path(rd.path.as_ref(), &r.match_prefix, f("RequestRedirect path"))?;
    }
    if let Some(rw) = &r.rewrite {
        if let Some(h) = &rw.hostname {
            word(Pos::Variables, vec![data(f("URLRewrite hostname"), h.clone())])?;
        }
        path(rw.path.as_ref(), &r.match_prefix, f("URLRewrite path"))?;
    }
    for (t, _) in &r.mirrors {
        target(t)?;
    }
    r.cors.as_deref().map_or(Ok(()), |c| cors(c, &f))
}

/// A header filter's words: names as they are (`proxy_set_header NAME`, `add_header NAME`,
/// `proxy_hide_header NAME`), values with variables, and an added request header's value after
/// the client's (`"${http_NAME},VALUE"`).
fn headers(r: &RulePlan, req: &HeaderModifier, resp: &HeaderModifier) -> Result<(), String> {
    let f = |name: &str| -> Field { format!("{}: {name}", r.id).into() };
    for (m, kind) in [(req, "RequestHeaderModifier"), (resp, "ResponseHeaderModifier")] {
        // No words: no field names formatted (most rules have no header filter).
        if m.set.is_empty() && m.add.is_empty() && m.remove.is_empty() {
            continue;
        }
        let (name_f, value_f) =
            (f(&format!("{kind} header name")), f(&format!("{kind} header value")));
        for n in m.set.iter().chain(&m.add).map(|h| &h.name).chain(&m.remove) {
            word(Pos::Literal, vec![data(name_f.clone(), n.clone())])?;
        }
        for h in m.set.iter().chain(&m.add) {
            word(Pos::Variables, vec![data(value_f.clone(), h.value.clone())])?;
        }
    }
    for h in &req.add {
        let sent = format!("http_{}", h.name.to_ascii_lowercase().replace('-', "_"));
        if is_var_name(&sent) {
            let value = data(f("RequestHeaderModifier header value"), h.value.clone());
            word(Pos::Variables, vec![braced_var(sent), code(","), value])?;
        }
    }
    Ok(())
}

/// The grpc module's header hashes have fixed 64-byte buckets (no directive raises them):
/// the names set and hidden must fit one.
fn grpc_names(req: &HeaderModifier, resp: &HeaderModifier) -> Result<(), String> {
    let names = req.set.iter().chain(&req.add).map(|h| &h.name).chain(&req.remove);
    let hidden = resp.set.iter().map(|h| &h.name).chain(&resp.remove);
    match names.chain(hidden).find(|n| n.len() > FIXED_BUCKET_HEADER) {
        Some(n) => Err(format!(
            "header name {n:?} of a GRPCRoute filter: {} bytes; the grpc module's header hash \
             holds names of at most {FIXED_BUCKET_HEADER}",
            n.len()
        )),
        None => Ok(()),
    }
}

/// A path filter's words: the new path, the new prefix before the rest of the path, and the
/// matched prefix as a regex.
fn path(p: Option<&PathModifier>, prefix: &str, f: Field) -> Result<(), String> {
    let Some(p) = p else { return Ok(()) };
    let (replacement, _) = p.replacement();
    word(Pos::Variables, vec![data(f.clone(), replacement.clone())])?;
    let more = data(f, replacement.trim_end_matches('/').to_owned());
    word(Pos::Variables, vec![more, braced_var("httproute_rest")])?;
    let prefix = regex_data(PATH_FIELD, prefix.trim_end_matches('/').to_owned());
    word(Pos::Literal, vec![code("^"), prefix, code("(?<httproute_rest>/[^?]*)")])
}

/// CORS: each origin as a map key's regex (its scheme, host and port escaped, a `*` host
/// written `[^/:]+`), and each list joined with `", "` as a map value.
fn cors(c: &Cors, f: &dyn Fn(&str) -> Field) -> Result<(), String> {
    for o in c.allow_origins.iter().filter(|o| *o != "*") {
        let origin = regex_data(f("CORS allowOrigins[]"), o.clone());
        word(Pos::MapKey, vec![code("~*^"), origin, code("[^/:]+$")])?;
    }
    for (l, name) in [
        (&c.allow_methods, "CORS allowMethods"),
        (&c.allow_headers, "CORS allowHeaders"),
        (&c.expose_headers, "CORS exposeHeaders"),
    ] {
        if !l.is_empty() {
            word(Pos::Variables, vec![data(f(name), l.join(", "))])?;
        }
    }
    Ok(())
}

/// Where a share or a mirror goes: an upstream's name (its block, and after `proxy_pass`'s
/// scheme) and addresses, an address resolved per request, an InferencePool's upstream and its
/// picker (whose name the writer puts in the generator's text of `http_matches_epp`).
/// [`target`], an upstream's words judged once (`taken`: the upstreams they fit).
fn target_once<'a>(
    t: &'a Target,
    taken: &mut HashSet<(&'a str, &'a [String])>,
) -> Result<(), String> {
    let Target::Upstream { name, servers } = t else { return target(t) };
    let key = (name.as_str(), &servers[..]);
    if !taken.contains(&key) {
        target(t)?;
        taken.insert(key);
    }
    Ok(())
}

fn target(t: &Target) -> Result<(), String> {
    let name = |n: &String| data("backend upstream name", n.clone());
    let upstream = |n: &String, servers: &[String]| -> Result<(), String> {
        word(Pos::Literal, vec![name(n)])?;
        word(Pos::Variables, vec![name(n)])?;
        word(Pos::Variables, vec![code("grpcs://"), name(n), code(URI)])?;
        servers
            .iter()
            .try_for_each(|s| word(Pos::Literal, vec![data("backend address", s.clone())]))
    };
    match t {
        Target::Upstream { name, servers } => upstream(name, servers),
        Target::Resolve(addr) => word(Pos::Variables, vec![data("backend address", addr.clone())]),
        Target::Status(_) => Ok(()),
        Target::Inference(p) => {
            upstream(&p.upstream, &p.servers)?;
            target(&p.picker)?;
            let picker = match &p.picker {
                Target::Upstream { name, .. } => name,
                Target::Resolve(addr) => addr,
                _ => return Ok(()),
            };
            match picker.chars().any(char::is_control) {
                true => {
                    Err(format!("InferencePool {}: picker {picker:?}: a control character", p.id))
                }
                false => Ok(()),
            }
        }
    }
}

/// With `--carrier inline` or `variable` a location's whole list is one word, single-quoted
/// (`http_matches '[...]'` at `pos` [`Pos::Literal`]; `set $http_matches '[...]'` at
/// [`Pos::Variables`], a `$` spelled `${httproute_dollar}`). Its rules are admitted oldest
/// first ([`Ages::attached`] to the server's Gateway, then the rule id) while the word
/// stays within NGINX's [`MAX_WORD`]; a rule whose entries do not fit beside older rules' is
/// refused: its route's attachment to that Gateway when the route is served through other
/// Gateways too (`budget::multi_gateway`: its older attachments keep serving), else the rule
/// (everywhere: the other lists only get shorter). So a newer rule or Gateway never refuses
/// an older one. Units `before` refused are not in the lists. Each entry's bytes are the
/// writer's (its own word less the quotes: quoting and `$` are per character), the word is
/// the entries, their commas, `[]` and the quotes; each candidate is measured once, whatever
/// the number of locations that hold it.
pub(super) fn lists(
    ports: &[PortPlan],
    ages: &Ages,
    before: &[(Unit, String)],
    pos: Pos,
) -> Vec<(Unit, String)> {
    lists_walked(ports, ages, before, pos).0
}

/// The lists' walk: what is left out so far (the units `before` refused and those refused
/// here), and each candidate's bytes in a list word, by its place in its block (the block's
/// entries measured once, whatever the locations that hold it).
struct Lists<'a> {
    pos: Pos,
    multi: BTreeSet<&'a RouteId>,
    left: Left,
    bytes: rustc_hash::FxHashMap<usize, Vec<Option<usize>>>,
    out: Vec<(Unit, String)>,
}

impl<'a> Lists<'a> {
    /// The bytes of candidate `i` of run `run` in a list word, and its comma ([`MAX_WORD`],
    /// which no list holds, past it alone or not written).
    fn bytes(&mut self, run: &Segment, i: usize) -> usize {
        let block = self.bytes.entry(run.id().0).or_insert_with(|| vec![None; run.block.len()]);
        let at = run.range.start + i;
        let n = *block[at]
            .get_or_insert_with(|| word_bytes(&run.block[at].entry, self.pos).unwrap_or(MAX_WORD));
        n + 1
    }

    /// Location `l` of server `s`, whose Gateway is at place `gateway`: its kept candidates
    /// admitted oldest first, the units of those that do not fit refused.
    fn location(
        &mut self,
        (s, l, port): (&'a ServerPlan, &'a LocationPlan, u16),
        (ages, gateway): (&Ages, usize),
        kept: &mut Kept,
    ) {
        // (age, rule, entry bytes and its comma) of the entries written.
        let mut entries: Vec<((usize, usize), &'a RuleId, usize)> = Vec::new();
        let off = self.left.at(s);
        for (run, i) in kept.places(l, |c| !off.candidate(c)) {
            let c = &run.candidates()[i];
            entries.push((ages.attached(&c.id.route, gateway), &c.id, self.bytes(run, i)));
        }
        entries.sort();
        // The quotes, `[` and `]`, less the comma the first entry does not have.
        let mut used = 3;
        for rule in entries.chunk_by(|x, y| x.1 == y.1) {
            let id = rule[0].1;
            let cost: usize = rule.iter().map(|e| e.2).sum();
            // Refused here through an earlier rule of its route: not written.
            let gone = self.left.at(s).route(&id.route);
            if gone || used + cost <= MAX_WORD {
                used += if gone { 0 } else { cost };
                continue;
            }
            let why = list_refused(&l.loc, s.hostname.as_deref(), port, used + cost);
            let unit = match budget::unit(&id.route, s, &self.multi) {
                Unit::Route(_) => Unit::Rule(id.clone()),
                unit => unit,
            };
            self.left.add(&unit);
            self.out.push((unit, why));
        }
    }
}

/// [`lists`], and the candidates it looked at ([`Kept`]: a rule refused is not looked at
/// again in the runs that held it, so the walk is bounded by what the lists can hold). The
/// attachments refused counted as used space in the lists walked before them: judged again
/// without them, until a walk refuses no new attachment or after [`WALKS`] walks (one walk in
/// all when none is refused). Space a refused attachment still holds after the last walk only
/// refuses what is newer than it: never an older tenant's rule.
fn lists_walked(
    ports: &[PortPlan],
    ages: &Ages,
    before: &[(Unit, String)],
    pos: Pos,
) -> (Vec<(Unit, String)>, usize) {
    let (mut out, mut walked) = walk(ports, ages, before, pos);
    let mut detached: Vec<(Unit, String)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for walks in 1.. {
        // The walk leaves out what it is given: a refused attachment is new (else: no loop).
        let new = out.iter().filter(|(r, _)| matches!(r, Unit::Attachment { .. }));
        let new: Vec<(Unit, String)> =
            new.filter(|(r, _)| seen.insert(r.clone())).cloned().collect();
        if new.is_empty() || walks == WALKS {
            break;
        }
        detached.extend(new);
        let again: Vec<(Unit, String)> = before.iter().chain(&detached).cloned().collect();
        let (next, more) = walk(ports, ages, &again, pos);
        (out, walked) = (next, walked + more);
    }
    (detached.into_iter().chain(out).collect(), walked)
}

/// The most walks of the lists in [`lists_walked`]: the work stays linear in the lists
/// (a chain of refusals, each freeing space that refuses a newer attachment, is cut there).
const WALKS: usize = 4;

/// One walk of the lists, the units `before` refused left out.
fn walk(
    ports: &[PortPlan],
    ages: &Ages,
    before: &[(Unit, String)],
    pos: Pos,
) -> (Vec<(Unit, String)>, usize) {
    let mut kept = Kept::default();
    // The walk refuses rules and attachments: the servers and locations written stay these.
    let written = Left::of(before);
    let multi = budget::multi_gateway(ports);
    let mut w =
        Lists { pos, multi, left: written.clone(), bytes: Default::default(), out: Vec::new() };
    for (at, s, gateway) in written.servers(ports, ages) {
        for (_, l) in written.locations_of(at, s) {
            w.location((s, l, ports[at.0].port), (ages, gateway), &mut kept);
        }
    }
    (w.out, kept.walked)
}

fn list_refused(loc: &Loc, host: Option<&str>, port: u16, bytes: usize) -> String {
    let (eq, p) = match loc {
        Loc::Exact(p) => ("= ", p),
        Loc::Prefix(p) => ("", p),
    };
    format!(
        "its matches would make the list of location {eq}{p:?} of server {} port {port} \
         {bytes} bytes, one nginx.conf word beside older rules' entries; NGINX takes at most \
         {MAX_WORD} (a list is one word with --carrier inline or variable: use --carrier \
         preload; budget: list word)",
        host.unwrap_or("_")
    )
}

#[cfg(test)]
mod tests {

    use crate::plan::{Unit, plan_yaml};
    use crate::syntax::Pos;

    /// The rules `lists` refuses (inline carrier) for route a/x created on day `x` and b/y on
    /// day `y`, each one rule on `/` with a 2,500-byte header value (two such entries do not
    /// fit one 4094-byte list), both older than the Gateway they share (day 9).
    fn refused(x: u32, y: u32) -> Vec<String> {
        let v = "v".repeat(2500);
        let mut yaml = "kind: Gateway\nmetadata: {name: gw, namespace: g, creationTimestamp: \"2026-01-09T00:00:00Z\"}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]\n".to_owned();
        for (ns, name, day) in [("a", "x", x), ("b", "y", y)] {
            yaml += &format!(
                "---\nkind: HTTPRoute\nmetadata: {{name: {name}, namespace: {ns}, creationTimestamp: \"2026-01-0{day}T00:00:00Z\"}}\nspec:\n  parentRefs: [{{name: gw, namespace: g}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /}}, headers: [{{name: x-v, value: {v}}}]}}]\n"
            );
        }
        let p = plan_yaml(&yaml, |o| o.list_word = Some(Pos::Literal));
        let rules = p.refused.iter().filter_map(|(r, _)| match r {
            Unit::Rule(id) => Some(id.to_string()),
            _ => None,
        });
        rules.collect()
    }

    /// (candidates the list judging looked at, candidates the lists hold) for `n` routes of
    /// a regex path and `n` of a plain prefix on one hostless listener: every location's list
    /// holds every regex candidate (n x 2n in all), about 100 of which fit one list.
    fn walked(n: usize) -> (usize, usize) {
        let mut yaml = "kind: Gateway\nmetadata: {name: gw, namespace: a}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP}]\n".to_owned();
        for k in 0..n {
            yaml += &format!(
                "---\nkind: HTTPRoute\nmetadata: {{name: p{k}, namespace: a}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /p{k}}}}}]\n---\nkind: HTTPRoute\nmetadata: {{name: q{k}, namespace: a}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: RegularExpression, value: \"/q{k}/[a-z]+\"}}}}]\n"
            );
        }
        let p = plan_yaml(&yaml, |o| {
            (o.regex_memory_per_tenant, o.regex_memory_total) = (usize::MAX, usize::MAX);
        });
        assert!(p.refused.is_empty(), "{:?}", p.refused);
        let (refused, walked) = super::lists_walked(&p.ports, &p.ages, &[], Pos::Literal);
        assert!(refused.len() > n / 2, "{n}: {} refused", refused.len());
        let locations = p.ports.iter().flat_map(|p| &p.servers).flat_map(|s| &s.locations);
        (walked, locations.map(|l| l.len()).sum())
    }

    /// The list judging looks at each run in full once, then only at what is still kept
    /// (`Kept`): at 2n routes about twice the work at n, while the candidates of all lists
    /// (what the walk looked at before, each location's in full) are about 4x.
    #[test]
    fn the_list_walk_is_linear_while_the_lists_candidates_are_quadratic() {
        let ((w1, all1), (w2, all2)) = (walked(100), walked(200));
        eprintln!("walked {w1} -> {w2}, lists {all1} -> {all2}");
        assert!(all2 > 3 * all1, "{all1} -> {all2}");
        assert!(w2 <= 2 * w1 + w1 / 10, "{w1} -> {w2} (lists: {all1} -> {all2})");
    }

    /// Brief gr (stale space): Gateway g/gw's listeners h1.test and h2.test (walked in that
    /// order), inline lists of 4,094 bytes. R (a 1,500-byte header on `/`, also on o/gw) does
    /// not fit h2's list beside b's older 3,000-byte entry: R's attachment to g/gw is refused.
    /// s's newer 3,000-byte entry on h1 then fits (R's entries are not written there). Before,
    /// h1's list counted R's: s's rule was refused too.
    #[test]
    fn an_attachment_refused_in_a_later_list_frees_the_space_it_took_in_earlier_ones() {
        let gw = |ns: &str, ls: &str| {
            format!(
                "kind: Gateway\nmetadata: {{name: gw, namespace: {ns}, creationTimestamp: \"2026-01-01T00:00:00Z\"}}\nspec:\n  listeners: [{ls}]\n"
            )
        };
        let route = |ns: &str, day: u32, refs: &str, len: usize| {
            format!(
                "kind: HTTPRoute\nmetadata: {{name: r, namespace: {ns}, creationTimestamp: \"2026-01-0{day}T12:00:00Z\"}}\nspec:\n  parentRefs: {refs}\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /}}, headers: [{{name: x-v, value: {}}}]}}]\n",
                "v".repeat(len)
            )
        };
        let all = "allowedRoutes: {namespaces: {from: All}}";
        let yaml = [
            gw("g", &format!("{{name: l1, port: 80, protocol: HTTP, hostname: h1.test, {all}}}, {{name: l2, port: 80, protocol: HTTP, hostname: h2.test, {all}}}")),
            gw("o", &format!("{{name: l, port: 81, protocol: HTTP, {all}}}")),
            route("b", 1, "[{name: gw, namespace: g, sectionName: l2}]", 3000),
            route("r", 2, "[{name: gw, namespace: g}, {name: gw, namespace: o}]", 1500),
            route("s", 3, "[{name: gw, namespace: g, sectionName: l1}]", 3000),
        ]
        .join("---\n");
        let p = plan_yaml(&yaml, |o| o.list_word = Some(Pos::Literal));
        let refused: Vec<String> = p.refused.iter().map(|(r, _)| format!("{r:?}")).collect();
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].starts_with("Attachment") && refused[0].contains("\"r\""));
    }

    /// Review L3: a two-level cascade. Gateway g/gw's listeners l0..l3 (ports 80..83, walked
    /// in that order), inline lists of 4,094 bytes, routes on `/` with one header of 1,500
    /// (`a1`, `a2`: also on o/gw) or 3,000 bytes, older first p, a1, x, a2, y. Walk 1: y does
    /// not fit l0 beside a2, x not l1 beside a1, a1 not l3 beside p (its attachment to g/gw
    /// refused). Walk 2, a1 detached: x fits l1, and in l2 a2 no longer fits beside it (a2's
    /// attachment refused). Walk 3, a2 detached too: y fits l0. The result is the fixed point
    /// (walked until no new attachment is refused): both attachments, no rule.
    #[test]
    fn a_two_level_cascade_of_walks_ends_at_the_fixed_point() {
        let gw = |ns: &str, ls: &str| {
            format!(
                "kind: Gateway\nmetadata: {{name: gw, namespace: {ns}, creationTimestamp: \"2026-01-01T00:00:00Z\"}}\nspec:\n  listeners: [{ls}]\n"
            )
        };
        let listener = |k: u16| {
            format!(
                "{{name: l{k}, port: {}, protocol: HTTP, hostname: h{k}.test, allowedRoutes: {{namespaces: {{from: All}}}}}}",
                80 + k
            )
        };
        let route = |name: &str, day: u32, ls: &[u16], len: usize| {
            let mut refs: Vec<String> = ls
                .iter()
                .map(|k| format!("{{name: gw, namespace: g, sectionName: l{k}}}"))
                .collect();
            if len == 1500 {
                refs.push("{name: gw, namespace: o}".into());
            }
            format!(
                "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: t, creationTimestamp: \"2026-01-0{day}T00:00:00Z\"}}\nspec:\n  parentRefs: [{}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /}}, headers: [{{name: x-v, value: {}}}]}}]\n",
                refs.join(", "),
                "v".repeat(len)
            )
        };
        let ls: Vec<String> = (0..4).map(listener).collect();
        let yaml = [
            gw("g", &ls.join(", ")),
            gw(
                "o",
                "{name: l, port: 90, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}",
            ),
            route("p", 2, &[3], 3000),
            route("a1", 3, &[1, 3], 1500),
            route("x", 4, &[1, 2], 3000),
            route("a2", 5, &[0, 2], 1500),
            route("y", 6, &[0], 3000),
        ]
        .join("---\n");
        let p = plan_yaml(&yaml, |o| o.list_word = Some(Pos::Literal));
        let show = |us: &[(Unit, String)]| -> Vec<String> {
            let mut v: Vec<String> = us.iter().map(|(u, _)| format!("{u:?}")).collect();
            v.sort();
            v
        };
        // The fixed point: walked until a walk refuses no new attachment.
        let mut detached: Vec<(Unit, String)> = Vec::new();
        let fixed = loop {
            let (out, _) = super::walk(&p.ports, &p.ages, &detached, Pos::Literal);
            let attachment = |u: &Unit| matches!(u, Unit::Attachment { .. });
            let new: Vec<_> = out.iter().filter(|(u, _)| attachment(u)).cloned().collect();
            if new.is_empty() {
                break [detached, out].concat();
            }
            detached.extend(new);
        };
        let (walked, _) = super::lists_walked(&p.ports, &p.ages, &[], Pos::Literal);
        assert_eq!(show(&walked), show(&fixed));
        let refused = show(&p.refused);
        assert_eq!(refused.len(), 2, "{refused:?}");
        let named = |r: &str| refused.iter().any(|u| u.starts_with("Attachment") && u.contains(r));
        assert!(named("\"a1\"") && named("\"a2\""), "{refused:?}");
    }

    /// Behind a newer shared Gateway, the newer of two routes is refused, whichever it is
    /// ([`super::Ages::attached`]). Before, both were as old as the Gateway and the tie went by
    /// namespace/name: b/y was refused in both orders (fails on gf with x newer).
    #[test]
    fn list_ties_behind_a_newer_gateway_go_newest_first() {
        assert_eq!(refused(1, 2), ["b/y rule 0"]);
        assert_eq!(refused(2, 1), ["a/x rule 0"]);
    }
}
