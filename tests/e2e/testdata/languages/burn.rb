# The language coverage test's Ruby program: burns CPU in nxv_hot for the
# number of seconds given as its argument.
def nxv_hot(n)
  x = 1
  n.times { x = (x * 48271 + 11) % 2147483647 }
  x
end

finish = Process.clock_gettime(Process::CLOCK_MONOTONIC) + Integer(ARGV[0])
nxv_hot(20000) while Process.clock_gettime(Process::CLOCK_MONOTONIC) < finish
