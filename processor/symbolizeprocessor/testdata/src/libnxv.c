// A shared library for the symbolize processor's tests: stripped, its
// exported function is named from .dynsym only.
__attribute__((noinline)) int nxv_exported(int n) {
	volatile int x = n;
	return x * 5;
}
