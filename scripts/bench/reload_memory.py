#!/usr/bin/env python3
"""Memory of every NGINX process across reloads (used by scripts/bench/reload-memory.sh).

reload_memory.py MASTER_PID RELOADS: samples the summed PSS and Private_Dirty of the master
and all its children (smaps_rollup) fresh, every 10 ms during each reload (SIGHUP) until the
old workers are gone, and once settled after it. Prints one line per phase: the sum, then the
master's and each worker's PSS (KiB) split by mapping (`heap`: glibc's main arena;
`anon`: anonymous mappings, glibc's other arenas and large allocations among them; `shm`:
NGINX's shared zones; `module`: the module's .so; `nginx`: the binary; `other`: libraries,
stack). A last line "fresh=KB final=KB peak=KB anon_fresh=KB anon_final=KB" is for the shell.
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from procs import children as children_of  # noqa: E402

master = int(sys.argv[1])
reloads = int(sys.argv[2])
KINDS = ("heap", "anon", "shm", "module", "nginx", "other")


def children():
    return children_of(master)


def rollup(pid):
    pss = dirty = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
                elif line.startswith("Private_Dirty:"):
                    dirty = int(line.split()[1])
    except OSError:
        pass
    return pss, dirty


def kind(path):
    if path == "[heap]":
        return "heap"
    if path == "":
        return "anon"
    if path.startswith("/dev/zero") or path.startswith("/SYSV"):
        return "shm"
    if path.endswith(".so") and "matches" in os.path.basename(path):
        return "module"
    if os.path.basename(path) == "nginx":
        return "nginx"
    return "other"


def split(pid):
    """PSS (KiB) of `pid` by mapping kind (/proc/PID/smaps)."""
    out = dict.fromkeys(KINDS, 0)
    k = "other"
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                head = line.split(None, 5)
                if "-" in head[0] and not head[0].endswith(":"):
                    k = kind(head[5].strip() if len(head) > 5 else "")
                elif head[0] == "Pss:":
                    out[k] += int(head[1])
    except OSError:
        pass
    return out


def processes():
    """The master's and each worker's PSS split by mapping kind, and the sum over them of the
    anonymous kinds (heap, anon, shm: pages only NGINX's processes share, so their PSS does not
    move with other programs that map the same libraries, as file-backed pages' does)."""
    parts, anonymous = [], 0
    for name, pid in [("master", master)] + [(f"worker{i}", p) for i, p in enumerate(children())]:
        s = split(pid)
        anonymous += s["heap"] + s["anon"] + s["shm"]
        parts.append(f"{name} {sum(s.values())} (" + " ".join(f"{k} {s[k]}" for k in KINDS) + ")")
    return "; ".join(parts), anonymous


def sample():
    procs = [master] + children()
    per = [rollup(p) for p in procs]
    if os.environ.get("VERBOSE"):
        print(" ".join(f"{pid}:{p // 1024}" for pid, (p, _) in zip(procs, per)), file=sys.stderr)
    return sum(p for p, _ in per), sum(d for _, d in per), len(procs)


def settle(expect):
    """Waits until exactly `expect` processes and two equal samples in a row."""
    last = None
    for _ in range(600):
        time.sleep(0.1)
        s = sample()
        if s[2] == expect and last is not None and abs(s[0] - last[0]) < 256:
            return s
        last = s
    return sample()


procs = 1 + len(children())
fresh = settle(procs)
split_fresh, anon_fresh = processes()
print(f"fresh: {procs} processes, PSS {fresh[0]} KiB, Private_Dirty {fresh[1]} KiB; {split_fresh}")
peak = fresh[0]
final = fresh
for n in range(1, reloads + 1):
    old = set(children())
    os.kill(master, signal.SIGHUP)
    t0 = time.monotonic()
    reload_peak = 0
    while time.monotonic() - t0 < 60:
        s = sample()
        reload_peak = max(reload_peak, s[0])
        now = set(children())
        if now and not (now & old) and len(now) == procs - 1:
            break
        time.sleep(0.01)
    else:
        sys.exit(f"reload {n}: the old workers did not exit within 60 s")
    final = settle(procs)
    reload_peak = max(reload_peak, final[0])
    peak = max(peak, reload_peak)
    split_final, anon_final = processes()
    print(f"reload {n}: peak PSS {reload_peak} KiB, settled PSS {final[0]} KiB, "
          f"Private_Dirty {final[1]} KiB ({time.monotonic() - t0:.1f} s); {split_final}")
print(f"fresh={fresh[0]} final={final[0]} peak={peak} anon_fresh={anon_fresh} anon_final={anon_final}")
