"""HTTP/2 client for scripts/bench/h2-regex-cpu.sh: N requests on one h2c connection whose
catastrophic-subject header is HPACK-indexed (sent once, then referenced), and the worker's CPU
time (from /proc) per request.

usage: h2_regex_cpu.py PORT WORKER_PID N PATH EXPECT [NAME VALUE]...
Prints one line: requests, answers as expected, worker CPU ns (schedstat), CPU ns per request,
client bytes sent, bytes per request. Exits 1 if any answer differs from EXPECT.
"""
import socket
import sys

import h2.config
import h2.connection
import h2.events


def cpu_ns(pid):
    # First field of schedstat: nanoseconds this task ran on a CPU (all threads: one here).
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def main():
    port, pid, n, path, expect = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    extra = list(zip(sys.argv[6::2], sys.argv[7::2]))
    s = socket.create_connection(("127.0.0.1", port))
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sent = 0

    def flush():
        nonlocal sent
        data = conn.data_to_send()
        sent += len(data)
        s.sendall(data)

    flush()
    headers = [(":method", "GET"), (":path", path), (":scheme", "http"), (":authority", "localhost")] + extra
    good = 0
    bodies = {}
    done = set()
    before = None
    first_bytes = 0
    # One warm-up request (the header enters both HPACK tables, the worker's cache fills).
    for i in range(n + 1):
        if i == 1:
            before = cpu_ns(pid)
            first_bytes = sent
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, headers, end_stream=True)
        flush()
        while sid not in done:
            data = s.recv(65536)
            if not data:
                raise SystemExit("connection closed")
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.DataReceived):
                    bodies[ev.stream_id] = bodies.get(ev.stream_id, b"") + ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    done.add(ev.stream_id)
            flush()
        if bodies.get(sid, b"").decode() == expect:
            good += 1
        elif i < 3:
            print(f"unexpected answer: {bodies.get(sid)!r}", file=sys.stderr)
    after = cpu_ns(pid)
    spent = after - before
    sent_n = sent - first_bytes
    print(f"requests={n} good={good} cpu_ns={spent} cpu_ns_per_request={spent // n} "
          f"bytes_sent={sent_n} bytes_per_request={sent_n / n:.1f}")
    s.close()
    return 0 if good == n + 1 else 1


if __name__ == "__main__":
    sys.exit(main())
