//! Arbitrary bytes as a stream of control frames: reading and decoding never panics, and every
//! message decoded re-encodes and decodes back to itself. The checks are in `src/lib.rs`, shared
//! with `crates/linerate-proto/tests/fuzz_seeds.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    linerate_fuzz::check_decode_frame(data);
});
