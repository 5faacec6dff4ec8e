//! VP8 frames through the VP8 pixel decoder, once the build has one (see `attune_media::fuzzing::luma`).
#![no_main]

libfuzzer_sys::fuzz_target!(init: attune_media_fuzz::init(), |data: &[u8]| {
    attune_media::fuzzing::vp8(data);
});
