//! A script of a client's bytes, time passing, the client gone and this end's events against a
//! server's conversation (`linerate_proto::session::ControlServer`): no panic, bounded memory,
//! no byte read past a data connection's first frame, every end named. The checks are in
//! `src/lib.rs`, shared with `crates/linerate-proto/tests/fuzz_seeds.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    linerate_fuzz::check_server_session(data);
});
