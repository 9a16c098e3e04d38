//! The writer's options and output.

use std::collections::BTreeMap;

use crate::conf::{Provenance, Rendered, Stmt};
use crate::plan::Dropped;

use super::state::Unit;

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
    /// Rules and matches left out because NGINX cannot take a word written from them (or
    /// `nginx -t` refused a line of theirs), each the unit, its reason and why.
    /// [`crate::plan::Status`] gets a condition for each
    /// ([`crate::plan::dropped_from_configuration`]).
    pub dropped: Vec<Dropped>,
    /// What writing it took (tests bound it against the input: no timing).
    pub work: Work,
    /// The owner of each line of `nginx_conf` ([`crate::conf::Rendered::lines`]): an index
    /// into `units`, or `None` for the run's own lines.
    pub lines: Vec<Option<Provenance>>,
    /// The tenant objects the configuration's directives were written for, by their
    /// [`Provenance::Object`] number: what NGINX refuses on a line leaves out its owner
    /// ([`super::emit_dropping`], `crate::nginx_check`).
    pub units: Vec<Unit>,
    /// For an object number whose lines several units bring (an `upstream` several
    /// backendRefs name, a server name several routes bring, the `listen` every listener left
    /// on a port keeps): the units after the first (`units[o]`). The line goes when all of
    /// them are left out, and stays while one is.
    pub sharers: BTreeMap<u32, Vec<Unit>>,
}

impl Output {
    /// Every tenant object that brings line `line` (1-based) of `nginx_conf`, in the order
    /// written: one for most lines, several for a line they share (the line goes only when all
    /// of them are left out); empty for the run's own lines.
    pub fn units_at_line(&self, line: usize) -> Vec<&Unit> {
        let Some(Provenance::Object(o)) = Rendered::owner_of_line(&self.lines, line) else {
            return Vec::new();
        };
        let first = self.units.get(o as usize);
        first.into_iter().chain(self.sharers.get(&o).into_iter().flatten()).collect()
    }

    /// Every unit the output records, with repeats: [`Output::units`] and the sharers.
    pub fn all_units(&self) -> impl Iterator<Item = &Unit> {
        self.units.iter().chain(self.sharers.values().flatten())
    }
}

/// The work of [`super::emit_with`], counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Work {
    /// Tenant objects written for ([`Provenance::Object`]s).
    pub units: usize,
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
