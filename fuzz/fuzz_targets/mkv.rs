//! The mkv demuxer on arbitrary bytes (see `attune_media::fuzzing::mkv`).
#![no_main]

libfuzzer_sys::fuzz_target!(init: attune_media_fuzz::init(), |data: &[u8]| {
    attune_media::fuzzing::mkv(data);
});
