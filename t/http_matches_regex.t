#!/usr/bin/perl

# Tests for ngx_http_matches_module: a regular expression that gives up is no match with a
# [warn], with the per-request budget on (default) and off; the $http_matches cache
# (http_matches_var_cache): one compile per value per worker, a request-made value too big to
# keep.

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

# The one http_matches_regex_budget value these tests write: "0" turns the budget shared by
# a request's attempts off (each attempt stays bounded). Elsewhere the default is used.

my $budget_off = '0';

my $t = Test::Nginx->new()->has(qw/http rewrite/)->plan(14);

$t->write_file_expand('nginx.conf', http_conf(<<"EOF"));
    http_matches_var_cache 4k;

    server {
        listen       127.0.0.1:8080;
        server_name  localhost;

        location /t/ {
            internal;
            return 200 "uri=\$uri\\n";
        }

        location = /re {
            http_matches '[{"headers":["x:RegularExpression:^(a+)+\$"],"redirectPath":"/t/slow"},
                           {"headers":["y:Exact:1"],"redirectPath":"/t/exact"},
                           {"headers":["w:RegularExpression:^a"],"redirectPath":"/t/later"},
                           {"any":true,"redirectPath":"/t/any"}]';
        }

        location = /off {
            http_matches_regex_budget $budget_off;
            http_matches '[{"headers":["x:RegularExpression:^(a+)+\$"],"redirectPath":"/t/slow"},
                           {"any":true,"redirectPath":"/t/any"}]';
        }

        location = /var {
            set \$http_matches '[{"headers":["v:Exact:1"],"redirectPath":"/t/v1"},{"any":true,"redirectPath":"/t/vany"}]';
            http_matches;
        }

        # Made for each request (a variable in it): not a configured value, so the cache's
        # (a configured literal is compiled once and kept outside it).
        location = /big {
            set \$e '';
            set \$http_matches '[{"headers":["x:RegularExpression:^(?:a|b|c|d|e|f|g|h)+[0-9]{1,8}z(?!.)"],"redirectPath":"/t/b1\$e"},{"headers":["x:RegularExpression:^(?:i|j|k|l|m|n|o|p)+[0-9]{1,8}z(?!.)"],"redirectPath":"/t/b2"},{"params":["q=RegularExpression=^(?:q|r|s|t|u|v|w|x)+[0-9]{1,8}z(?!.)"],"redirectPath":"/t/b3"},{"any":true,"redirectPath":"/t/bany"}]';
            http_matches;
        }
    }
EOF

$t->run();

###############################################################################

# a catastrophic pattern against a long value: each attempt is bounded, the request answers

my $x = 'x: ' . ('a' x 4000) . '!';

like(request('GET', '/re', $x), qr!uri=/t/any!, 'catastrophic regex: no match, answered');
like(request('GET', '/re', $x, 'y: 1'), qr!uri=/t/exact!, 'exact condition after it still works');
like(request('GET', '/re', 'x: aaa'), qr!uri=/t/slow!, 'the pattern matches a short value');
like(request('GET', '/re', 'w: abc'), qr!uri=/t/later!, 'a later pattern');
like(request('GET', '/off', $x), qr!uri=/t/any!, 'budget off: no match, answered');
like(request('GET', '/off', 'x: aa'), qr!uri=/t/slow!, 'budget off: the pattern still matches');

# $http_matches: compiled once per worker per value

like(request('GET', '/var', 'v: 1'), qr!uri=/t/v1!, 'var: first request');
like(http_get('/var'), qr!uri=/t/vany!, 'var: second request');
like(http_get('/big?q=qrs12z'), qr!uri=/t/b3!, 'var bigger than the cache: routed');
like(request('GET', '/big', 'x: ijk9z'), qr!uri=/t/b2!, 'var bigger than the cache: again');

$t->stop();

my $log = $t->read_file('error.log');

my @gave_up = $log =~ /\[warn\].*http_matches: regular expression "\^\(a\+\)\+\$" of entry 0 gave up \(.*\); counted as no match/g;
is(scalar @gave_up, 3, 'one [warn] per request that gave up');
unlike($log, qr/\[(error|alert|crit)\]/, 'nothing worse than [warn]');

my @compiled = $log =~ /\[info\].*http_matches: compiled a \$http_matches value of (\d+) bytes/g;
is(scalar @compiled, 1, 'var: compiled once for two requests');
my @uncached = $log =~ /\[warn\].*http_matches: a \$http_matches value of \d+ bytes compiles to \d+ bytes, more than http_matches_var_cache \(4096\): compiled for this request only/g;
is(scalar @uncached, 2, 'var bigger than the cache: [warn], compiled each time');

###############################################################################
