//! One pass of the writer: the main context and the `http` block around the servers.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};

use crate::conf::{Arg, Node, Rendered, Stmt, Writer, code, data};
use crate::plan::{
    Candidate, Entry, Kept, Loc, LocationPlan, Merged, Plan, RuleId, RulePlan, ServerAt,
    ServerPlan, Target,
};

use super::maps::{preflight_map, raw_path_map, upgrade_map};
use super::options::{Carrier, Options, Output, Streams, Tree, Work};
use super::state::{HOSTNAME_FIELD, Http, In, PATH_FIELD, Skip, d, empty, quoted};
use super::tls::{certificate_files, tls_server};

/// One pass of [`emit_with`] without the objects of `skip`. What is left out is decided
/// before it (the plan's refusals, NGINX's given): a word refused while writing is a bug of
/// the generator, an error. With `streams`, each server's text goes to the scratch file as soon as it is written, and
/// nginx.conf and matches.json to their streams at the end (the output's texts stay empty).
pub(super) fn emit_pass(
    plan: &Plan,
    opts: &Options,
    tree: Tree,
    skip: &Skip,
    streams: Option<Streams<'_>>,
) -> Result<Output, String> {
    let (scratch, ends) = match streams {
        Some(Streams { conf, matches, scratch }) => (Some(scratch), Some((conf, matches))),
        None => (None, None),
    };
    let mut pass = Pass::new(plan, opts, tree, skip);
    pass.scratch = scratch;
    for (pi, port) in plan.ports.iter().enumerate() {
        // A port whose servers are all written with an earlier port's needs no map of its own.
        if port.tls && plan.merged.writes_any(pi) {
            pass.sni_map(pi);
        }
        for si in 0..port.servers.len() {
            // A server that listens on several ports is written once, where its first port
            // would have it.
            if let Some(all_members) = plan.merged.members(pi, si) {
                pass.server((pi, si), all_members)?;
            }
        }
    }
    pass.finish(tree, ends)
}

/// What one pass reads (the plan, the options, what it leaves out) and what it has written so
/// far.
struct Pass<'p> {
    plan: &'p Plan,
    opts: &'p Options,
    skip: &'p Skip,
    /// Ports listened on: a port none of whose listeners is left is not.
    alive: Vec<bool>,
    http: Http,
    /// The lists of matches.json, shared where they are the same (a redirect path names a
    /// location of the server that runs the list, so the same text means the same in every
    /// server).
    lists: crate::lists::Lists<'p>,
    /// Each server is written as soon as it is built (its nodes freed): the output is the
    /// plan's and one server's.
    servers: Writer,
    server_tree: Vec<Stmt>,
    /// Streamed: where each server's text goes once written (its text is not kept).
    scratch: Option<&'p mut std::fs::File>,
    /// Candidates looked at to write lists in place ([`Work::listed`]).
    listed: usize,
}

impl<'p> Pass<'p> {
    fn new(plan: &'p Plan, opts: &'p Options, tree: Tree, skip: &'p Skip) -> Pass<'p> {
        let alive = Merged::listened(&plan.ports, &|l| skip.listeners.contains(l));
        Pass {
            plan,
            opts,
            skip,
            alive,
            http: Http {
                experimental: opts.experimental,
                epp_shim: opts.global.epp_shim.clone(),
                ..Http::default()
            },
            lists: crate::lists::Lists::default(),
            servers: Writer::stream(tree == Tree::Drop),
            server_tree: Vec::new(),
            scratch: None,
            listed: 0,
        }
    }

    fn at(&self, &(mp, ms): &ServerAt) -> &'p ServerPlan {
        &self.plan.ports[mp].servers[ms]
    }

    /// The SNI map of TLS port `pi`: the names of the servers written for it.
    fn sni_map(&mut self, pi: usize) {
        let port = &self.plan.ports[pi];
        let alive = self.alive[pi];
        let written = port.servers.iter().filter(|s| alive && self.skip.written(s));
        let tag = |s: &'p ServerPlan| s.listener_hostname.as_deref().unwrap_or("-");
        let names: Vec<(&str, &str)> =
            written.filter_map(|s| Some((s.hostname.as_deref()?, tag(s)))).collect();
        self.http.sni_map(port.port, names);
    }

