//! `fake-epp --listen ADDR --mode MODE --endpoint IP:PORT [--record FILE]`: the test-only fake
//! Endpoint Picker (see `epp_proto::fake`). Prints `ready ADDR` once it accepts connections.
//! Modes: header, body, metadata, immediate, grpc-error, malformed, slow.

use std::sync::atomic::Ordering;

use tokio_stream::StreamExt;

use epp_proto::fake::{self, Config, Fake, Mode};

const USAGE: &str = "fake-epp --listen ADDR --mode MODE --endpoint IP:PORT [--record FILE]";

fn main() {
    let mut listen = "127.0.0.1:0".to_string();
    let mut config = Config { mode: Mode::Header, endpoint: "127.0.0.1:1".into(), record: None };
    for (flag, value) in fake::flags(USAGE) {
        match flag.as_str() {
            "--listen" => listen = value,
            "--mode" => config.mode = Mode::parse(&value).unwrap_or_else(|| fake::usage(USAGE)),
            "--endpoint" => config.endpoint = value,
            "--record" => config.record = Some(value.into()),
            _ => fake::usage(USAGE),
        }
    }
    fake::run_ready(&listen, |listener| async move {
        let fake = Fake::new(config);
        let connections = fake.connections();
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener).map(move |c| {
            connections.fetch_add(1, Ordering::Relaxed);
            // TCP_NODELAY, as Go sets on every connection (GIE's EPP is Go's gRPC server):
            // without it a new connection's small HTTP/2 writes wait for the client's delayed
            // ACK (40 ms on Linux), which scripts/bench/epp-latency.sh would count as latency.
            if let Ok(c) = &c {
                let _ = c.set_nodelay(true);
            }
            c
        });
        tonic::transport::Server::builder()
            .add_service(fake)
            .serve_with_incoming(incoming)
            .await
            .expect("serve");
    });
}
