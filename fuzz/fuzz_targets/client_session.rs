//! A script of a server's bytes, time passing, the server gone and this end's events against a
//! client's conversation (`linerate_proto::session::ControlClient`): no panic, bounded memory,
//! every end named. The checks are in `src/lib.rs`, shared with
//! `crates/linerate-proto/tests/fuzz_seeds.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    linerate_fuzz::check_client_session(data);
});