    /// Server `(pi, si)` for the servers `all_members` it is written for: the catch-all of
    /// ports whose listener is left out, and the server of the members left.
    fn server(&mut self, (pi, si): ServerAt, all_members: &[ServerAt]) -> Result<(), String> {
        let server = self.at(&(pi, si));
        // The catch-all of a port whose listener is left out while others keep the port: a
        // server of no listener (404, or no TLS handshake).
        let orphans: Vec<ServerAt> = all_members
            .iter()
            .filter(|m| self.alive[m.0] && self.skip.listener_of(self.at(m)))
            .filter(|_| server.hostname.is_none())
            .copied()
            .collect();
        if !orphans.is_empty() {
            let body = self.orphan_body((pi, si), &orphans);
            self.push_server(body)?;
        }
        // The plan's budgets count the same servers (`Merged::written_for`).
        let skip = self.skip;
        let members =
            self.plan
                .merged
                .written_for((&self.plan.ports, &self.alive), (pi, si), &|s| skip.written(s));
        // Written once per fallback: the module looks its name up on the request's port, and a
        // server left out on one port alone changes where it leads there.
        for (fallback, group) in self.by_fallback(&members) {
            let at = group[0];
            let (mut body, falls_back) = self.server_head(at, &group, fallback);
            self.match_locations(at, falls_back, &mut body)?;
            self.rule_locations(at, &mut body)?;
            self.push_server(body)?;
        }
        Ok(())
    }

    /// `members` by their written fallbacks ([`crate::plan::PortPlan::fallback_written`], each on its own
    /// port), in the order of their first members.
    fn by_fallback(&self, members: &[ServerAt]) -> Vec<(Option<Option<String>>, Vec<ServerAt>)> {
        let written = |s: &ServerPlan| self.skip.written(s);
        let mut groups: Vec<(Option<Option<String>>, Vec<ServerAt>)> = Vec::new();
        for &m in members {
            let fallback = self.plan.ports[m.0].fallback_written(self.at(&m), &written);
            match groups.iter_mut().find(|(f, _)| *f == fallback) {
                Some((_, group)) => group.push(m),
                None => groups.push((fallback, vec![m])),
            }
        }
        groups
    }

    fn push_server(&mut self, body: Vec<Node>) -> Result<(), String> {
        let nodes = [Node::Blank, d("server").block(body).into()];
        self.servers.push(&nodes, 1, &mut self.server_tree)?;
        match self.scratch.as_deref_mut() {
            Some(f) => self.servers.drain_to(f),
            None => Ok(()),
        }
    }

    /// The 404 catch-all of the `orphans` of server `at` (ports whose listener is left out).
    fn orphan_body(&mut self, at: ServerAt, orphans: &[ServerAt]) -> Vec<Node> {
        let mut body = self.listen_lines(at, orphans);
        body.push(d("server_name").arg(empty()).into());
        let left: Vec<String> = orphans
            .iter()
            .filter_map(|m| self.at(m).listener.as_ref().map(|l| format!("listener {l}")))
            .collect();
        body.push(Node::Comment(format!("{} left out: 404", left.join(", "))));
        if self.plan.ports[at.0].tls {
            body.push(d("ssl_reject_handshake").code("on").into());
        }
        body.push(d("return").code("404").into());
        body
    }

