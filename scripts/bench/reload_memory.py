#!/usr/bin/env python3
"""Memory of every NGINX process across reloads (used by scripts/bench/reload-memory.sh).

reload_memory.py MASTER_PID RELOADS: samples the summed PSS and Private_Dirty of the master
and all its children (smaps_rollup) fresh, every 10 ms during each reload (SIGHUP) until the
old workers are gone, and once settled after it. Prints one line per phase and a last line
"fresh=KB final=KB peak=KB" for the shell to check.
"""
import os
import signal
import sys
import time

master = int(sys.argv[1])
reloads = int(sys.argv[2])


def children():
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == master:
                out.append(int(d))
        except OSError:
            pass
    return out


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
print(f"fresh: {procs} processes, PSS {fresh[0] // 1024} MiB, Private_Dirty {fresh[1] // 1024} MiB")
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
    print(f"reload {n}: peak PSS {reload_peak // 1024} MiB, settled PSS {final[0] // 1024} MiB, "
          f"Private_Dirty {final[1] // 1024} MiB ({time.monotonic() - t0:.1f} s)")
print(f"fresh={fresh[0]} final={final[0]} peak={peak}")
