//! `InferencePool` (`inference.networking.k8s.io/v1`, Gateway API Inference Extension): a set
//! of model server pods (`selector`, `targetPorts`) and the Endpoint Picker (EPP) Service that
//! picks one of them per request (`endpointPickerRef`). Checked as its CRD checks it: at most
//! 64 `matchLabels`, 1 to 8 distinct `targetPorts` of 1-65535, a picker `Service` of the core
//! group with a port, `failureMode` `FailOpen` or `FailClose` (default). Other fields are
//! tolerated, as for the other kinds.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::types::Meta;

/// The API group of InferencePool.
pub const INFERENCE_GROUP: &str = "inference.networking.k8s.io";

/// The most `matchLabels` and `targetPorts` the CRD admits.
const MAX_LABELS: usize = 64;
const MAX_PORTS: usize = 8;

#[derive(Debug, Clone, Deserialize)]
pub struct InferencePool {
    pub metadata: Meta,
    pub spec: InferencePoolSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InferencePoolSpec {
    pub selector: PoolSelector,
    pub target_ports: Vec<PoolPort>,
    pub endpoint_picker_ref: PickerRef,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolSelector {
    pub match_labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub struct PoolPort {
    pub number: u16,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PickerRef {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub name: String,
    pub port: Option<PoolPort>,
    pub failure_mode: Option<String>,
}

impl PickerRef {
    /// `failureMode: FailOpen`: with no endpoint from the picker, the pool's own endpoints serve.
    pub fn fail_open(&self) -> bool {
        self.failure_mode.as_deref() == Some("FailOpen")
    }
}

/// `Err((field, why))` when the CRD would refuse `p`.
pub(crate) fn check_pool(p: &InferencePool) -> Result<(), (String, String)> {
    let s = &p.spec;
    let err = |f: &str, why: String| Err((format!("spec.{f}"), why));
    let labels = s.selector.match_labels.len();
    if labels == 0 || labels > MAX_LABELS {
        return err("selector.matchLabels", format!("{labels} labels; 1 to {MAX_LABELS} are"));
    }
    if s.target_ports.is_empty() || s.target_ports.len() > MAX_PORTS {
        let n = s.target_ports.len();
        return err("targetPorts", format!("{n} ports; 1 to {MAX_PORTS} are"));
    }
    for (i, port) in s.target_ports.iter().enumerate() {
        if port.number == 0 {
            return err(&format!("targetPorts[{i}].number"), "0 is not a port".into());
        }
        if s.target_ports[..i].iter().any(|q| q.number == port.number) {
            return err(&format!("targetPorts[{i}].number"), "a port given twice".into());
        }
    }
    let r = &s.endpoint_picker_ref;
    if !matches!(r.group.as_deref(), None | Some(""))
        || !matches!(r.kind.as_deref(), None | Some("Service"))
    {
        return err("endpointPickerRef", "only a core Service can be the endpoint picker".into());
    }
    if !super::validate::is_dns_label(&r.name) {
        return err("endpointPickerRef.name", format!("{:?} is not a Service name", r.name));
    }
    if r.port.is_none_or(|p| p.number == 0) {
        return err("endpointPickerRef.port", "a Service picker needs a port".into());
    }
    if !matches!(r.failure_mode.as_deref(), None | Some("FailOpen" | "FailClose")) {
        return err("endpointPickerRef.failureMode", "FailOpen or FailClose".into());
    }
    Ok(())
}
