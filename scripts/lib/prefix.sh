# Sourced by scripts that run NGINX from a scratch prefix (run.sh, soak.sh).
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
