# The language coverage test's second Perl program: burn.pl with nxv_hot in a
# package (as in a module or a class) instead of the script's main package.
use strict;
use warnings;
use Time::HiRes qw(time);

package NxvBurn;

sub nxv_hot {
    my ($n) = @_;
    my $x = 1;
    for my $i (1 .. $n) {
        $x = ($x * 48271 + 11) % 2147483647;
    }
    return $x;
}

package main;

my $end = time() + $ARGV[0];
while (time() < $end) {
    NxvBurn::nxv_hot(20000);
}
