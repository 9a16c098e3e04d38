#!/usr/bin/perl

# Tests for ngx_http_matches_module: requests that answer 500 or 404, and the [error] line
# that says why; a client's "Matches" header is never a match list.

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

my $t = Test::Nginx->new()->has(qw/http rewrite/)->plan(16);

$t->write_file('matches.json', '{"k":[{"any":true,"redirectPath":"/t/k"}]}');

$t->write_file_expand('nginx.conf', http_conf(<<'EOF'));
    http_matches_load matches.json;
    http_matches_var_max_size 100;

    server {
        listen       127.0.0.1:8080;
        server_name  localhost;

        location /t/ {
            internal;
            return 200 "uri=$uri\n";
        }

        location = /unknown {
            set $match_key nope;
            http_matches;
        }

        location = /empty {
            set $match_key "";
            http_matches;
        }

        location = /noredirect {
            http_matches '[{"method":"GET"}]';
        }

        location = /nolist {
            http_matches;
        }

        location = /peek {
            if ($http_matches) { }
            http_matches;
        }

        location = /badvar {
            set $http_matches '[{"any":true,"redirectPath":"/t/x"},]';
            http_matches;
        }

        location = /bigvar {
            set $http_matches '[{"headers":["x:Exact:1"],"redirectPath":"/t/1"},{"headers":["x:Exact:2"],"redirectPath":"/t/2"},{"headers":["x:Exact:3"],"redirectPath":"/t/3"},{"headers":["x:Exact:4"],"redirectPath":"/t/4"}]';
            http_matches;
        }

        location = /notfound {
            error_page 404 = @nf;
            http_matches '[{"method":"PUT","redirectPath":"/t/put"}]';
        }

        location @nf {
            return 200 "not found entry=[$matches_entry] redirect=[$matches_redirect]\n";
        }
    }
EOF

$t->run();

###############################################################################

my $list = '[{"any":true,"redirectPath":"/t/evil"}]';

like(http_get('/unknown'), qr/^HTTP\/1\.. 500/, 'unknown key: 500');
like(http_get('/empty'), qr/^HTTP\/1\.. 500/, 'empty key: 500');
like(http_get('/noredirect'), qr/^HTTP\/1\.. 500/, 'winner without redirectPath: 500');
like(http_get('/nolist'), qr/^HTTP\/1\.. 500/, 'no list: 500');
like(request('GET', '/nolist', "Matches: $list"), qr/^HTTP\/1\.. 500/,
	'client Matches header: 500');
like(request('GET', '/peek', "Matches: $list"), qr/^HTTP\/1\.. 500/,
	'client Matches header read before: 500');
like(http_get('/badvar'), qr/^HTTP\/1\.. 500/, 'invalid $http_matches: 500');
like(http_get('/bigvar'), qr/^HTTP\/1\.. 500/, '$http_matches over var_max_size: 500');
like(http_get('/notfound'), qr/not found entry=\[\] redirect=\[\]/,
	'no winner: 404 to error_page, variables empty');

$t->stop();

my $log = $t->read_file('error.log');
my $d = $t->testdir();

sub logged {
	my ($log, $text) = @_;
	return scalar grep { /\[error\]/ && index($_, $text) >= 0 && /client: 127\.0\.0\.1/ }
		split /\n/, $log;
}

is(logged($log, qq(http_matches: the key "nope" (\$match_key) is not defined in "$d/matches.json")),
	1, 'unknown key: [error]');
is(logged($log, 'no inline list, $match_key is not set or empty here, and $http_matches is not set here'),
	3, 'no list: [error] for the empty key, no key, the client header');
is(logged($log, 'http_matches: inline list: entry 0 matched but has no redirectPath'), 1,
	'no redirectPath: [error]');
is(logged($log, qq(holds the client's "Matches" request header, not a list set in the configuration; refused)),
	1, 'client header read before: [error]');
is(logged($log, 'http_matches: invalid $http_matches: trailing comma at line 1 column'), 1,
	'invalid $http_matches: [error]');
like($log, qr/\[error\].*\$http_matches is \d+ bytes, more than http_matches_var_max_size \(100\); refused: "\[\{"headers":\["x:Exact:1"\].*\.\.\.\(\d+ bytes\)"/,
	'over var_max_size: [error] with length and first bytes');
unlike($log, qr/\[(alert|crit|emerg)\]/, 'nothing worse than [error]');

###############################################################################
