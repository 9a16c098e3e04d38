//! The writer's options and output.

use std::collections::BTreeMap;

use crate::conf::Stmt;
use crate::plan::Dropped;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Carrier {
    /// `http_matches_load matches.json` + `set $match_key` (what NGF does today)
    Preload,
    /// `http_matches '<list>'` in each location
    Inline,
    /// `set $http_matches '<list>'` (blog-era NGF)
    Variable,
}

pub struct Options {
    pub module: String,
    pub carrier: Carrier,
    /// `listen ADDRESS:PORT` instead of `listen PORT`.
    pub listen_address: Option<String>,
    /// Certificate and key files of TLS Secrets (`namespace/name`); a Secret not here but
    /// among the inputs is written to `certs/NAMESPACE_NAME.crt` and `.key` next to
    /// nginx.conf (the plan leaves out Secrets that are neither).
    pub certificates: BTreeMap<String, (String, String)>,
    /// `resolver` addresses for backends named by DNS (`--resolver`, else the nameservers of
    /// /etc/resolv.conf); NGINX's syntax: `ADDRESS[:PORT]`, IPv6 in brackets.
    pub resolvers: Vec<String>,
    /// Generate Experimental-channel fields (`retry`); without it they are warned about.
    pub experimental: bool,
    /// The NGINX the configuration is for (major, minor, patch): planning takes its
    /// capabilities (`plan::Capabilities`; before 1.25.1 HTTP/2 is a `listen` parameter).
    pub nginx_version: (u32, u32, u32),
    /// Follow ExternalName Services (`--allow-external-name`; planning's
    /// `PlanOptions::allow_external_name`).
    pub allow_external_name: bool,
    /// Workers, access log, upstream keepalive, where nginx.conf's files live
    /// ([`crate::emit_global`]).
    pub global: crate::emit_global::Global,
    /// Ports another process holds (`apply`'s probe; planning's `PlanOptions::port_unavailable`).
    pub port_unavailable: Option<crate::plan::PortProbe>,
}

/// Where [`super::emit_streamed`] writes: nginx.conf, matches.json, and a scratch file that
/// holds the servers' text until the `http` block's head (which depends on what the servers
/// use: upstreams, `split_clients`, the `$` variable) is written in front of it.
pub struct Streams<'w> {
    pub conf: &'w mut dyn std::io::Write,
    pub matches: &'w mut dyn std::io::Write,
    pub scratch: &'w mut std::fs::File,
}

pub struct Output {
    pub nginx_conf: String,
    /// The directives of `nginx_conf` as NGINX's parser will read them (what the writer
    /// meant to write; tests and the fuzz target read the text back and compare); empty with
    /// [`Tree::Drop`].
    pub tree: Vec<Stmt>,
    pub matches_json: String,
    /// Where nginx.conf reads `matches_json` from, relative to it.
    pub matches_file: String,
    /// Other files, by path relative to nginx.conf (certificates and keys from Secrets).
    pub files: BTreeMap<String, Vec<u8>>,
    /// What the configuration cannot do (on top of the plan's warnings).
    pub warnings: Vec<String>,
    /// What is left out (the plan's refusals: a word NGINX cannot take, a budget, NGINX's
    /// refusal in `crate::nginx_check`), each the unit, its reason and why.
    /// [`crate::plan::Status`] gets a condition for each
    /// ([`crate::plan::dropped_from_configuration`]).
    pub dropped: Vec<Dropped>,
    /// What writing it took (tests bound it against the input: no timing).
    pub work: Work,
}

/// The work of [`super::emit_with`], counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Work {
    /// Candidates of left-out locations looked at to find their matches.
    pub candidates: usize,
    /// Candidates looked at to write the lists in place (`--carrier inline`, `variable`).
    pub listed: usize,
}

/// Whether [`Output::tree`] is made (tests and the fuzz target compare it with the text read
/// back; a generator run writes only the text, and the tree costs more memory than it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    Keep,
    Drop,
}
