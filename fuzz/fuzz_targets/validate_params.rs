//! Arbitrary bytes as a `TestParams` JSON document: validation never panics, and what the default
//! limits accept holds bounded server memory. The checks are in `src/lib.rs`, shared with
//! `crates/linerate-proto/tests/fuzz_seeds.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    linerate_fuzz::check_validate_params(data);
});
