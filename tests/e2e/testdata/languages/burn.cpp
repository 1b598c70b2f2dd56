// The language coverage test's C++ program: burns CPU in nxv::Burner::hot
// for the number of seconds given as its argument. Built without -g by the
// test: the symbol table names it, no debug information needed.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace nxv {

struct Burner {
	volatile std::uint64_t sink = 0;
	__attribute__((noinline)) std::uint64_t hot(int n);
};

std::uint64_t Burner::hot(int n) {
	std::uint64_t x = 1;
	for (int i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

}  // namespace nxv

int main(int argc, char **argv) {
	if (argc < 2) {
		std::fprintf(stderr, "usage: burn SECONDS\n");
		return 2;
	}
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(std::atoi(argv[1]));
	nxv::Burner b;
	while (std::chrono::steady_clock::now() < end) {
		b.sink += b.hot(1000000);
	}
	return 0;
}
