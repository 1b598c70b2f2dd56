# The language coverage test's Ruby program: burns CPU in nxv_hot for the
# number of seconds given as its argument. The loop is a `while` in nxv_hot
# itself, so that nxv_hot is the innermost Ruby frame (a block passed to
# Integer#times would run under a C function's frame).
def nxv_hot(n)
  x = 1
  i = 0
  while i < n
    x = (x * 48271 + 11) % 2147483647
    i += 1
  end
  x
end

finish = Process.clock_gettime(Process::CLOCK_MONOTONIC) + Integer(ARGV[0])
nxv_hot(20000) while Process.clock_gettime(Process::CLOCK_MONOTONIC) < finish
