//! Gateway API input: reading manifests (YAML multi-document or JSON, `List`s included) into
//! typed Gateways and HTTPRoutes, with CRD defaults applied and CRD limits checked.
//!
//! [`types`]: the objects; [`load`](load()): files to [`Inputs`]; `validate`: the CRD checks.

mod certificate;
mod core;
mod inference;
mod json;
mod load;
mod parent_refs;
mod syntax;
mod types;
mod validate;
mod yaml;

pub use certificate::check as check_certificate;
pub use core::{special_ip, unusable_ip};
pub use inference::{
    INFERENCE_GROUP, InferencePool, InferencePoolSpec, PickerRef, PoolPort, PoolSelector,
};
pub use json::{KEY_SPAN, read as read_json};
pub use load::{InputError, Inputs, Place, Refused, RejectedRoute, load, load_text};
pub use types::*;
pub use validate::{decoded_path, is_dns_label, is_dns_subdomain, is_host_name, valid_hostname};
pub use yaml::{MAX_DEPTH, Part, ReadError, Work, is_list_kind, read as read_yaml};
