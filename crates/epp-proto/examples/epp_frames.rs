//! A command-line door to the codec, for hand checks against a real NGINX:
//! `epp_frames encode [--body FILE] [NAME:VALUE ...] > frames` writes the request stream;
//! `epp_frames decode GRPC_STATUS [GRPC_MESSAGE] < body` prints the outcome of a response body.

use std::io::{Read, Write};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("encode") => encode(&args[1..]),
        Some("decode") => {
            let status = args.get(1).and_then(|s| s.parse().ok());
            let message = args.get(2).map_or("", String::as_str);
            let mut body = Vec::new();
            std::io::stdin().read_to_end(&mut body).expect("read stdin");
            let outcome =
                epp_proto::decode(&body, epp_proto::MAX_MESSAGE, status.map(|s| (s, message)));
            println!("{outcome:?}");
        }
        _ => {
            eprintln!(
                "usage: epp_frames encode [--body FILE] [NAME:VALUE ...] | decode STATUS [MESSAGE]"
            );
            std::process::exit(2);
        }
    }
}

fn encode(args: &[String]) {
    let (body, lines) = match args {
        [flag, file, rest @ ..] if flag == "--body" => {
            (Some(std::fs::read(file).expect("read --body")), rest)
        }
        rest => (None, rest),
    };
    let pairs: Vec<(&[u8], &[u8])> = lines
        .iter()
        .filter_map(|l| l[1..].find(':').map(|i| l.split_at(i + 1)))
        .map(|(k, v)| (k.as_bytes(), &v.as_bytes()[1..]))
        .collect();
    let mut out = Vec::new();
    epp_proto::encode_headers(pairs, body.is_none(), &mut out).expect("headers within 4 MiB");
    if let Some(body) = body {
        epp_proto::encode_body(&body, true, &mut out);
    }
    std::io::stdout().write_all(&out).expect("write stdout");
}
