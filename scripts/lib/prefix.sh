# Sourced by scripts that run NGINX from a scratch prefix (run.sh, soak.sh, rss-drift.sh).
# write_prefix DIR MODULE ACCESS_LOG HTTP_BODY: creates DIR/{conf,logs,tmp} and
# DIR/conf/nginx.conf (nginx-conf/preamble.conf: foreground, 1 worker, temp paths inside
# DIR) with HTTP_BODY in http {}.
write_prefix() {
  local dir=$1 module=$2 access_log=$3 body=$4
  rm -rf "$dir"
  mkdir -p "$dir"/{conf,logs,tmp}
  # nginx-conf/preamble.conf, shared with the Rust tests and scripts/bench/bench.py. With bash 5.2's
  # patsub_replacement an `&` in a replacement would stand for the match: off.
  shopt -u patsub_replacement 2>/dev/null || true
  local conf
  conf=$(<"$(dirname "${BASH_SOURCE[0]}")/../../nginx-conf/preamble.conf")
  conf=${conf//@LOADS@/"load_module $module;"$'\n'}
  conf=${conf//@MASTER@/on}
  conf=${conf//@WORKERS@/1}
  conf=${conf//@LOG_LEVEL@/notice}
  conf=${conf//@CONNECTIONS@/1024}
  conf=${conf//@ACCESS_LOG@/"$access_log"}
  conf=${conf//@HTTP@/"$body"}
  printf '%s\n' "$conf" >"$dir/conf/nginx.conf"
}

# start_nginx NGINX DIR PORT: starts NGINX (foreground, as a child) from prefix DIR, sets
# $master to its pid, stops it gracefully when the script exits, and waits until PORT accepts.
start_nginx() {
  local nginx=$1 dir=$2 port=$3
  "$nginx" -p "$dir/" -c conf/nginx.conf &
  master=$!
  trap 'kill -QUIT $master 2>/dev/null || true' EXIT
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0; sleep 0.05; done
  echo "NGINX did not start on port $port; see $dir/logs/error.log" >&2
  return 1
}
