#!/usr/bin/perl

# Tests for ngx_http_matches_module over HTTP/2: header fields (lower-case names, repeated
# fields), params and the query string, method, named locations, 404.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Nginx::HTTP2;
use Test::Nginx::Matches;

###############################################################################

matches_tests();

my $t = Test::Nginx->new()->has(qw/http http_v2 rewrite/)->plan(10);

# "http2 on" since 1.25.1, a parameter of "listen" before
my ($listen, $on) = $t->has_version('1.25.1') ? ('', 'http2 on;') : (' http2', '');

$t->write_file_expand('nginx.conf', http_conf(<<"EOF"));
    server {
        listen       127.0.0.1:8080$listen;
        server_name  localhost;
        $on

        location /t/ {
            internal;
            add_header X-Entry \$matches_entry;
            return 200 "uri=\$uri args=\$args";
        }

        location \@named {
            return 200 "named uri=\$uri args=\$args";
        }

        location /m {
            http_matches '[{"method":"POST","redirectPath":"/t/post"},
                           {"headers":["x-version:Exact:v2"],"redirectPath":"/t/v2"},
                           {"headers":["x-re:RegularExpression:^ab+c"],"redirectPath":"/t/re"},
                           {"params":["p=Exact=a b"],"redirectPath":"/t/p"},
                           {"headers":["x-named:Exact:1"],"redirectPath":"\@named"}]';
        }
    }
EOF

$t->run();

###############################################################################

like(get('/m', [ 'x-version' => 'v2' ]), qr!^200 1 uri=/t/v2 args=$!, 'header field');
like(get('/m', [ 'x-version' => 'v1', 'x-version' => 'v2' ]), qr!^200 1 uri=/t/v2!,
	'repeated header field');
like(get('/m', [ 'x-version' => 'v1, v2' ]), qr!^200 1 uri=/t/v2!, 'comma-separated element');
like(get('/m', [ 'x-version' => 'V2' ]), qr!^404 !, 'value case-sensitive, 404');
like(get('/m', [ 'x-re' => 'abbc' ]), qr!^200 2 uri=/t/re!, 'regular expression');
like(get('/m?z=%7e&p=a+b&&q'), qr!^200 3 uri=/t/p args=z=%7e&p=a\+b&&q$!,
	'param decoded, query string kept');
like(get('/m', [ 'x-version' => 'v2' ], 'POST'), qr!^200 0 uri=/t/post!, 'method');
like(get('/m?a=1', [ 'x-named' => '1' ]), qr!^200 - named uri=/m args=a=1$!, 'named location');
like(get('/m'), qr!^404 !, 'nothing matches: 404');

# several streams on one connection

my $s = Test::Nginx::HTTP2->new();
my @sids = map { $s->new_stream({ path => '/m', headers => headers('/m', 'GET',
	[ 'x-version' => $_ ]) }) } qw/ v1 v2 v3 v2 /;
my $frames = $s->read(all => [ map { { sid => $_, fin => 1 } } @sids ]);
my @status = map { my $sid = $_; my ($h) = grep { $_->{type} eq 'HEADERS' && $_->{sid} == $sid }
	@$frames; $h ? $h->{headers}{':status'} : 'none' } @sids;
is("@status", '404 200 404 200', 'streams of one connection');

###############################################################################

sub headers {
	my ($path, $method, $extra) = @_;
	my @h = (
		{ name => ':method', value => $method, mode => 0 },
		{ name => ':scheme', value => 'http', mode => 0 },
		{ name => ':path', value => $path, mode => 2 },
		{ name => ':authority', value => 'localhost', mode => 1 },
	);
	my @e = @{$extra || []};
	while (my ($n, $v) = splice @e, 0, 2) {
		push @h, { name => $n, value => $v, mode => 2 };
	}
	return \@h;
}

# get($path, [name => value, ...], $method): "STATUS ENTRY BODY" of one HTTP/2 request, ENTRY
# the X-Entry response header or "-".

sub get {
	my ($path, $extra, $method) = @_;

	my $s = Test::Nginx::HTTP2->new();
	my $sid = $s->new_stream({ headers => headers($path, $method || 'GET', $extra) });
	my $frames = $s->read(all => [{ sid => $sid, fin => 1 }]);

	my ($h) = grep { $_->{type} eq 'HEADERS' } @$frames;
	return 'no response' unless $h;
	my $body = join '', map { $_->{data} } grep { $_->{type} eq 'DATA' } @$frames;
	my $entry = $h->{headers}{'x-entry'};
	return join ' ', $h->{headers}{':status'}, defined $entry ? $entry : '-', $body;
}

###############################################################################
