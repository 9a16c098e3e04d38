#!/usr/bin/perl

# Tests for ngx_http_matches_module: the three carriers of a match list (an inline list,
# http_matches_load with $match_key, $http_matches set with `set`) route the same requests
# the same way: method, headers, params, first-match order, named locations, 404, 500.

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

# Anchors are (?!.), not $: `set` would read $ as a variable.

my $list = join ',',
	'{"method":"POST","redirectPath":"/t/post"}',
	'{"headers":["x-exact:Exact:v2"],"redirectPath":"/t/hexact"}',
	'{"headers":["x-re:RegularExpression:^ab+c(?!.)"],"redirectPath":"/t/hre"}',
	'{"params":["p=Exact=a b/c"],"redirectPath":"/t/pexact"}',
	'{"params":["pr=RegularExpression=^v[0-9]+(?!.)"],"redirectPath":"/t/pre"}',
	'{"method":"GET","headers":["x-and:Exact:1"],"params":["and=Exact=1"],'
		. '"redirectPath":"/t/and"}',
	'{"headers":["x-named:Exact:1"],"redirectPath":"@named"}',
	'{"headers":["x-first:Exact:1"],"redirectPath":"/t/first"}',
	'{"headers":["x:Bogus:1"],"redirectPath":"/t/bad"}',
	'{"any":true,"redirectPath":"/t/any"}';
$list = "[$list]";

my $t = Test::Nginx->new()->has(qw/http rewrite/)->plan(3 * 17 + 6);

my $put = '[{"method":"PUT","redirectPath":"/t/put"}]';

$t->write_file('matches.json', qq({"l":$list,"none":$put}));

$t->write_file_expand('nginx.conf', http_conf(<<"EOF"));
    http_matches_load matches.json;

    server {
        listen       127.0.0.1:8080;
        server_name  localhost;

        error_page 404 /custom404;

        location = /custom404 {
            internal;
            return 404 "custom 404\\n";
        }

        location /t/ {
            internal;
            return 200 "uri=\$uri args=\$args entry=\$matches_entry\\n";
        }

        location \@named {
            return 200 "named uri=\$uri args=\$args entry=\$matches_entry\\n";
        }

        location = /inline {
            http_matches '$list';
        }

        location = /key {
            set \$match_key l;
            http_matches;
        }

        location = /none {
            set \$match_key none;
            http_matches;
        }

        location = /inone {
            http_matches '$put';
        }

        location = /var {
            set \$http_matches '$list';
            http_matches;
        }
    }
EOF

$t->run();

###############################################################################

for my $c (qw/ inline key var /) {

like(request('POST', "/$c", 'x-exact: v2'), qr!uri=/t/post args= entry=0!,
	"$c: method, first match wins");
like(request('GET', "/$c", 'X-EXACT: v2'), qr!uri=/t/hexact args= entry=1!,
	"$c: header name case-insensitive");
like(request('GET', "/$c", 'x-exact: V2', 'x-first: 1'), qr!uri=/t/first!,
	"$c: header value case-sensitive");
like(request('GET', "/$c", 'x-exact: v1', 'x-exact: v2'), qr!uri=/t/hexact!,
	"$c: any line of a repeated header");
like(request('GET', "/$c", 'x-exact: v1, v2'), qr!uri=/t/hexact!,
	"$c: comma-separated element, trimmed");
like(request('GET', "/$c", 'x-re: zz, abbbc'), qr!uri=/t/hre!,
	"$c: regex header on an element");
like(request('GET', "/$c", 'x-re: abbbcd', 'x-first: 1'), qr!uri=/t/first!,
	"$c: regex header anchored, no match");
like(request('GET', "/$c", 'x-re: abc', 'x-exact: v2'), qr!uri=/t/hexact!,
	"$c: first match in list order");
like(http_get("/$c?p=a+b%2Fc"), qr!uri=/t/pexact args=p=a\+b%2Fc entry=3!,
	"$c: param decoded, args kept");
like(http_get("/$c?x=%zz&p=a%20b/c&&y"), qr!uri=/t/pexact args=x=%zz&p=a%20b/c&&y !,
	"$c: param among odd segments");
like(request('GET', "/$c?p=nope&p=a+b/c", 'x-first: 1'), qr!uri=/t/first!,
	"$c: first occurrence of a param counts");
like(http_get("/$c?pr=v%31%32"), qr!uri=/t/pre!, "$c: regex param, decoded");
like(request('GET', "/$c?and=1", 'x-and: 1'), qr!uri=/t/and!,
	"$c: method, header and param together");
like(request('HEAD', "/$c?and=1", 'x-and: 1'), qr!^HTTP/1\.. 500!,
	"$c: HEAD is not GET");
like(request('GET', "/$c?q=1", 'x-named: 1'), qr!named uri=/$c args=q=1 entry=6!,
	"$c: named location");
like(request('GET', "/$c", 'x-first: 1'), qr!uri=/t/first!,
	"$c: the winner stops evaluation before a malformed entry");
like(http_get("/$c"), qr!^HTTP/1\.. 500!, "$c: malformed entry reached: 500");

}

# Lists without a winner for the request: 404 through error_page.

like(http_get('/none'), qr!^HTTP/1\.. 404.*custom 404!s, 'key: no winner, 404 through error_page');
like(http_get('/inone'), qr!^HTTP/1\.. 404.*custom 404!s,
	'inline: no winner, 404 through error_page');
like(request('PUT', '/inone'), qr!uri=/t/put!, 'inline: method PUT');

$t->stop();

my $log = $t->read_file('error.log');
my $reason = 'entry 8 is invalid: invalid header match "x:Bogus:1": unknown match type "Bogus"';
like($log, qr/\[error\].*http_matches: inline list: \Q$reason\E/, 'inline: [error] names the entry');
like($log, qr/\[error\].*http_matches: list "l" of "[^"]*matches.json": \Q$reason\E/,
	'key: [error] names the list and the entry');
like($log, qr/\[error\].*http_matches: list in \$http_matches: \Q$reason\E/,
	'var: [error] names the entry');

###############################################################################
