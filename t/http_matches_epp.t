#!/usr/bin/perl

# Tests for ngx_http_matches_module's http_matches_epp: the endpoint picker call of NGF's
# epp.js as a directive. A Perl shim answers as the request's X-Shim header says, and puts
# what it received into the endpoint it returns, so each answer shows both sides.

###############################################################################

use warnings;
use strict;

use Test::More;

use IO::Select;
use IO::Socket::INET;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Nginx::Matches;

###############################################################################

matches_tests();

my $t = Test::Nginx->new()->has(qw/http proxy rewrite/)->plan(17);

$t->write_file_expand('nginx.conf', http_conf(<<'EOF'));
    server {
        listen       127.0.0.1:8080;
        server_name  localhost;

        location /infer {
            set $epp_internal_path /_internal;
            set $epp_host epp.example;
            set $epp_port 9002;
            client_body_buffer_size 1k;
            proxy_read_timeout 1s;
            http_matches_epp http://127.0.0.1:8081;
        }

        location = /down {
            set $epp_internal_path /_internal;
            set $epp_host epp.example;
            set $epp_port 9002;
            http_matches_epp http://127.0.0.1:8082;
        }

        location = /nohost {
            set $epp_internal_path /_internal;
            set $epp_port 9002;
            http_matches_epp http://127.0.0.1:8081;
        }

        location /_internal {
            internal;
            return 200 "endpoint=[$inference_workload_endpoint] uri=$uri args=$args\n";
        }
    }
EOF

$t->run_daemon(\&shim_daemon);
$t->run();

$t->waitforsocket('127.0.0.1:' . port(8081)) or die "Can't start the shim";

###############################################################################

like(ask('GET', '/infer/v1?a=%41&b=1+2', expect('GET / len=- te=- host=epp.example port=9002 body=0')),
	qr!endpoint=\[192\.0\.2\.1:80\] uri=/_internal args=a=%41&b=1\+2$!m,
	'200 with the header: variable set, query kept byte for byte');
like(ask('GET', '/infer', expect('GET / len=- te=- host=epp.example port=9002 body=0')
	. "\r\nX-EPP-Host: evil\r\nx-epp-port: 1"),
	qr/endpoint=\[192\.0\.2\.1:80\]/,
	"the client's X-EPP-Host / X-EPP-Port are not sent");
like(ask('POST', '/infer', expect('POST / len=10 te=- host=epp.example port=9002 body=10')
	. "\r\nContent-Length: 10", 'hello body'),
	qr/endpoint=\[192\.0\.2\.1:80\]/,
	'a body of 10 bytes: method and body');
like(ask('PUT', '/infer', expect('PUT / len=3000 te=- host=epp.example port=9002 body=3000')
	. "\r\nContent-Length: 3000", 'x' x 3000),
	qr/endpoint=\[192\.0\.2\.1:80\]/,
	'a body in a temp file');
