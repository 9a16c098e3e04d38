//! Gateway API manifests for tests, built in one place: [`objects`] writes each kind of object
//! (Gateway and listeners, HTTPRoute with matches, filters and backendRefs, Service,
//! EndpointSlice, TLS Secret, ReferenceGrant) once, and [`grammar`] is the random manifest set
//! the fuzz target (`fuzz/fuzz_targets/generate.rs`) and the generator's property tests
//! (`crates/httproute-nginx/tests/one_pass.rs`) both draw, from bytes (`arbitrary`).
//!
//! Test only (`publish = false`): a dev-dependency of `httproute-nginx` and a dependency of
//! `fuzz/`. It does not depend on the generator, so the generator's tests see one copy of it.

#![forbid(unsafe_code)]

pub mod grammar;
pub mod objects;