    /// A server's lines before its locations (`listen`, names, HTTP/2, `fallback`, comments,
    /// TLS), and whether it falls back to another server.
    fn server_head(
        &mut self,
        (pi, si): ServerAt,
        members: &[ServerAt],
        fallback: Option<Option<String>>,
    ) -> (Vec<Node>, bool) {
        let port = &self.plan.ports[pi];
        let server = self.at(&(pi, si));
        // Merged servers are alike but for their listeners: one name and one set of
        // certificates for the members left, which all bring them.
        let mut body: Vec<Node> = self.listen_lines((pi, si), members);
        match &server.hostname {
            None => body.push(d("server_name").arg(empty()).into()),
            Some(h) => body.push(d("server_name").data(HOSTNAME_FIELD, h.clone()).into()),
        }
        if port.http2 && self.plan.capabilities.http2_directive {
            // gRPC: HTTP/2 by ALPN over TLS, or with prior knowledge (h2c) on a plain port,
            // where HTTP/1.1 still works (NGINX 1.25.1 and later).
            body.push(d("http2").code("on").into());
        }
        // Requests none of this server's routes answers go on in the server of the next
        // less specific hostname of its listener (the name's words are the server's own).
        let fallback = fallback.map(|f| match f {
            None => d("http_matches_fallback").arg(empty()),
            Some(w) => d("http_matches_fallback").data(HOSTNAME_FIELD, w),
        });
        let falls_back = fallback.is_some();
        body.extend(fallback.map(Node::from));
        let mut comments: Vec<String> = Vec::new();
        for m in members {
            let c = match &self.at(m).listener {
                Some(l) => format!("listener {l}"),
                None => "no listener serves this host: 404".to_owned(),
            };
            if !comments.contains(&c) {
                comments.push(c);
            }
        }
        body.extend(comments.into_iter().map(Node::Comment));
        if port.tls {
            // Merged servers' certificates are the same.
            tls_server(port.port, server, self.opts, &mut body);
        }
        (body, falls_back)
    }

    /// The internal locations of the rules server `(pi, si)`'s locations serve, and their
    /// mirrors' locations, into `body`.
    fn rule_locations(&mut self, (pi, si): ServerAt, body: &mut Vec<Node>) -> Result<(), String> {
        let port = &self.plan.ports[pi];
        let server = self.at(&(pi, si));
        let skip = self.skip;
        let off = skip.at(server);
        let mut mirror_locs = Vec::new();
        // The rules of the candidates served: each run looked at once, whatever the number
        // of locations holding it.
        let mut seen = HashSet::new();
        let used: BTreeSet<usize> = server
            .locations
            .iter()
            .enumerate()
            .filter(|(li, _)| !skip.locations.contains(&((pi, si), *li)))
            .flat_map(|(_, l)| &l.segments)
            .filter(|s| seen.insert(s.id()))
            .flat_map(|s| s.candidates())
            .filter(|c| !off.candidate(c))
            .map(|c| c.rule)
            .collect();
        for ri in used {
            let rule = &server.rules[ri];
            // BackendRef shares left out answer 500.
            let without_shares;
            let rule = if rule
                .backends
                .iter()
                .any(|b| skip.shares.contains(&(rule.id.clone(), b.index)))
            {
                without_shares = without(rule, &skip.shares);
                &without_shares
            } else {
                rule
            };
            self.http.rule_location((port.port, port.tls), ri, rule, body, &mut mirror_locs)?;
            self.http.collision.take().map_or(Ok(()), Err)?;
        }
        body.append(&mut mirror_locs);
        Ok(())
    }

    /// The `http` block around the servers written, the main context around it, and the
    /// output.
    fn finish(mut self, tree: Tree, ends: Option<Ends<'_>>) -> Result<Output, String> {
        let (plan, opts, http) = (self.plan, self.opts, &mut self.http);
        let render = match tree {
            Tree::Keep => Writer::render,
            Tree::Drop => Writer::render_text,
        };
        let mut warnings = std::mem::take(&mut http.warnings);
        // The names written (those of owners left out are not), every port's and TLS ports'.
        let (alive, skip) = (&self.alive, self.skip);
        let names = |tls: bool| -> Vec<&str> {
            let ports = plan.ports.iter().enumerate().filter(|(pi, p)| alive[*pi] && p.tls >= tls);
            let servers = ports.flat_map(|(_, p)| &p.servers);
            let written = servers.filter(|s| skip.written(s));
            written.filter_map(|s| s.hostname.as_deref()).collect()
        };
        let names = (names(false), names(true));
        let (mut inner, dollar_at) = http_preamble(opts, http, &names, &mut warnings);
        inner.append(&mut upstream_blocks(opts, http));
        inner.append(&mut http.splits);
        let mut nodes = main_context(opts, inner);
        let mut rendered: Rendered = render(&nodes)?;
        if rendered.dollar || self.servers.dollar_written() {
            drop(rendered);
            if let Some(Node::Directive(http)) = nodes.last_mut()
                && let Some(inner) = http.block_nodes_mut()
            {
                inner.insert(dollar_at, crate::conf::dollar_geo());
            }
            rendered = render(&nodes)?;
        }
        drop(nodes);
        let streamed = match (self.scratch, ends) {
            (Some(scratch), Some(ends)) => Some((scratch, ends)),
            _ => {
                self.servers.close_into(&mut rendered, self.server_tree)?;
                None
            }
        };
        let matches_json = match streamed {
            Some((scratch, (conf, matches))) => {
                write_around(&rendered.text, scratch, conf)?;
                rendered.text = String::new();
                self.lists.write_json(matches)?;
                String::new()
            }
            None => self.lists.json()?,
        };
        Ok(Output {
            nginx_conf: rendered.text,
            tree: rendered.tree,
            matches_json,
            matches_file: crate::emit_global::matches_file(&opts.global),
            files: secret_files(plan, opts),
            warnings,
            dropped: Vec::new(),
            work: Work { listed: self.listed, ..Default::default() },
        })
    }
}

