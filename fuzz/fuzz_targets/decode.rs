//! The file path end to end, as an upload meets it: `probe`, the model checks, then
//! `decode_audio` and `video_frames` on the same bytes, through content sniffing.
#![no_main]

use attune_media::{check, decode_audio, probe, video_frames, MediaRequirements};

libfuzzer_sys::fuzz_target!(init: attune_media_fuzz::init(), |data: &[u8]| {
    if let Ok(info) = probe(data) {
        assert!(
            info.duration.is_finite() && info.duration > 0.0,
            "probe accepted {info:?}"
        );
        let _ = check(&info, &MediaRequirements::for_inter2());
        let _ = check(&info, &MediaRequirements::for_inter2_audio());
    }
    if let Ok(pcm) = decode_audio(data) {
        attune_media::fuzzing::check_pcm(&pcm.samples, attune_media::MAX_DECODE_SECONDS);
    }
    if let Ok(frames) = video_frames(data) {
        assert!(frames.len() <= data.len(), "{} frames from {} bytes", frames.len(), data.len());
        assert!(frames.iter().all(|f| f.pts.is_finite()), "non-finite pts");
    }
});
