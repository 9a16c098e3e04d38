#!/usr/bin/perl
# Runs TAP test files (NGINX's suite) with TAP::Harness and records every test's outcome, so
# that two runs can be compared test by test (scripts/lib/suite-compare.py).
#   tap-record.pl OUT.tsv JOBS FILE...
# OUT.tsv, one line per test and one per file, tab-separated:
#   T  file  number  ok|not_ok|skip|todo|todo_passed  description
#   F  file  pass|skip_all|fail  detail (skip reason, or what failed)
# Exits 0 whatever the tests did: judging the outcomes is the comparison's job.

use warnings;
use strict;

use TAP::Harness;

my ($out, $jobs, @files) = @ARGV;
die "usage: tap-record.pl OUT.tsv JOBS FILE...\n" unless defined $jobs && @files;

open my $fh, '>', $out or die "cannot write $out: $!\n";

sub clean {
	my ($s) = @_;
	$s = '' unless defined $s;
	$s =~ s/[\t\r\n]+/ /g;
	return $s;
}

my $harness = TAP::Harness->new({ jobs => $jobs, verbosity => -1, merge => 1 });

$harness->callback(made_parser => sub {
	my ($parser, $job) = @_;
	my $file = $job->[0];
	$parser->callback(test => sub {
		my ($r) = @_;
		my $status = $r->has_skip ? 'skip'
			: $r->has_todo ? ($r->is_actual_ok ? 'todo_passed' : 'todo')
			: $r->is_ok ? 'ok' : 'not_ok';
		print $fh join("\t", 'T', $file, $r->number, $status,
			clean($r->description)), "\n";
	});
});

$harness->callback(after_test => sub {
	my ($job, $parser) = @_;
	my $file = $job->[0];
	my ($status, $detail);
	if ($parser->skip_all) {
		($status, $detail) = ('skip_all', $parser->skip_all);
	} elsif ($parser->has_problems) {
		my @why;
		push @why, 'failed ' . join(',', $parser->failed) if $parser->failed;
		push @why, 'exit ' . $parser->exit if $parser->exit;
		push @why, 'wait ' . $parser->wait if $parser->wait;
		push @why, $parser->parse_errors if $parser->parse_errors;
		($status, $detail) = ('fail', join('; ', @why));
	} else {
		($status, $detail) = ('pass', '');
	}
	print $fh join("\t", 'F', $file, $status, clean($detail)), "\n";
});

$harness->runtests(@files);
close $fh or die "cannot write $out: $!\n";
exit 0;
