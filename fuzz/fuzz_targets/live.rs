//! The live reader fed frames whose sizes come from the input (see `attune_media::fuzzing::live`).
#![no_main]

libfuzzer_sys::fuzz_target!(init: attune_media_fuzz::init(), |data: &[u8]| {
    attune_media::fuzzing::live(data);
});
