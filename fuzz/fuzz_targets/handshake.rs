//! See `attune_server::fuzzing::handshake` for what this target drives and the input's layout.
#![no_main]

libfuzzer_sys::fuzz_target!(init: attune_media_fuzz::init(), |data: &[u8]| {
    attune_server::fuzzing::handshake(data);
});
