#!/usr/bin/perl

# Tests for ngx_http_matches_module's http_matches_epp grpc://: the Endpoint Picker protocol
# spoken through NGINX's gRPC proxy, against the fake EPP (crates/epp-proto, feature fake;
# TEST_NGINX_FAKE_EPP=/path/to/fake-epp). A smoke: the destination taken, an EPP that is down
# fails open, an ImmediateResponse answered; tests/epp_grpc.rs has the rest.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Nginx::Matches;

###############################################################################

matches_tests();

my $fake = $ENV{TEST_NGINX_FAKE_EPP};
unless ($fake && -x $fake) {
	my $why = 'no fake EPP: set TEST_NGINX_FAKE_EPP=/path/to/fake-epp '
		. '(cargo build -p epp-proto --features fake --bin fake-epp)';
	BAIL_OUT($why) if $ENV{TEST_NGINX_MATCHES_REQUIRED};
	plan(skip_all => $why);
}

my $t = Test::Nginx->new()->has(qw/http proxy rewrite grpc/)->plan(9);

$t->write_file_expand('nginx.conf', http_conf(<<'EOF'));
    server {
        listen       127.0.0.1:8080;
        server_name  localhost;

        location /infer {
            set $epp_internal_path /_internal;
            http_matches_epp grpc://127.0.0.1:8081;
        }

        location /down {
            set $epp_internal_path /_internal;
            http_matches_epp grpc://127.0.0.1:8083;
        }

        location /_internal {
            internal;
            if ($inference_workload_endpoint = "") {
                return 200 "no endpoint args=$args\n";
            }
            proxy_pass http://$inference_workload_endpoint;
        }
    }

    server {
        listen       127.0.0.1:8082;
        server_name  backend;

        location / {
            return 200 "backend uri=$uri args=$args method=$request_method\n";
        }
    }
EOF

$t->run_daemon($fake, '--listen', '127.0.0.1:' . port(8081), '--mode', 'header',
	'--endpoint', '127.0.0.1:' . port(8082));
$t->run();

$t->waitforsocket('127.0.0.1:' . port(8081)) or die "Can't start the fake EPP";

###############################################################################

like(http_get('/infer?a=1'), qr/^backend uri=\/_internal args=a=1 method=GET$/m,
	'the destination is taken, the query kept');
like(http("POST /infer?b HTTP/1.0\x0d\x0aHost: localhost\x0d\x0a"
	. "Content-Length: 5\x0d\x0a\x0d\x0ahello"),
	qr/^backend uri=\/_internal args=b method=POST$/m, 'a body: the destination is taken');
# GIE's EPP echoes the body back: the answer is read as it arrives (a body filter, in every
# build: dynamic, --add-dynamic-module, --add-module), not held up to
# subrequest_output_buffer_size.
my $prompt = 'p' x 65536;
like(http("POST /infer?e HTTP/1.0\x0d\x0aHost: localhost\x0d\x0a"
	. "X-Fake-Epp-Mode: echo\x0d\x0aContent-Length: 65536\x0d\x0a\x0d\x0a$prompt"),
	qr/^backend uri=\/_internal args=e method=POST$/m,
	'an echoed 64 KB prompt: the destination is taken');
like(http_get('/down?q'), qr/^no endpoint args=q$/m, 'EPP down: the redirect, no endpoint');

my $shed = http("GET /infer HTTP/1.0\x0d\x0aHost: localhost\x0d\x0a"
	. "X-Fake-Epp-Mode: immediate\x0d\x0a\x0d\x0a");
like($shed, qr/^HTTP\/1\.. 429 .*\x0d\x0ax-fake-epp: shed\x0d\x0a(?:[^\x0d]*\x0d\x0a)*/si,
	'an ImmediateResponse answers the client with its status and line');
like($shed, qr/\x0d\x0a\x0d\x0ashed by the fake EPP\n\z/,
	'an ImmediateResponse answers the client with its body');

$t->stop();

my $log = $t->read_file('error.log');
unlike($log, qr/too big subrequest response/,
	'the echoed answer is read as it arrives, not held in a buffer');
my @errors = grep { /\[error\]/ && /http_matches_epp/ } split /\n/, $log;
is(scalar @errors, 1, 'one http_matches_epp [error]');
like($errors[0] // '', qr/no answer from the EndpointPicker \(status: 502/,
	'EPP down: [error] naming it');

###############################################################################