/// The streams nginx.conf and matches.json are written to.
type Ends<'w> = (&'w mut dyn std::io::Write, &'w mut dyn std::io::Write);

/// nginx.conf to `conf`: `around` (the main context and the `http` block, which ends it) with
/// the servers' text (`scratch`, from its start) before the `http` block's closing `}`.
fn write_around(
    around: &str,
    scratch: &mut std::fs::File,
    conf: &mut dyn std::io::Write,
) -> Result<(), String> {
    use std::io::{Seek as _, Write as _};
    let Some(head) = around.strip_suffix("}\n") else {
        return Err("generator bug: the outer block does not end the text".into());
    };
    let io = |e: std::io::Error| format!("writing nginx.conf: {e}");
    let mut out = std::io::BufWriter::with_capacity(64 << 10, conf);
    out.write_all(head.as_bytes()).map_err(io)?;
    scratch.flush().map_err(io)?;
    scratch.rewind().map_err(io)?;
    std::io::copy(scratch, &mut out).map_err(io)?;
    out.write_all(b"}\n").map_err(io)?;
    out.flush().map_err(io)
}

/// Secrets that came with the manifests, where tls_server expects them (unless the command
/// line named other files).
fn secret_files(plan: &Plan, opts: &Options) -> std::collections::BTreeMap<String, Vec<u8>> {
    plan.secrets
        .iter()
        .filter(|(c, _)| !opts.certificates.contains_key(*c))
        .flat_map(|(c, (crt, key))| {
            let (crt_path, key_path) = certificate_files(opts, c);
            [(crt_path, crt.clone()), (key_path, key.clone())]
        })
        .collect()
}

/// `rule` with the backendRefs of `shares` answering 500 (their requests; the other shares
/// keep their weights).
fn without(rule: &RulePlan, shares: &std::collections::BTreeSet<(RuleId, usize)>) -> RulePlan {
    let mut r = rule.clone();
    for b in &mut r.backends {
        if shares.contains(&(rule.id.clone(), b.index)) {
            b.target = Target::Status(500);
        }
    }
    r
}

