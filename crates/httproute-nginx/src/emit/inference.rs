//! A rule with InferencePool backends: NGF's location shape for the Endpoint Picker.
//!
//! The rule's location (one per backend when it has several, picked by `split_clients`) asks
//! the pool's picker and redirects to an inner location that proxies to the endpoint it gave:
//!
//! ```nginx
//! location = /_httproute-internal/0 {
//!     internal;
//!     set $epp_internal_path /_httproute-internal/0-inference;
//!     http_matches_epp grpc://default_epp_9002;   # sets $inference_workload_endpoint
//! }
//! location = /_httproute-internal/0-inference {
//!     internal;
//!     if ($httproute_pool_T_0 = "") { return 500; }   # FailClose
//!     ...                                          # the rule's filters, mirrors, CORS
//!     proxy_pass http://$httproute_pool_T_0$request_uri;
//! }
//! map $inference_workload_endpoint $httproute_pool_T_0 {   # once per pool
//!     10.1.0.1:8000 10.1.0.1:8000;                 # each of the pool's endpoints
//!     default "";                                  # FailOpen: the pool's upstream
//! }
//! ```
//!
//! Only the pool's own endpoints are proxied to: whatever else the picker (or whoever answers
//! on its address) names, such as 169.254.169.254:80, is no endpoint (FailClose: 500;
//! FailOpen: the `upstream` of the pool's ready endpoints, NGF's `$inference_backend_*`).
//! The module keeps the first `ip:port` of a comma list (fallbacks); it must be written as
//! the pool's endpoint is (`SocketAddr`'s form: IPv6 compressed, in brackets).

use crate::conf::{Arg, Directive, Node, code, var};
use crate::plan::{Backend, INTERNAL_PREFIX, Pool, RulePlan, Target};

use super::location::Proxied;
use super::state::{Http, d, empty, entry_of, tag_of};

/// The variable `http_matches_epp` sets.
const ENDPOINT: &str = "inference_workload_endpoint";

impl Http {
    /// Rule `ri`'s locations when one of its backends is an InferencePool: the picker's
    /// location for each pool, [`Http::backend_location`] for the others, `split_clients`
    /// between them when there are several. `set`, `uri`, `mirrors`: as for a proxy location.
    pub(super) fn inference_rule(
        &mut self,
        rule: &RulePlan,
        out: &mut Vec<Node>,
        p: &Proxied<'_>,
    ) -> Result<(), String> {
        let base = format!("{INTERNAL_PREFIX}{}", p.ri);
        if let [only] = &rule.backends[..] {
            return self.inference_backend(out, base, rule, only, p);
        }
        let shares = (0..rule.backends.len())
            .map(|k| (Arg::code(format!("b{k}")), rule.backends[k].weight, None))
            .collect();
        let v = self.split(shares);
        let to = Arg::parts(vec![code(format!("{base}-")), var(v)]);
        let rewrite = d("rewrite").code("^").arg(to).code("last");
        let loc = d("location").code("=").code(base.clone());
        out.push(loc.inline(vec![d("internal").into(), rewrite.into()]).into());
        for (k, b) in rule.backends.iter().enumerate() {
            self.inference_backend(out, format!("{base}-b{k}"), rule, b, p)?;
        }
        Ok(())
    }

