// A Rust program for the symbolize processor's tests: nxv::hot, mangled
// the legacy way by default and the v0 way with
// -C symbol-mangling-version=v0.
mod nxv {
    #[inline(never)]
    pub fn hot(n: u64) -> u64 {
        let mut x = 1u64;
        for i in 0..n {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        x
    }
}

fn main() {
    let n: u64 = std::env::args().count() as u64 * 1000;
    println!("{}", nxv::hot(n));
}
