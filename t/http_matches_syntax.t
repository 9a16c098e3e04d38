#!/usr/bin/perl

# Tests for ngx_http_matches_module: typed and untyped match strings, syntax=, how header
# lines and params are read, the query string passed on byte for byte, the $matches_*
# variables, inheritance by `if` blocks, and none by nested locations.

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

my $t = Test::Nginx->new()->has(qw/http rewrite/)->plan(29);

$t->write_file('untyped.json',
	'{"u":[{"headers":["v:a:b"],"params":["arg=x=y"],"redirectPath":"/t/untyped"}]}');

$t->write_file_expand('nginx.conf', http_conf(<<'EOF'));
    http_matches_load untyped.json;

    server {
        listen       127.0.0.1:8080;
        server_name  localhost;

        location /t/ {
            internal;
            add_header X-Entry "$matches_entry $matches_redirect";
            return 200 "uri=$uri args=$args\n";
        }

        # typed: "name:Exact:value", the value may hold ":"
        location = /typed {
            http_matches '[{"headers":["v:Exact:a:b"],"redirectPath":"/t/typed"},
                           {"headers":["w:RegularExpression:^[0-9]+(?!.)"],"redirectPath":"/t/re"}]';
        }

        # untyped (blog era): "name:value", "name=value", split at the first separator
        location = /untyped {
            http_matches '[{"headers":["v:a:b"],"redirectPath":"/t/h"},
                           {"params":["arg=x=y"],"redirectPath":"/t/p"}]';
        }

        # the guess for a typed source, overridden: "x:Exact:1" is name x, value "Exact:1"
        location = /forced {
            http_matches '[{"headers":["x:Exact:1"],"redirectPath":"/t/forced"}]' syntax=untyped;
        }

        location = /file {
            set $match_key u;
            http_matches;
        }

        location = /params {
            http_matches '[{"params":["a=Exact=1 2"],"redirectPath":"/t/a"},
                           {"params":["b=Exact=%zz"],"redirectPath":"/t/b"},
                           {"params":["c=Exact=\u00ff"],"redirectPath":"/t/c"},
                           {"params":["e=RegularExpression=.*"],"redirectPath":"/t/e"},
                           {"params":["n=Exact=1"],"redirectPath":"/t/n"}]';
        }

        location = /headers {
            http_matches '[{"headers":["h:Exact:b"],"redirectPath":"/t/h"},
                           {"headers":["e:RegularExpression:^(?!.)"],"redirectPath":"/t/e"},
                           {"headers":["x_y:Exact:1"],"redirectPath":"/t/underscore"},
                           {"any":true,"redirectPath":"/t/any"}]';
        }

        # an inline list is inherited by `if`, not by nested locations
        location /inherit {
            http_matches '[{"headers":["x:Exact:1"],"redirectPath":"/t/parent"},
                           {"any":true,"redirectPath":"/t/any"}]';

            if ($arg_own) {
                http_matches '[{"any":true,"redirectPath":"/t/own"}]';
            }
            if ($arg_plain) {
                add_header X-If yes;
            }
            location /inherit/nested {
            }
        }
    }
EOF

$t->run();

###############################################################################

# typed and untyped

like(request('GET', '/typed', 'v: a:b'), qr!uri=/t/typed!, 'typed: value holds ":"');
like(request('GET', '/typed', 'w: 123'), qr!uri=/t/re!, 'typed: regular expression');
like(request('GET', '/typed', 'w: 12a'), qr!^HTTP/1\.. 404!, 'typed: regex not matched');
like(request('GET', '/untyped', 'v: a:b'), qr!uri=/t/h!, 'untyped header: split at first ":"');
like(http_get('/untyped?arg=x=y'), qr!uri=/t/p!, 'untyped param: split at first "="');
like(http_get('/untyped?arg=x'), qr!^HTTP/1\.. 404!, 'untyped param: whole value');
like(request('GET', '/forced', 'x: Exact:1'), qr!uri=/t/forced!, 'syntax=untyped overrides');
like(request('GET', '/forced', 'x: 1'), qr!^HTTP/1\.. 404!, 'syntax=untyped: not typed');
like(request('GET', '/file?arg=x=y', 'v: a:b'), qr!uri=/t/untyped!, 'untyped file');

# params: split on "&", at the first "=", "+" and %XX decoded, first occurrence

like(http_get('/params?a=1+2'), qr!uri=/t/a!, 'param: "+" is a space');
like(http_get('/params?a=1%202'), qr!uri=/t/a!, 'param: %20 is a space');
like(http_get('/params?b=%zz'), qr!uri=/t/b!, 'param: invalid escape kept');
like(http_get('/params?c=%C3%BF'), qr!uri=/t/c!, 'param: escaped UTF-8');
like(http_get('/params?e=&n=1'), qr!uri=/t/n!, 'param: empty value is absent');
like(http_get('/params?e&n=1'), qr!uri=/t/n!, 'param: no "=" is absent');
like(http_get('/params?%6e=1'), qr!uri=/t/n!, 'param: name decoded');
like(http_get('/params?N=1'), qr!^HTTP/1\.. 404!, 'param: names case-sensitive');

# header lines and elements

like(request('GET', '/headers', "h: a,\tb ,c"), qr!uri=/t/h!, 'header: element trimmed');
like(request('GET', '/headers', 'e: a,,c'), qr!uri=/t/any!, 'header: empty element matches nothing');
like(request('GET', '/headers', 'e:'), qr!uri=/t/any!, 'header: empty header fails');
like(request('GET', '/headers', 'x-y: 1'), qr!uri=/t/any!, 'header: "-" is not "_"');

# the query string reaches the internal location byte for byte

my $q = 'b=2&a=1&a=3&x=hello+world&y=%7e&z=%zz;w&&e=&%FF=%00';
like(http_get("/headers?$q"), qr!uri=/t/any args=\Q$q\E\n!, 'args byte for byte');

# $matches_entry, $matches_redirect in the location redirected to

like(http_get('/params?n=1'), qr!X-Entry: 4 /t/n!, 'variables');

# if and nested locations

like(request('GET', '/inherit', 'x: 1'), qr!uri=/t/parent!, 'location');
like(request('GET', '/inherit?own=1', 'x: 1'), qr!uri=/t/own!, 'if with its own list');
like(request('GET', '/inherit?plain=1', 'x: 1'), qr!uri=/t/parent!, 'if inherits the list');
like(http_get('/inherit?plain=1'), qr!uri=/t/any!, 'if inherits the whole list');
# A nested location is a location of its own: like proxy_pass, http_matches is not its
# content handler unless it says so (README), so it serves files (none here: 404).

like(request('GET', '/inherit/nested', 'x: 1'), qr!^HTTP/1\.. 404!, 'nested location: own handler');
unlike(http_get('/inherit/nested?q=%2F'), qr!uri=/t/!, 'nested location: no redirect');

###############################################################################
