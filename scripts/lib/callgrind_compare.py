"""Instructions per request (callgrind) of two builds of the module, side by side in one run,
on bench.py's 3-rule scenarios and its regex ones (issue #22: the budget and the cache must
cost nothing on the common path).

usage: BENCH_NGINX=... BENCH_MODULE=<any> callgrind_compare.py BEFORE.so AFTER.so
"""
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bench  # noqa: E402


def main():
    before, after = sys.argv[1], sys.argv[2]
    chosen = [s for s in bench.scenarios()
              if s.group in ("blog", "regex") and not s.njs]
    print("| scenario | before (instr/req) | after (instr/req) | after/before |")
    print("|---|---:|---:|---:|")
    for s in chosen:
        figures = []
        for module in (before, after):
            bench.MODULE = module
            with tempfile.TemporaryDirectory() as d:
                figures.append(bench.instructions(s, Path(d)))
        b, a = figures
        print(f"| {s.name} | {b:,.0f} | {a:,.0f} | {a / b:.3f} |", flush=True)


if __name__ == "__main__":
    main()
