<?php
// The language coverage test's PHP program: burns CPU in nxv_hot for the
// number of seconds given as its argument.
function nxv_hot($n) {
    $x = 1;
    for ($i = 0; $i < $n; $i++) {
        $x = ($x * 48271 + 11) % 2147483647;
    }
    return $x;
}

$end = microtime(true) + (int)$argv[1];
while (microtime(true) < $end) {
    nxv_hot(20000);
}
