//! The fake Endpoint Picker (`fake-epp`, crates/epp-proto feature `fake`) as a child process:
//! `FAKE_EPP_BIN`, else `target/release/fake-epp` (build it with
//! `cargo build --release -p epp-proto --features fake --bin fake-epp`). It records each stream
//! as one JSON line (see `epp_proto::fake`), with the count of connections accepted so far.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub struct Fake {
    child: Child,
    pub addr: String,
    pub record: PathBuf,
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.record);
    }
}

impl Fake {
    /// Starts the fake answering `endpoint` (mode `header` unless a request's
    /// `x-fake-epp-mode` says otherwise); `name` makes its record file unique.
    pub fn start(name: &str, endpoint: &str) -> Fake {
        let record = std::env::temp_dir().join(format!("{name}-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&record);
        let bin = std::env::var_os("FAKE_EPP_BIN").map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/fake-epp"),
            PathBuf::from,
        );
        let mut child = Command::new(&bin)
            .args(["--mode", "header", "--endpoint", endpoint, "--record"])
            .arg(&record)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("start {} (build it with --features fake): {e}", bin.display())
            });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line.trim().strip_prefix("ready ").expect("fake-epp says ready").to_owned();
        Fake { child, addr, record }
    }

    /// The records so far, one per stream, in order.
    pub fn records(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(&self.record).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).expect("a JSON record")).collect()
    }
}

/// The fake's body digest (FNV-1a, as in its records' `body_fnv`).
pub fn fnv(body: &[u8]) -> String {
    let h = body
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3));
    format!("{h:016x}")
}
