# Sourced by scripts that run NGINX from a scratch prefix (run.sh, soak.sh, rss-drift.sh).
# write_prefix DIR MODULE ACCESS_LOG HTTP_BODY: creates DIR/{conf,logs,tmp} and
# DIR/conf/nginx.conf (foreground, 1 worker, temp paths inside DIR) with HTTP_BODY in http {}.
write_prefix() {
  local dir=$1 module=$2 access_log=$3 body=$4
  rm -rf "$dir"
  mkdir -p "$dir"/{conf,logs,tmp}
  cat >"$dir/conf/nginx.conf" <<CONF
load_module $module;
daemon off;
worker_processes 1;
error_log logs/error.log notice;
pid logs/nginx.pid;
events { worker_connections 1024; }
http {
    access_log $access_log;
    client_body_temp_path tmp/body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
$body
}
CONF
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
