//! Arbitrary bytes through the decoders below the port: module EEPROM images (flat, hex and
//! netlink halves), ethtool's netlink replies, rtnetlink's VF list and the ethtool ioctls'
//! structs. The checks are in `src/phy.rs`, shared with
//! `crates/linerate-phy/tests/fuzz_seeds.rs`.
#![no_main]

#[path = "../src/phy.rs"]
#[allow(dead_code)]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    checks::check_phy(data);
});
