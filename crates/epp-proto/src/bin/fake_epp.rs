//! `fake-epp --listen ADDR --mode MODE --endpoint IP:PORT [--record FILE]`: the test-only fake
//! Endpoint Picker (see `epp_proto::fake`). Prints `ready ADDR` once it accepts connections.
//! Modes: header, body, metadata, immediate, grpc-error, malformed, slow.

use std::io::Write;
use std::sync::atomic::Ordering;

use tokio_stream::StreamExt;

use epp_proto::fake::{Config, Fake, Mode};

fn usage() -> ! {
    eprintln!("usage: fake-epp --listen ADDR --mode MODE --endpoint IP:PORT [--record FILE]");
    std::process::exit(2)
}

fn main() {
    let mut listen = "127.0.0.1:0".to_string();
    let mut config = Config { mode: Mode::Header, endpoint: "127.0.0.1:1".into(), record: None };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--listen" => listen = value,
            "--mode" => config.mode = Mode::parse(&value).unwrap_or_else(|| usage()),
            "--endpoint" => config.endpoint = value,
            "--record" => config.record = Some(value.into()),
            _ => usage(),
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&listen).await.expect("bind --listen");
        let addr = listener.local_addr().expect("the bound address");
        println!("ready {addr}");
        let _ = std::io::stdout().flush();
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
