//! A rule with InferencePool backends: NGF's location shape for the Endpoint Picker.
//!
//! The rule's location (one per backend when it has several, picked by `split_clients`) asks
//! the pool's picker and redirects to an inner location that proxies to the endpoint it gave:
//!
//! ```nginx
//! location = /_httproute-internal/0 {
//!     internal;
//!     set $epp_internal_path /_httproute-internal/0-inference;
//!     http_matches_epp grpc://default_epp_9002;   # sets $inference_workload_endpoint(s)
//! }
//! location = /_httproute-internal/0-inference {
//!     internal;
//!     if ($inference_workload_endpoints = "") { return 500; }   # FailClose
//!     ...                                          # the rule's filters, mirrors, CORS
//!     proxy_pass http://default_llm_pool$request_uri;
//! }
//! upstream default_llm_pool {
//!     http_matches_epp_endpoints;                  # the picker's list, within the pool
//!     server 10.1.0.1:8000;                        # each of the pool's ready endpoints
//! }
//! ```
//!
//! Only the pool's own endpoints are proxied to: the module's balancer keeps, in the picker's
//! order, the elements of its list that are servers of the block (its fallbacks walked by
//! `proxy_next_upstream`); whatever else the picker (or whoever answers on its address) names,
//! such as 169.254.169.254:80, is never contacted: none kept is the pool's round robin. NGF's
//! `$inference_backend_*` map let any address through.

use crate::conf::{Arg, Directive, Node, Part, code, data, var};
use crate::plan::{Backend, INTERNAL_PREFIX, Pool, RulePlan, Target};

use super::location::Proxied;
use super::state::{Http, d, empty};

/// The EPP's whole checked list, set by `http_matches_epp` (empty when it gave none).
const ENDPOINTS: &str = "inference_workload_endpoints";

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
            .map(|k| (Arg::code(format!("b{k}")), rule.backends[k].weight))
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
        let loc = d("location").code("=").code(path.clone());
        let Target::Inference(pool) = &b.target else {
            return self.backend_location(out, loc, rule, b, p);
        };
        let inner = format!("{path}-inference");
        let picker = match &pool.picker {
            // Through the shim, the picker's upstream is not written (the shim dials it).
            Target::Upstream { name, servers } if self.epp_shim.is_none() => {
                self.upstreams.insert(name.clone(), servers.clone());
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
        let endpoint = self.pool_endpoint(pool, &mut body);
        body.extend(set.iter().cloned());
        body.extend(proxy);
        body.extend(mirrors.iter().cloned());
        let mut parts = vec![code("http://"), endpoint];
        parts.extend(uri.iter().cloned());
        body.push(d("proxy_pass").arg(Arg::parts(parts)).into());
        out.push(d("location").code("=").code(inner).inline(body).into());
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

    /// What the inner location proxies to: the pool's `upstream`, written with
    /// `http_matches_epp_endpoints;` (the picker's list within the pool, in order, else the
    /// pool's round robin). FailClose first answers 500 when the picker gave no endpoint list
    /// (`$inference_workload_endpoints` empty, the `if` into `body`). No tenant address is a
    /// key of any NGINX hash: the module checks the list against the block's servers.
    fn pool_endpoint(&mut self, pool: &Pool, body: &mut Vec<Node>) -> Part {
        if !pool.fail_open {
            let none = Directive::if_(ENDPOINTS.to_owned(), Some(("=", empty())));
            body.push(none.inline(vec![d("return").code("500").into()]).into());
        }
        self.upstreams.insert(pool.upstream.clone(), pool.servers.clone());
        self.epp_pools.insert(pool.upstream.clone());
        data("InferencePool upstream name", pool.upstream.clone())
    }
}
