# The language coverage test's Python program: burns CPU in nxv_hot for the
# number of seconds given as its argument.
import sys
import time


def nxv_hot(n):
    x = 1
    for _ in range(n):
        x = (x * 48271 + 11) % 2147483647
    return x


def main():
    end = time.monotonic() + int(sys.argv[1])
    while time.monotonic() < end:
        nxv_hot(20000)


main()
