//! Symphonia decoder parameters for codecs this crate demuxes itself (Matroska, AVI, MPEG-TS).

use symphonia::core::audio::sample::SampleFormat;
use symphonia::core::audio::Channels;
use symphonia::core::codecs::audio::well_known::*;
use symphonia::core::codecs::audio::{AudioCodecId, AudioCodecParameters};

use crate::error::MediaError;
use crate::info::{Codec, PcmFormat};

/// Decoder parameters for `codec` at `rate` Hz with `channels` channels and the codec's private
/// data (`extra`, already in the layout Symphonia's decoder expects).
pub(crate) fn symphonia_params(
    codec: &Codec,
    rate: u32,
    channels: u16,
    extra: Option<Box<[u8]>>,
) -> Result<AudioCodecParameters, MediaError> {
    let id: AudioCodecId = match codec {
        Codec::Aac => CODEC_ID_AAC,
        Codec::Mp3 => CODEC_ID_MP3,
        Codec::Mp2 => CODEC_ID_MP2,
        Codec::Flac => CODEC_ID_FLAC,
        Codec::Vorbis => CODEC_ID_VORBIS,
        Codec::Alac => CODEC_ID_ALAC,
        Codec::Pcm(p) => {
            pcm_codec_id(p).ok_or_else(|| MediaError::unsupported(codec.to_string()))?
        }
        other => return Err(MediaError::unsupported(other.to_string())),
    };
    if rate == 0 && matches!(codec, Codec::Pcm(_)) {
        return Err(MediaError::unsupported(format!("{codec} at 0 Hz")));
    }
    let mut params = AudioCodecParameters::new();
    params.for_codec(id);
    if rate > 0 {
        params.with_sample_rate(rate);
    }
    if channels > 0 {
        params.with_channels(layout(channels));
    }
    if let Codec::Pcm(p) = codec {
        if channels == 0 {
            return Err(MediaError::unsupported(format!(
                "{codec} without a channel count"
            )));
        }
        let format = match (p.bits, p.float) {
            (8, false) => SampleFormat::U8,
            (16, false) => SampleFormat::S16,
            (24, false) => SampleFormat::S24,
            (32, false) => SampleFormat::S32,
            (32, true) => SampleFormat::F32,
            _ => SampleFormat::F64,
        };
        params.with_sample_format(format);
        params.with_bits_per_sample(u32::from(p.bits));
        params.with_bits_per_coded_sample(u32::from(p.bits));
    }
    if let Some(extra) = extra {
        params.with_extra_data(extra);
    }
    Ok(params)
}

/// Symphonia's codec id for a PCM layout.
fn pcm_codec_id(p: &PcmFormat) -> Option<AudioCodecId> {
    Some(match (p.bits, p.float, p.big_endian) {
        (8, false, _) => CODEC_ID_PCM_U8,
        (16, false, false) => CODEC_ID_PCM_S16LE,
        (16, false, true) => CODEC_ID_PCM_S16BE,
        (24, false, false) => CODEC_ID_PCM_S24LE,
        (24, false, true) => CODEC_ID_PCM_S24BE,
        (32, false, false) => CODEC_ID_PCM_S32LE,
        (32, false, true) => CODEC_ID_PCM_S32BE,
        (32, true, false) => CODEC_ID_PCM_F32LE,
        (32, true, true) => CODEC_ID_PCM_F32BE,
        (64, true, false) => CODEC_ID_PCM_F64LE,
        (64, true, true) => CODEC_ID_PCM_F64BE,
        _ => return None,
    })
}

/// A channel layout for `n` channels: the standard positions for mono and stereo (which some
/// decoders require), discrete channels beyond.
fn layout(n: u16) -> Channels {
    use symphonia::core::audio::Position;
    match n {
        1 => Channels::Positioned(Position::FRONT_CENTER),
        2 => Channels::Positioned(Position::FRONT_LEFT | Position::FRONT_RIGHT),
        n => Channels::Discrete(n),
    }
}