/// The `http` block's lines before its servers: temp paths, the lists' file, hash sizes, the
/// maps, the resolver (a warning in `warnings` when none is known). Also where the `geo` of
/// `$httproute_dollar` goes among them.
fn http_preamble(
    opts: &Options,
    http: &mut Http,
    (names, sni): &(Vec<&str>, Vec<&str>),
    warnings: &mut Vec<String>,
) -> (Vec<Node>, usize) {
    let mut inner: Vec<Node> =
        crate::emit_global::reload_report(&opts.global).into_iter().collect();
    inner.extend([
        crate::emit_global::access_log(&opts.global),
        d("client_body_temp_path").code("tmp/client_body").into(),
        d("proxy_temp_path").code("tmp/proxy").into(),
        d("fastcgi_temp_path").code("tmp/fastcgi").into(),
        d("uwsgi_temp_path").code("tmp/uwsgi").into(),
        d("scgi_temp_path").code("tmp/scgi").into(),
    ]);
    inner.extend(crate::emit_global::module_max_memory(&opts.global));
    if opts.carrier == Carrier::Preload {
        inner.push(
            d("http_matches_load").code(crate::emit_global::matches_file(&opts.global)).into(),
        );
    }
    // Server names (and the SNI map's keys) the CRD allows (253 bytes) but NGINX's default
    // hash buckets (64) do not hold; every hash NGINX builds of them and of the variables,
    // sized so that it builds them (`crate::limits`).
    inner.extend(crate::limits::hash_directives(
        names.iter().copied(),
        sni.iter().copied(),
        http.map_n + http.split_n + http.cors_n,
    ));
    if http.longest_header > 32 {
        // The CRD allows header names of 256 bytes; NGINX's default bucket (64) holds about 40.
        let size = (http.longest_header + 32).next_power_of_two().max(128);
        inner.push(d("proxy_headers_hash_bucket_size").code(size.to_string()).into());
    }
    // `geo $httproute_dollar` goes here when the writer spelled a `$` of data with it.
    let dollar_at = inner.len();
    inner.append(&mut http.maps);
    if http.raw_path {
        inner.push(raw_path_map());
    }
    if http.upgrade {
        inner.push(upgrade_map());
    }
    if http.preflight {
        inner.push(preflight_map());
    }
    if http.resolve {
        if opts.resolvers.is_empty() {
            warnings.push(
                "no resolver (--resolver, or a nameserver in /etc/resolv.conf): backends named \
                 by DNS answer 502"
                    .to_owned(),
            );
        } else {
            // Names are looked up when requests need them, cached for `valid`: a name that
            // does not resolve costs its own requests (502), never the configuration.
            let mut r = d("resolver");
            for a in &opts.resolvers {
                r = r.data("--resolver", a.clone());
            }
            inner.push(r.code("valid=10s").into());
            inner.push(d("resolver_timeout").code("5s").into());
        }
    }
    (inner, dollar_at)
}

/// The `upstream` blocks.
fn upstream_blocks(opts: &Options, http: &mut Http) -> Vec<Node> {
    let upstreams = std::mem::take(&mut http.upstreams);
    let mut inner = Vec::new();
    for (up, addrs) in &upstreams {
        let mut entries = Vec::new();
        if http.epp_pools.contains(up) {
            // The picker's list, walked in order within the pool (the module's balancer).
            entries.push(d("http_matches_epp_endpoints").into());
        }
        for addr in addrs.iter() {
            let mut s = d("server").data("backend address", addr.clone());
            if http.no_fail.contains(up) {
                // max_fails=0: a retried answer must not take the address out of the
                // upstream for fail_timeout.
                s = s.code("max_fails=0");
            }
            entries.push(s.into());
        }
        inner.push(Node::Blank);
        // The operator's (`--keepalive`).
        entries.extend(crate::emit_global::upstream_tail(&opts.global));
        inner.push(d("upstream").data("backend upstream name", up.clone()).block(entries).into());
    }
    inner
}

/// The main context around the `http` block's lines `inner`.
fn main_context(opts: &Options, inner: Vec<Node>) -> Vec<Node> {
    vec![
        Node::Comment(
            "Generated by httproute-nginx: do not edit; regenerate from the manifests.".into(),
        ),
        d("load_module").data("--module", opts.module.clone()).into(),
        crate::emit_global::worker_processes(&opts.global),
        d("pid").code("logs/nginx.pid").into(),
        d("error_log").code("logs/error.log").code("notice").into(),
        Node::Blank,
        crate::emit_global::events(&opts.global),
        Node::Blank,
        d("http").block(inner).into(),
    ]
}

impl<'p> Pass<'p> {
    /// The `listen` lines of server `at` (written at its first port) for its `members` left:
    /// one per member's port.
    fn listen_lines(&self, (pi, si): ServerAt, members: &[ServerAt]) -> Vec<Node> {
        let plan = self.plan;
        let port = &plan.ports[pi];
        let server = &port.servers[si];
        let legacy_http2 = !plan.capabilities.http2_directive;
        let mut lines = Vec::new();
        for m in members {
            let member_port = &plan.ports[m.0];
            let address = match &self.opts.listen_address {
                Some(a) => Arg::parts(vec![
                    data("--listen-address", a.clone()),
                    code(format!(":{}", member_port.port)),
                ]),
                None => Arg::code(member_port.port.to_string()),
            };
            let mut listen = d("listen").arg(address);
            if port.tls {
                listen = listen.code("ssl");
            }
            if port.http2 && legacy_http2 {
                // Before 1.25.1 (see `plan::Capabilities`): over TLS, ALPN keeps HTTP/1.1; a
                // plain port only gets here when it serves GRPCRoutes alone (h2c).
                listen = listen.code("http2");
            }
            if server.hostname.is_none() {
                listen = listen.code("default_server");
            }
            lines.push(listen.into());
        }
        lines
    }

