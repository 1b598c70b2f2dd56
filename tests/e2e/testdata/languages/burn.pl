# The language coverage test's Perl program: burns CPU in nxv_hot, a sub of the
# script's main package defined before its first call, for the
# number of seconds given as its argument.
use strict;
use warnings;
use Time::HiRes qw(time);

sub nxv_hot {
    my ($n) = @_;
    my $x = 1;
    for my $i (1 .. $n) {
        $x = ($x * 48271 + 11) % 2147483647;
    }
    return $x;
}

my $end = time() + $ARGV[0];
while (time() < $end) {
    nxv_hot(20000);
}
