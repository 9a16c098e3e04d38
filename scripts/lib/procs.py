"""What the measurement scripts read of NGINX's processes in /proc."""
import os


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
