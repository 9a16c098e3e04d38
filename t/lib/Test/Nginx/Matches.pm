package Test::Nginx::Matches;

# Helpers for the tests of ngx_http_matches_module under the NGINX test harness
# (nginx-tests' Test::Nginx, found through `prove -I $NGINX_TESTS_DIR/lib`).

###############################################################################

use warnings;
use strict;

use base qw/ Exporter /;

our @EXPORT = qw/ matches_tests http_conf check started_log line_of request /;

use Test::More qw//;
use Test::Nginx;

###############################################################################

# Test::Nginx's has() reads `nginx -V` and the modules it loads itself: an out-of-tree module
# is loaded by TEST_NGINX_GLOBALS ("load_module /abs/path/ngx_http_matches_module.so;") or
# built in with --add-module=DIR, where DIR/config names the module. Otherwise the file is
# skipped, saying how to load it (with TEST_NGINX_MATCHES_REQUIRED set, as scripts/test.sh
# does, it fails instead); a module that is named but fails to load fails the tests.

# matches_tests(): the start of every t/http_matches*.t: output unbuffered, then
# skip_unless_module().

sub matches_tests {
	select STDERR; $| = 1;
	select STDOUT; $| = 1;

	skip_unless_module();
}

sub skip_unless_module {
	return if ($ENV{TEST_NGINX_GLOBALS} || '') =~ /ngx_http_matches/;

	my $v = `$Test::Nginx::NGINX -V 2>&1`;
	for my $dir ($v =~ /--add-module=(\S+)/g) {
		open my $f, '<', "$dir/config" or next;
		return if grep { /ngx_addon_name=ngx_http_matches_module/ } <$f>;
	}

	my $why = 'ngx_http_matches_module not loaded: set '
		. 'TEST_NGINX_GLOBALS="load_module /abs/path/ngx_http_matches_module.so;"';
	Test::More::BAIL_OUT($why) if $ENV{TEST_NGINX_MATCHES_REQUIRED};
	Test::More::plan(skip_all => $why);
}

# http_conf($http): nginx.conf with the harness's globals, daemon off, and $http (directives
# and server blocks) inside http{}.

sub http_conf {
	my ($http) = @_;

	return "\n%%TEST_GLOBALS%%\n\ndaemon off;\n\nevents {\n}\n\n"
		. "http {\n    %%TEST_GLOBALS_HTTP%%\n\n$http}\n";
}

# check($t, $conf): writes $conf as nginx.conf, expects NGINX to refuse to start, and returns
# what it logged (the error log of that attempt alone).

sub check {
	my ($t, $conf) = @_;

	$t->write_file_expand('nginx.conf', $conf);
	$t->write_file('error.log', '');

	my $started = eval {
		open my $olderr, '>&', \*STDERR or die "dup: $!";
		close STDERR;
		my $ok = eval { $t->run(); 1 };
		open STDERR, '>&', $olderr or die "dup: $!";
		$ok;
	};

	if ($started) {
		$t->stop();
		return 'NGINX started: the configuration was accepted';
	}

	return $t->read_file('error.log');
}

# started_log($t, $conf): starts NGINX with $conf, stops it, returns its error log.

sub started_log {
	my ($t, $conf) = @_;

	$t->write_file_expand('nginx.conf', $conf);
	$t->write_file('error.log', '');

	# the [warn] lines NGINX also prints on stderr are read from the log
	open my $olderr, '>&', \*STDERR or die "dup: $!";
	close STDERR;
	my $ok = eval { $t->run(); 1 };
	open STDERR, '>&', $olderr or die "dup: $!";
	die $@ unless $ok;
	$t->stop();

	return $t->read_file('error.log');
}

# line_of($t, $needle): the 1-based line of nginx.conf holding $needle.

sub line_of {
	my ($t, $needle) = @_;

	my @lines = split /\n/, $t->read_file('nginx.conf');
	for my $i (0 .. $#lines) {
		return $i + 1 if index($lines[$i], $needle) >= 0;
	}

	return 0;
}

# request($method, $uri, @headers): a raw HTTP/1.0 request, header lines given as "Name: v".

sub request {
	my ($method, $uri, @headers) = @_;

	my $h = join '', map { "$_\n" } @headers;
	return http("$method $uri HTTP/1.0\nHost: localhost\n$h\n");
}

###############################################################################

1;

###############################################################################
