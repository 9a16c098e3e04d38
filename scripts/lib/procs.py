"""What the measurement scripts share: NGINX's processes as /proc shows them, the commit measured."""
import os
import subprocess
from pathlib import Path


def children(parent):
    """The pids whose parent is `parent` (a master's workers), sorted."""
    out = []
    for d in os.listdir("/proc"):
        try:
            if d.isdigit() and int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1]) == parent:
                out.append(int(d))
        except (OSError, IndexError, ValueError):
            pass
    return sorted(out)


def measured_commit():
    """The commit the figures are measured on (docs/BENCHMARKS.md names one for every figure)."""
    root = Path(__file__).resolve().parent.parent.parent
    r = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=root, capture_output=True, text=True)
    return r.stdout.strip() or "unknown"
