#!/usr/bin/python3
"""gRPC echo servers and a client for tests/grpc.rs, on grpcio's generic API (raw bytes, so no
generated code and no protoc).

  echo.py serve NAME=PORT...       one server per NAME on 127.0.0.1:PORT; each answers any
                                   method with "NAME /service/method x-tag=... x-added=...";
                                   prints "ready" when all listen
  echo.py call ADDR METHOD [AUTHORITY] [KEY=VALUE...]
                                   one unary call with that metadata; prints the answer, or
                                   "ERROR CODE"
"""
import sys
import time
from concurrent import futures

import grpc


class Echo(grpc.GenericRpcHandler):
    def __init__(self, name):
        self.name = name

    def service(self, details):
        method = details.method
        meta = dict(details.invocation_metadata)

        def answer(request, context):
            tags = " ".join(f"{k}={meta[k]}" for k in sorted(meta) if k.startswith("x-"))
            return f"{self.name} {method} {tags}".strip().encode()

        return grpc.unary_unary_rpc_method_handler(answer)


def serve(specs):
    servers = []
    for spec in specs:
        name, port = spec.split("=")
        s = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        s.add_generic_rpc_handlers((Echo(name),))
        s.add_insecure_port(f"127.0.0.1:{port}")
        s.start()
        servers.append(s)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


def call(addr, method, authority=None, *pairs):
    options = [("grpc.default_authority", authority)] if authority else []
    with grpc.insecure_channel(addr, options=options) as ch:
        stub = ch.unary_unary(method)
        meta = [tuple(p.split("=", 1)) for p in pairs]
        try:
            print(stub(b"hi", metadata=meta, timeout=10).decode())
        except grpc.RpcError as e:
            print(f"ERROR {e.code().name}")


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2:])
    else:
        call(*sys.argv[2:])