    /// The location `path` of backend `b`: the picker's two locations for a pool, else
    /// [`Http::backend_location`].
    fn inference_backend(
        &mut self,
        out: &mut Vec<Node>,
        path: String,
        rule: &RulePlan,
        b: &Backend,
        p: &Proxied<'_>,
    ) -> Result<(), String> {
        let (set, uri, mirrors) = (p.set, p.uri, p.mirrors);
        let from = self.share(rule, b);
        let mut loc = d("location").code("=").code(path.clone());
        if let Some(p) = from {
            loc = loc.from(p);
        }
        let Target::Inference(pool) = &b.target else {
            return self.backend_location(out, loc, rule, b, from, p);
        };
        let inner = format!("{path}-inference");
        let picker = match &pool.picker {
            // Through the shim, the picker's upstream is not written (the shim dials it).
            Target::Upstream { name, servers } if self.epp_shim.is_none() => {
                self.upstream(name, servers, from);
                name.clone()
            }
            Target::Upstream { name, .. } => name.clone(),
            t => return Err(format!("{}: InferencePool {}: picker {t}", rule.id, pool.id)),
        };
        let mut ask = vec![
            d("internal").into(),
            d("set").var("epp_internal_path").code(inner.clone()).into(),
        ];
        ask.extend(self.ask_picker(&pool.picker, picker));
        out.push(loc.inline(ask).into());
        let (req, resp) = rule.backend_filters(b);
        let proxy = self.proxy(rule, &req, &resp)?;
        let mut body: Vec<Node> = vec![d("internal").into()];
        let endpoint = self.pool_endpoint(pool, from, &mut body);
        body.extend(set.iter().cloned());
        body.extend(proxy);
        body.extend(mirrors.iter().cloned());
        let mut parts = vec![code("http://"), var(endpoint)];
        parts.extend(uri.iter().cloned());
        body.push(d("proxy_pass").arg(Arg::parts(parts)).into());
        let mut inner = d("location").code("=").code(inner);
        if let Some(p) = from {
            inner = inner.from(p);
        }
        out.push(inner.inline(body).into());
        Ok(())
    }

    /// How the picker is asked: `http_matches_epp grpc://PICKER` (its upstream's name), or
    /// with `--epp-shim URL` through NGF's shim, told the picker's `$epp_host` / `$epp_port`
    /// (the first address of its upstream).
    fn ask_picker(&self, target: &Target, picker: String) -> Vec<Node> {
        let Some(url) = &self.epp_shim else {
            return vec![d("http_matches_epp").code(format!("grpc://{picker}")).into()];
        };
        let addr = match target {
            Target::Upstream { servers, .. } => servers.first().cloned().unwrap_or_default(),
            _ => String::new(),
        };
        let (host, port) = addr.rsplit_once(':').unwrap_or((&addr, ""));
        let host = host.trim_start_matches('[').trim_end_matches(']');
        vec![
            d("set").var("epp_host").arg(Arg::data("endpoint picker host", host.to_owned())).into(),
            d("set").var("epp_port").arg(Arg::data("endpoint picker port", port.to_owned())).into(),
            d("http_matches_epp").arg(Arg::data("--epp-shim", url.clone())).into(),
        ]
    }

    /// The variable the inner location proxies to: a `map` of `$inference_workload_endpoint`
    /// whose keys are the pool's endpoints (each its own value), defined once per pool; any
    /// other answer is its default: empty for FailClose (a 500, the `if` into `body`), the
    /// pool's `upstream` for FailOpen.
    fn pool_endpoint(
        &mut self,
        pool: &Pool,
        from: Option<crate::conf::Provenance>,
        body: &mut Vec<Node>,
    ) -> String {
        // One per pool, named from it alone (the rules that use it do not rename it):
        // `httproute_pool_TAG`, shorter than the longest the generator defines (limits.rs).
        let v = format!("httproute_pool_{}", tag_of(&format!("InferencePool {}", pool.id)));
        if pool.fail_open {
            self.upstream(&pool.upstream, &pool.servers, from);
        } else {
            let none = Directive::if_(v.clone(), Some(("=", empty())));
            body.push(none.inline(vec![d("return").code("500").into()]).into());
        }
        if self.defined.contains(&v) {
            return v;
        }
        let mut entries: Vec<Node> = (pool.servers.iter())
            .map(|e| {
                entry_of(
                    Arg::data("pool endpoint", e.clone()),
                    Arg::data("pool endpoint", e.clone()),
                )
            })
            .collect();
        let default = match pool.fail_open {
            true => Arg::data("InferencePool upstream name", pool.upstream.clone()),
            false => empty(),
        };
        entries.push(entry_of(Arg::code("default"), default));
        self.push_map(&v, d("map").var(ENDPOINT).var(v.clone()).block(entries));
        v
    }
}
