//! H.264 frames through the OpenH264 pixel decoder (see `attune_media::fuzzing::luma` for the layout).
#![no_main]

libfuzzer_sys::fuzz_target!(init: attune_media_fuzz::init(), |data: &[u8]| {
    attune_media::fuzzing::h264(data);
});