like(ask('POST', '/infer', expect('POST / len=11 te=- host=epp.example port=9002 body=11')
	. "\r\nTransfer-Encoding: chunked", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
	qr/endpoint=\[192\.0\.2\.1:80\]/,
	'chunked: Content-Length, no Transfer-Encoding');
like(ask('GET', '/infer?q', 'X-Shim: unix'), qr/endpoint=\[\] uri=\/_internal args=q$/m,
	'an endpoint that is not an ip:port list: redirect, variable empty');
like(ask('GET', '/infer?q', 'X-Shim: noheader'), qr/endpoint=\[\] uri=\/_internal args=q$/m,
	'200 without the header: redirect, variable empty');
like(ask('GET', '/infer?q', 'X-Shim: busy'), qr/endpoint=\[\] uri=\/_internal args=q$/m,
	'503: redirect, variable empty');
like(ask('GET', '/infer?q', 'X-Shim: close'), qr/endpoint=\[\] uri=\/_internal args=q$/m,
	'closed connection: redirect, variable empty');
like(ask('GET', '/infer?q', 'X-Shim: never'), qr/endpoint=\[\] uri=\/_internal args=q$/m,
	'no answer (proxy_read_timeout): redirect, variable empty');
like(http_get('/down?q'), qr/endpoint=\[\] uri=\/_internal args=q$/m,
	'shim down: redirect, variable empty');
like(http_get('/nohost'), qr/^HTTP\/1\.. 500/, 'missing $epp_host: 500');

$t->stop();

my $log = $t->read_file('error.log');

sub logged {
	my ($text) = @_;
	return scalar grep { /\[error\]/ && index($_, $text) >= 0 } split /\n/, $log;
}

is(logged('http_matches_epp: could not get specific inference endpoint from EndpointPicker; '
	. "status: 503; body: \"no \x01pods\""), 0, 'the body is escaped');
is(logged('http_matches_epp: could not get specific inference endpoint from EndpointPicker; '
	. 'status: 503; body: "no \x01pods"'), 1, '503: [error] with status and body');
is(logged('"unix:/run/x.sock" is not an ip:port list'), 1,
	'an endpoint that is not an ip:port list: [error] naming it');
is(logged('http_matches_epp: missing required variable $epp_host '), 1,
	'missing $epp_host: [error] naming it');
ok(grep({ /\[warn\].*a client request body is buffered to a temporary file/ } split /\n/, $log),
	'the 3,000-byte body went through a temp file');

###############################################################################

# The headers that ask the shim to check what it received: it answers 192.0.2.1:80 when it
# got exactly SEEN (method, URI, Content-Length, Transfer-Encoding, X-EPP-Host, X-EPP-Port,
# body length), else 192.0.2.2:80.
sub expect {
	my ($seen) = @_;
	return "X-Shim: ok\x0d\x0aX-Expect: $seen";
}

# An HTTP/1.1 request; HEADERS are CRLF-separated lines.
sub ask {
	my ($method, $uri, $headers, $body) = @_;
	return http("$method $uri HTTP/1.1\x0d\x0aHost: localhost\x0d\x0aConnection: close\x0d\x0a"
		. "$headers\x0d\x0a\x0d\x0a" . ($body // ''));
}

###############################################################################

# The shim: reads a request (Content-Length bodies only: NGINX's proxy never chunks a body it
# has read whole), answers as X-Shim says. "never" holds the connection without answering
# until NGINX closes it.

sub shim_daemon {
	my $server = IO::Socket::INET->new(
		Proto => 'tcp',
		LocalHost => '127.0.0.1:' . port(8081),
		Listen => 5,
		Reuse => 1
	)
		or die "Can't create listening socket: $!\n";

	local $SIG{PIPE} = 'IGNORE';

	while (my $client = $server->accept()) {
		$client->autoflush(1);

		my $headers = '';
		while (<$client>) {
			$headers .= $_;
			last if (/^\x0d?\x0a?$/);
		}
		next unless $headers;

		my ($method, $uri) = $headers =~ /^(\S+) (\S+)/;
		my ($len) = $headers =~ /^Content-Length: (\d+)/mi;
		my ($te) = $headers =~ /^Transfer-Encoding: (\S+)/mi;
		my ($host) = $headers =~ /^X-EPP-Host: (\S*)\x0d/mi;
		my ($port) = $headers =~ /^X-EPP-Port: (\S*)\x0d/mi;
		my @hosts = $headers =~ /^X-EPP-Host:/mgi;
		my @ports = $headers =~ /^X-EPP-Port:/mgi;
		$host = 'many' if @hosts > 1;
		$port = 'many' if @ports > 1;
		my ($mode) = $headers =~ /^X-Shim: (\S+)/mi;
		$mode ||= 'ok';

		my $body = '';
		if ($len) {
			$client->read($body, $len);
		}

		if ($mode eq 'ok' || $mode eq 'unix') {
			my $got = sprintf('%s %s len=%s te=%s host=%s port=%s body=%d', $method, $uri,
				$len // '-', $te // '-', $host // '-', $port // '-', length($body));
			my ($expect) = $headers =~ /^X-Expect: ([^\x0d\x0a]*)\x0d?$/mi;
			my $endpoint = defined $expect && $expect eq $got
				? '192.0.2.1:80' : '192.0.2.2:80';
			$endpoint = 'unix:/run/x.sock' if $mode eq 'unix';
			print $client "HTTP/1.1 200 OK\x0d\x0a"
				. "X-Gateway-Destination-Endpoint: $endpoint\x0d\x0a"
				. "Content-Length: 0\x0d\x0a"
				. "Connection: close\x0d\x0a\x0d\x0a";

		} elsif ($mode eq 'noheader') {
			print $client "HTTP/1.1 200 OK\x0d\x0aContent-Length: 5\x0d\x0a"
				. "Connection: close\x0d\x0a\x0d\x0ahello";

		} elsif ($mode eq 'busy') {
			print $client "HTTP/1.1 503 Busy\x0d\x0aContent-Length: 8\x0d\x0a"
				. "Connection: close\x0d\x0a\x0d\x0ano \x01pods";

		} elsif ($mode eq 'never') {
			IO::Select->new($client)->can_read();
		}

		close $client;
	}
}

###############################################################################
