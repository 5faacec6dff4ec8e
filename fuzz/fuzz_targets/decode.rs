//! The upload path end to end through content sniffing (see `attune_media::fuzzing::decode`).
#![no_main]

libfuzzer_sys::fuzz_target!(init: attune_media_fuzz::init(), |data: &[u8]| {
    attune_media::fuzzing::decode(data);
});
