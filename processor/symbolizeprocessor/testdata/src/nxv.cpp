// C++ functions for the symbolize processor's tests: a method in a
// namespace, a member of a class template, a function template, an
// overloaded operator.
namespace nxv {

struct Worker {
	__attribute__((noinline)) int run(int n);
};

int Worker::run(int n) {
	volatile int x = n;
	return x * 7;
}

template <class T> struct Box {
	T v;
	__attribute__((noinline)) T get(int n) { return v + n; }
};

template <class T> __attribute__((noinline)) T twice(T v) { return v + v; }

struct Vec {
	int x;
	__attribute__((noinline)) Vec operator+(const Vec &o) const { return Vec{x + o.x}; }
};

}  // namespace nxv

int main(int argc, char **) {
	nxv::Worker w;
	nxv::Box<int> b{argc};
	nxv::Vec a{1}, c{2};
	return w.run(argc) + b.get(argc) + nxv::twice<long>(argc) + (a + c).x;
}
