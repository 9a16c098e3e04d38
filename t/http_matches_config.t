#!/usr/bin/perl

# Tests for ngx_http_matches_module: what a configuration is refused or warned for, with the
# file and line of the directive, and http_matches_strict. What tests/http_matches.rs already
# asserts is not repeated here (its nginx_t_* tests: a missing or malformed file, the top-level
# shapes, a bad regex in a file with and without strict, inline JSON errors, syntax=, a
# duplicate directive).

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

my $t = Test::Nginx->new()->has(qw/http/)->plan(14);

# conf($http, $location): a configuration with $http in http{} and $location in one location.

sub conf {
	my ($http, $location) = @_;
	$location = '' unless defined $location;

	return http_conf(<<"EOF");
    $http

    server {
        listen       127.0.0.1:8080;
        server_name  localhost;

        location /t/ {
            internal;
            return 200 "uri=\$uri\\n";
        }

        location = /m {
            $location
        }
    }
EOF
}

my $d = $t->testdir();
my $bad_re = '{"headers":["x:RegularExpression:(["],"redirectPath":"/t/re"}';
my $nowhere = '{"any":true,"redirectPath":"@nowhere"}';
my ($log, $at);

# http_matches_load: the file must exist and be a JSON object of lists

$t->write_file('m.json', '{"k": []}');
$log = check($t, conf('http_matches_load m.json;'));
like($log, qr/\[emerg\].*http_matches: invalid "\Q$d\E\/m.json": .*\$\["k"\]/, 'empty list refused');

$log = check($t, conf('', 'http_matches_load m.json;'));
like($log, qr/\[emerg\].*"http_matches_load" directive is not allowed here/, 'http level only');

# inline lists

my $long = '[' . join(',', map { qq({"headers":["x:Exact:$_"],"redirectPath":"/t/$_"}) } 1 .. 90) . ']';
$log = check($t, conf('', "http_matches '$long';"));
like($log, qr/\[emerg\].*too long parameter/, 'inline list over 4 KiB: NGINX\'s own message');

$t->write_file('long.json', qq({"k":$long}));
$log = started_log($t, conf('http_matches_load long.json;'));
unlike($log, qr/\[emerg\]/, 'the same list in a file loads');

# a malformed entry: [warn] by default, [emerg] with http_matches_strict on

$t->write_file('m.json', qq({"1_0":[$bad_re]}));
$log = check($t, conf('http_matches_load m.json; http_matches_strict on;'));
like($log, qr/\[emerg\].*\(http_matches_strict is on\)/, 'strict after the file');

$log = started_log($t, conf('', "http_matches '[$bad_re]';"));
like($log, qr/\[warn\].*http_matches: \$\[0\]: invalid regular expression "\(\["/,
	'bad regex inline: [warn]');

$log = check($t, conf('http_matches_strict on;', "http_matches '[$bad_re]';"));
like($log, qr/\[emerg\].*\(http_matches_strict is on\)/, 'strict inherited from http');

$log = started_log($t, conf('http_matches_strict on;', "http_matches_strict off; http_matches '[$bad_re]';"));
unlike($log, qr/\[emerg\]/, 'strict off in the location');

# redirectPath "@name" of no named location

$t->write_file('m.json', qq({"k":[$nowhere]}));
$log = started_log($t, conf('http_matches_load m.json;'));
$at = "in $d/nginx.conf:" . line_of($t, 'http_matches_load');
like($log, qr/\[warn\].*http_matches: \$\["k"\]\[0\]: redirectPath "\@nowhere" names a location that no server defines; a request that it wins answers 500 \Q$at\E$/m,
	'unknown named location in file: [warn]');

$log = check($t, conf('http_matches_strict on; http_matches_load m.json;'));
like($log, qr/\[emerg\].*redirectPath "\@nowhere" names a location/, 'unknown named location, strict');

$log = started_log($t, conf('', "http_matches '[$nowhere]';"));
like($log, qr/\[warn\].*http_matches: \$\[0\]: redirectPath "\@nowhere"/,
	'unknown named location inline: [warn]');

# the other directives' values

$log = check($t, conf('http_matches_var_max_size lots;'));
like($log, qr/\[emerg\].*"http_matches_var_max_size" directive invalid value/, 'var_max_size value');

$log = check($t, conf('http_matches_var_cache lots;'));
like($log, qr/\[emerg\].*"http_matches_var_cache" directive invalid value/, 'var_cache value');

$log = check($t, conf('', 'http_matches_var_cache 1m;'));
like($log, qr/\[emerg\].*"http_matches_var_cache" directive is not allowed here/, 'var_cache context');

###############################################################################
