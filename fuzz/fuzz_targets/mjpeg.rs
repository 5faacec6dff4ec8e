//! Motion JPEG frames through the zune-jpeg pixel decoder (see `attune_media::fuzzing::luma`).
#![no_main]

libfuzzer_sys::fuzz_target!(init: attune_media_fuzz::init(), |data: &[u8]| {
    attune_media::fuzzing::mjpeg(data);
});
