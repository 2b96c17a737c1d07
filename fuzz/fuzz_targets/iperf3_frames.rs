//! Arbitrary bytes through linerate-iperf3's frame decoder and both control sessions. The checks
//! are in `src/iperf3.rs`, shared with `crates/linerate-iperf3/tests/fuzz_seeds.rs`.
#![no_main]

#[path = "../src/iperf3.rs"]
#[allow(dead_code)]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    checks::check_frames(data);
});