    /// The match paths' locations of server `(pi, si)` into `body`, each with its list (the
    /// carrier's way) or, without one, 404 or the fallback's answer (`falls_back`).
    fn match_locations(
        &mut self,
        (pi, si): ServerAt,
        falls_back: bool,
        body: &mut Vec<Node>,
    ) -> Result<(), String> {
        let (plan, skip) = (self.plan, self.skip);
        let port = &plan.ports[pi];
        let server = &port.servers[si];
        let off = skip.at(server);
        // Lists written in place: each run looked at in full once, then for what it kept.
        let mut kept = Kept::default();
        for (li, loc) in server.locations.iter().enumerate() {
            if skip.locations.contains(&((pi, si), li)) {
                continue;
            }
            let head = match &loc.loc {
                Loc::Exact(p) => d("location").code("=").arg(quoted(PATH_FIELD, p.clone())),
                Loc::Prefix(p) => d("location").arg(quoted(PATH_FIELD, p.clone())),
            };
            let field = || list_field(&loc.loc, server.hostname.as_deref(), port.port);
            let inner = match self.opts.carrier {
                // Runs shared by locations written once, lists as includes of them.
                Carrier::Preload => {
                    self.lists.key(&loc.segments, &|c: &Candidate| !off.candidate(c))?.map(|key| {
                        vec![d("set").var("match_key").code(key).into(), d("http_matches").into()]
                    })
                }
                // The list is one word, judged in the plan (`plan/words.rs` lists: a rule that
                // does not fit is refused there), so the writer never meets one too long.
                Carrier::Inline => list_text(off, loc, &mut kept)?.map(|text| {
                    vec![d("http_matches").arg(Arg::data(field(), text).single_quoted()).into()]
                }),
                // `set` would read a `$` of a regex as a variable: the writer spells it
                // `${httproute_dollar}`.
                Carrier::Variable => list_text(off, loc, &mut kept)?.map(|text| {
                    vec![
                        d("set")
                            .var("http_matches")
                            .arg(Arg::data(field(), text).single_quoted())
                            .into(),
                        d("http_matches").into(),
                    ]
                }),
            };
            // No list: 404, or the fallback server's answer (an empty list has no winner).
            let inner = inner.unwrap_or_else(|| match falls_back {
                true => vec![d("http_matches").code("[]").into()],
                false => vec![d("return").code("404").into()],
            });
            body.push(head.inline(inner).into());
        }
        self.listed += kept.walked;
        Ok(())
    }
}

/// The whole list of location `loc` without what its server leaves out (`off`), for a carrier
/// that writes it in place (`None`: empty). `kept` is the server's: a run's candidates left
/// out are looked at once, not once per location that holds the run ([`Kept`]).
fn list_text(off: In<'_>, loc: &LocationPlan, kept: &mut Kept) -> Result<Option<String>, String> {
    let list: Vec<&Entry> =
        kept.of(loc, |c| !off.candidate(c)).into_iter().map(|c| &c.entry).collect();
    if list.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(&list).map(Some).map_err(|e| e.to_string())
}

/// The field of a location's list written in place, for errors.
fn list_field(loc: &Loc, host: Option<&str>, port: u16) -> Cow<'static, str> {
    let (eq, p) = match loc {
        Loc::Exact(p) => ("= ", p),
        Loc::Prefix(p) => ("", p),
    };
    format!(
        "the list of location {eq}{p:?} of server {} port {} (one configuration token: if it \
         is too long, use --carrier preload)",
        host.unwrap_or("_"),
        port
    )
    .into()
}
