// The language coverage test's Java program: burns CPU in nxvHot for the
// number of seconds given as its argument.
public class NxvBurn {
    static long sink;

    static long nxvHot(int n) {
        long x = 1;
        for (int i = 0; i < n; i++) {
            x = (x * 48271 + 11) % 2147483647;
        }
        return x;
    }

    public static void main(String[] args) {
        long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000_000L;
        while (System.nanoTime() < end) {
            sink += nxvHot(200000);
        }
        if (sink == 42) System.out.println(sink);
    }
}
