#!/usr/bin/env bash
# The end-to-end suite with every NGINX (master and workers, module loaded) under valgrind
# memcheck. Fails on any invalid read or write, use of uninitialised memory, invalid free, or
# a definite leak with a module frame in its stack. Writes a summary to target/memcheck/summary.
#   scripts/bench/memcheck.sh [--system]     vendored NGINX 1.28 (default) or Debian's 1.22
#   MEMCHECK_TESTS="http_matches hostile"  the end-to-end test files run (default: http_matches
#                                          hostile generator example)
# Takes ~10 minutes on 2 cores: valgrind runs NGINX about 30x slower, so the suite's waits are
# scaled (NGX_MATCHES_TIME_SCALE) and its tests run two at a time.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/install-deps.sh valgrind
export NGX_CONFIGURE_ARGS=${NGX_CONFIGURE_ARGS:---with-debug}
# shellcheck source=scripts/lib/built.sh
. scripts/lib/built.sh
build_module "$@"
logs=$PWD/target/memcheck
rm -rf "$logs" && mkdir -p "$logs"
# valgrind.bin, not Debian's /usr/bin/valgrind shell wrapper: the harness signals the pid it
# started, which must be NGINX's master. memcheck follows the forked workers by itself.
vg=$(command -v valgrind.bin || command -v valgrind)
export NGX_MATCHES_WRAPPER="$vg --tool=memcheck --log-file=$logs/vg-%p.log --leak-check=full \
--show-leak-kinds=definite --errors-for-leak-kinds=definite --num-callers=40 --error-limit=no"
export NGX_MATCHES_TIME_SCALE=${NGX_MATCHES_TIME_SCALE:-30}
export NGX_MATCHES_MODULE=$module NGX_MATCHES_NGINX=$nginx
started=$(date +%s)
tests=()
for t in ${MEMCHECK_TESTS:-http_matches hostile generator example}; do tests+=(--test "$t"); done
scripts/ci-cargo.sh test "${tests[@]}" -- --test-threads=2
echo "suite under memcheck: $(( $(date +%s) - started )) s" | tee "$logs/summary"
python3 - "$logs" <<'PY' | tee -a "$logs/summary"
import glob, re, sys
logs = sys.argv[1]
module = re.compile(r"ngx_http_matches|route_match|libngx_http_matches|httproute_nginx|pcre2")
fatal = re.compile(r"^(Invalid (read|write|free)|Conditional jump|Use of uninitialised|Syscall param|Mismatched free|Source and destination overlap)")
files = sorted(glob.glob(f"{logs}/vg-*.log"))
processes = errors_total = bad = leaks_ours = leaks_other = 0
for f in files:
    processes += 1
    blocks, cur = [], []
    for line in open(f, errors="replace"):
        m = re.match(r"==\d+== ?(.*)", line.rstrip("\n"))
        if not m:
            continue
        text = m.group(1)
        if text == "":
            if cur:
                blocks.append(cur)
            cur = []
        else:
            cur.append(text)
    if cur:
        blocks.append(cur)
    for b in blocks:
        head = b[0]
        if fatal.match(head):
            errors_total += 1
            bad += 1
            print(f"--- {f}\n" + "\n".join(b))
        elif "definitely lost" in head and "loss record" in head:
            if any(module.search(l) for l in b):
                leaks_ours += 1
                print(f"--- leak with a module frame, {f}\n" + "\n".join(b))
            else:
                leaks_other += 1
print(f"processes under memcheck: {processes}")
print(f"memory errors (invalid read/write/free, uninitialised use): {bad}")
print(f"definite leaks with a module/engine frame: {leaks_ours}")
print(f"definite leaks elsewhere (NGINX, libc; not ours): {leaks_other}")
if processes == 0:
    print("no valgrind logs: the wrapper did not run"); sys.exit(1)
sys.exit(1 if bad or leaks_ours else 0)
PY
