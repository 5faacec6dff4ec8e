//! Audio decoding: codec packets into mono 16 kHz `f32` PCM whose sample 0 is media time 0.
//!
//! Every container reader hands over an [`AudioTrack`]: the codec, a source of packets, and how
//! many decoded frames the container says to drop from the front (an MP4 edit list's media time,
//! Opus pre-skip). Packets may carry their own trims (`trim_start`/`trim_end`: MP3 LAME gapless
//! info, Ogg granule positions, Matroska `DiscardPadding`), which are applied per packet.
//!
//! Channels are downmixed to mono as the plain mean of all channels (`(L + R) / 2` for stereo),
//! which is also what ffmpeg's default matrix gives for stereo to mono. Resampling to 16 kHz is
//! band-limited; see [`resample`].

pub(crate) mod opus;
pub(crate) mod params;
pub(crate) mod resample;

use symphonia::core::audio::conv::IntoSample;
use symphonia::core::audio::sample::Sample;
use symphonia::core::audio::{Audio, AudioBuffer, GenericAudioBufferRef};
use symphonia::core::codecs::audio::well_known::{
    CODEC_ID_MP1, CODEC_ID_MP2, CODEC_ID_MP3, CODEC_ID_VORBIS,
};
use symphonia::core::codecs::audio::{AudioCodecParameters, AudioDecoder, AudioDecoderOptions};
use symphonia::core::errors::Error as SymError;
use symphonia::core::formats::FormatReader;
use symphonia::core::packet::Packet;

use crate::error::MediaError;
use crate::info::Pcm;
use resample::StreamResampler;

/// The longest decode [`decode_audio`](crate::decode_audio) produces, in seconds: the default
/// maximum upload duration plus a margin, so that a tiny file that decodes to hours of audio
/// (FLAC or PCM silence compresses extremely well) cannot exhaust memory.
pub const MAX_DECODE_SECONDS: f64 = 31.0 * 60.0;

/// How many packets in a row may fail to decode before the stream counts as unreadable.
pub(crate) const MAX_CONSECUTIVE_BAD_PACKETS: usize = 64;

/// The codec of an audio track and the parameters its decoder needs.
pub(crate) enum AudioCodec {
    /// A codec Symphonia decodes (AAC, MP3, MP2, FLAC, Vorbis, ALAC, PCM).
    Symphonia(AudioCodecParameters),
    /// Opus, decoded by `opus-pure` at 48 kHz.
    Opus {
        /// Channel count (1 or 2).
        channels: usize,
    },
}

/// A source of packets of one audio track, in decode order.
pub(crate) trait PacketSource {
    /// The next packet, or `None` at the end of the track.
    fn next_packet(&mut self) -> Result<Option<Packet>, MediaError>;
}

/// Packets a container reader of this crate already cut.
pub(crate) struct VecPackets(std::vec::IntoIter<Packet>);

impl VecPackets {
    /// A source yielding `packets` in order.
    pub(crate) fn new(packets: Vec<Packet>) -> Self {
        Self(packets.into_iter())
    }
}

impl PacketSource for VecPackets {
    fn next_packet(&mut self) -> Result<Option<Packet>, MediaError> {
        Ok(self.0.next())
    }
}

/// Packets of one track of a Symphonia format reader.
pub(crate) struct SymphoniaPackets<'a> {
    /// The reader, over the input bytes.
    pub(crate) reader: Box<dyn FormatReader + 'a>,
    /// The track whose packets are wanted.
    pub(crate) track_id: u32,
    /// Clears the reader's start trims, for a track whose start is cut by `AudioTrack::skip`
    /// instead (Ogg Opus: Symphonia does not turn the pre-skip into packet trims reliably).
    pub(crate) clear_trim_start: bool,
}

impl PacketSource for SymphoniaPackets<'_> {
    fn next_packet(&mut self) -> Result<Option<Packet>, MediaError> {
        loop {
            match crate::guard::catch(|| self.reader.next_packet())? {
                Ok(Some(mut p)) if p.track_id == self.track_id => {
                    if self.clear_trim_start {
                        p.trim_start = symphonia::core::units::Duration::ZERO;
                    }
                    return Ok(Some(p));
                }
                Ok(Some(_)) => {}
                Ok(None) => return Ok(None),
                // A truncated file ends early: what was read so far is still audio.
                Err(SymError::IoError(_)) => return Ok(None),
                Err(e) => return Err(MediaError::unreadable(None, format!("demuxer: {e}"))),
            }
        }
    }
}

/// Everything needed to decode the first audio track of an input.
pub(crate) struct AudioTrack<'a> {
    /// Which decoder to use.
    pub(crate) codec: AudioCodec,
    /// The packets.
    pub(crate) packets: Box<dyn PacketSource + 'a>,
    /// Decoded frames to drop from the front, as `(count, per_second)`: a count in the track's
    /// timescale, converted to the decoder's output rate once that is known.
    pub(crate) skip: (u64, u32),
    /// Silence to put in front, as `(count, per_second)`, when the track starts after media
    /// time 0 (an MPEG-TS audio stream that begins after the video, an MP4 empty edit).
    pub(crate) lead: (u64, u32),
}

impl<'a> AudioTrack<'a> {
    /// A track decoded from its first packet on, with nothing dropped or padded.
    pub(crate) fn new(codec: AudioCodec, packets: Box<dyn PacketSource + 'a>) -> Self {
        Self {
            codec,
            packets,
            skip: (0, 1),
            lead: (0, 1),
        }
    }
}

/// How a track is to be decoded, as a container's header describes it.
pub(crate) struct AudioSetup {
    /// The decoder to use.
    pub(crate) codec: AudioCodec,
    /// Decoded frames to drop from the front, as `(count, per_second)`.
    pub(crate) skip: (u64, u32),
    /// Silence to put in front, as `(count, per_second)`.
    pub(crate) lead: (u64, u32),
}

/// `count` units of `per_second` as frames at `rate` (0 for a zero time base).
pub(crate) fn frames_at(count: u64, per_second: u32, rate: u32) -> u64 {
    if per_second == 0 {
        return 0;
    }
    let frames = u128::from(count) * u128::from(rate) / u128::from(per_second);
    u64::try_from(frames).unwrap_or(u64::MAX)
}

/// Decodes `track` to mono 16 kHz, stopping with [`MediaError::TooLong`] past `max_seconds`.
pub(crate) fn decode_track(track: AudioTrack<'_>, max_seconds: f64) -> Result<Pcm, MediaError> {
    let AudioTrack {
        codec,
        mut packets,
        skip,
        lead,
    } = track;
    let mut decoder = Decoder::new(codec)?;
    let max_out = (max_seconds * f64::from(Pcm::SAMPLE_RATE)).ceil() as usize;
    let mut resampler: Option<(u32, StreamResampler)> = None;
    let mut skip_left: Option<u64> = None;
    let mut mono = Vec::new();
    let mut bad_in_a_row = 0usize;
    let mut first_error = None;

    while let Some(packet) = packets.next_packet()? {
        let rate = match decoder.decode(&packet, &mut mono) {
            Ok(rate) => {
                bad_in_a_row = 0;
                rate
            }
            Err(e) => {
                // A corrupt packet is skipped, as a player would; many in a row mean the stream
                // is not this codec at all.
                first_error.get_or_insert(e);
                bad_in_a_row += 1;
                if bad_in_a_row > MAX_CONSECUTIVE_BAD_PACKETS {
                    break;
                }
                continue;
            }
        };
        if mono.is_empty() {
            continue;
        }
        if rate == 0 {
            return Err(MediaError::unreadable(
                None,
                "audio decoder reported a rate of 0 Hz",
            ));
        }
        let (res_rate, res) = match &mut resampler {
            Some((rate, res)) => (rate, res),
            slot => {
                let (rate, res) = slot.insert((rate, StreamResampler::new(rate)?));
                // The lead silence goes in piecewise so that an absurd start time in a
                // damaged file meets the length cap before it meets the allocator.
                let mut lead_left = frames_at(lead.0, lead.1, *rate);
                let zeros = [0.0f32; 4096];
                while lead_left > 0 {
                    let n = lead_left.min(zeros.len() as u64) as usize;
                    res.push(&zeros[..n])?;
                    lead_left -= n as u64;
                    if res.final_len() > max_out {
                        return Err(too_long(res.final_len(), max_seconds));
                    }
                }
                (rate, res)
            }
        };
        if *res_rate != rate {
            // A mid-stream rate change would need a second resampler; real files do not do it
            // and the analysis needs one timeline, so the rest is dropped.
            break;
        }
        let skip_now = skip_left.get_or_insert_with(|| frames_at(skip.0, skip.1, rate));
        let drop = (*skip_now).min(mono.len() as u64) as usize;
        *skip_now -= drop as u64;
        res.push(&mono[drop..])?;
        // The length the input decoded so far makes, not the resampler's output so far: at a
        // very low input rate a whole file waits below one resampler chunk and would come out
        // only at `finish`, past the cap (found by the `wav` fuzz target: a 7 Hz WAV).
        if res.final_len() > max_out {
            return Err(too_long(res.final_len(), max_seconds));
        }
    }
    match resampler {
        Some((_, res)) => Ok(Pcm {
            samples: res.finish()?,
        }),
        None => Err(first_error.unwrap_or_else(|| {
            MediaError::unreadable(None, "the audio track has no decodable packet")
        })),
    }
}

/// The error for a decode that passed `max_seconds` with `samples` output samples.
fn too_long(samples: usize, max_seconds: f64) -> MediaError {
    MediaError::TooLong {
        duration: samples as f64 / f64::from(Pcm::SAMPLE_RATE),
        maximum: max_seconds,
    }
}

/// One decoder of either kind, producing mono frames per packet.
pub(crate) enum Decoder {
    Symphonia {
        inner: Box<dyn AudioDecoder>,
        /// Whether the decoder applies packet trims itself.
        self_trimming: bool,
    },
    Opus(Box<opus::OpusStream>),
}

impl Decoder {
    pub(crate) fn new(codec: AudioCodec) -> Result<Self, MediaError> {
        match codec {
            AudioCodec::Symphonia(params) => {
                // Symphonia's Vorbis and MPEG audio decoders apply packet trims themselves in
                // gapless mode (and Vorbis then drops the half block its first packet renders,
                // as the specification and ffmpeg do); for the other codecs the trims are
                // applied in `decode` below.
                let self_trimming = matches!(
                    params.codec,
                    CODEC_ID_VORBIS | CODEC_ID_MP3 | CODEC_ID_MP2 | CODEC_ID_MP1
                );
                let opts = AudioDecoderOptions::default().gapless(true);
                let inner = crate::guard::catch(|| {
                    symphonia::default::get_codecs().make_audio_decoder(&params, &opts)
                })?
                .map_err(|e| MediaError::unsupported(format!("{}: {e}", params.codec)))?;
                Ok(Self::Symphonia {
                    inner,
                    self_trimming,
                })
            }
            AudioCodec::Opus { channels } => {
                Ok(Self::Opus(Box::new(opus::OpusStream::new(channels)?)))
            }
        }
    }

    /// Decodes one packet into `mono` (replacing its contents), applying the packet's trims;
    /// returns the sample rate of what was decoded.
    pub(crate) fn decode(
        &mut self,
        packet: &Packet,
        mono: &mut Vec<f32>,
    ) -> Result<u32, MediaError> {
        mono.clear();
        let (rate, trimmed) = match self {
            Self::Symphonia {
                inner,
                self_trimming,
            } => {
                let rate = crate::guard::catch(|| {
                    inner.decode(packet).map(|buf| {
                        downmix_buffer(&buf, mono);
                        buf.spec().rate()
                    })
                })?
                .map_err(|e| MediaError::unreadable(None, format!("audio decode: {e}")))?;
                (rate, *self_trimming)
            }
            Self::Opus(stream) => {
                stream.decode(&packet.data, mono)?;
                (48_000, false)
            }
        };
        sanitize(mono);
        if trimmed {
            return Ok(rate);
        }
        let start = (packet.trim_start.get() as usize).min(mono.len());
        let end = mono
            .len()
            .saturating_sub(packet.trim_end.get() as usize)
            .max(start);
        mono.truncate(end);
        mono.drain(..start);
        Ok(rate)
    }
}

/// Writes the mean of the channels of a decoded buffer to `mono` (replacing its contents),
/// straight from the decoder's planes, converting each sample format to `f32` as Symphonia does.
fn downmix_buffer(buf: &GenericAudioBufferRef<'_>, mono: &mut Vec<f32>) {
    match buf {
        GenericAudioBufferRef::U8(b) => downmix_planes(*b, mono),
        GenericAudioBufferRef::U16(b) => downmix_planes(*b, mono),
        GenericAudioBufferRef::U24(b) => downmix_planes(*b, mono),
        GenericAudioBufferRef::U32(b) => downmix_planes(*b, mono),
        GenericAudioBufferRef::S8(b) => downmix_planes(*b, mono),
        GenericAudioBufferRef::S16(b) => downmix_planes(*b, mono),
        GenericAudioBufferRef::S24(b) => downmix_planes(*b, mono),
        GenericAudioBufferRef::S32(b) => downmix_planes(*b, mono),
        GenericAudioBufferRef::F32(b) => downmix_planes(*b, mono),
        GenericAudioBufferRef::F64(b) => downmix_planes(*b, mono),
    }
}

/// [`downmix_buffer`] for one sample format: plane by plane, which vectorises, where a pass
/// over interleaved frames of a run-time channel count does not.
fn downmix_planes<S>(buf: &AudioBuffer<S>, mono: &mut Vec<f32>)
where
    S: Sample + IntoSample<f32>,
{
    mono.clear();
    let mut planes = buf.iter_planes();
    let Some(first) = planes.next() else {
        return;
    };
    mono.extend(first.iter().map(|&s| s.into_sample()));
    let mut channels = 1usize;
    for plane in planes {
        for (m, &s) in mono.iter_mut().zip(plane) {
            *m += IntoSample::<f32>::into_sample(s);
        }
        channels += 1;
    }
    if channels > 1 {
        let scale = 1.0 / channels as f32;
        mono.iter_mut().for_each(|m| *m *= scale);
    }
}

/// Replaces `interleaved` frames of `channels` channels by their mean, written to `mono`.
pub(crate) fn downmix(interleaved: &[f32], channels: usize, mono: &mut Vec<f32>) {
    mono.clear();
    if channels <= 1 {
        mono.extend_from_slice(interleaved);
        return;
    }
    if channels == 2 {
        // The common case, with the frame size known to the compiler so that it vectorises.
        mono.extend(
            interleaved
                .chunks_exact(2)
                .map(|frame| (frame[0] + frame[1]) * 0.5),
        );
        return;
    }
    let scale = 1.0 / channels as f32;
    mono.extend(
        interleaved
            .chunks_exact(channels)
            .map(|frame| frame.iter().sum::<f32>() * scale),
    );
}

/// The largest sample magnitude handed to the resampler: 36 dB over full scale. Integer formats
/// decode within 1 and lossy decoders overshoot it by little; only damaged float data goes
/// further, and a finite sample near `f32::MAX` would overflow the resampler's sums to infinity.
const MAX_SAMPLE: f32 = 64.0;

/// Replaces NaN and infinite samples (float PCM can carry them) by silence and clips the rest
/// to [`MAX_SAMPLE`], so that one bad sample cannot poison the resampler's output around it.
fn sanitize(samples: &mut [f32]) {
    for s in samples.iter_mut() {
        *s = if s.is_finite() {
            s.clamp(-MAX_SAMPLE, MAX_SAMPLE)
        } else {
            0.0
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use symphonia::core::units::{Duration as SymDuration, Timestamp};

    #[test]
    fn downmix_is_the_mean_of_the_channels() {
        let mut out = Vec::new();
        downmix(&[1.0, 0.0, 0.5, -0.5, -1.0, -1.0], 2, &mut out);
        assert_eq!(out, vec![0.5, 0.0, -1.0]);
    }

    /// A 16 kHz mono s16le PCM track of `samples`, in packets of 1000 frames.
    fn pcm_track(samples: &[i16]) -> AudioTrack<'static> {
        pcm_track_at(samples, 16_000)
    }

    fn pcm_track_at(samples: &[i16], rate: u32) -> AudioTrack<'static> {
        let codec = crate::info::Codec::Pcm(crate::info::PcmFormat {
            bits: 16,
            float: false,
            big_endian: false,
        });
        let params = params::symphonia_params(&codec, rate, 1, None).unwrap();
        let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
        let packets = bytes
            .chunks(2000)
            .map(|c| Packet::new(0, Timestamp::new(0), SymDuration::new(0), c))
            .collect();
        AudioTrack::new(
            AudioCodec::Symphonia(params),
            Box::new(VecPackets::new(packets)),
        )
    }

    #[test]
    fn skip_drops_and_lead_prepends_on_the_media_clock() {
        let ramp: Vec<i16> = (0..4000).map(|i| i as i16).collect();
        let mut track = pcm_track(&ramp);
        // Drop the first 1500 frames (in a 1/48000 time base: 4500 ticks), then start 0.1 s late.
        track.skip = (4500, 48_000);
        track.lead = (1, 10);
        let pcm = decode_track(track, 10.0).unwrap();
        assert_eq!(pcm.samples.len(), 1600 + 2500);
        assert!(pcm.samples[..1600].iter().all(|&s| s == 0.0));
        assert_eq!(pcm.samples[1600], 1500.0 / 32768.0);
    }

    #[test]
    fn a_lead_beyond_the_cap_is_refused_before_it_is_allocated() {
        let mut track = pcm_track(&[1, 2, 3]);
        // A damaged start time of a day.
        track.lead = (86_400, 1);
        assert_eq!(decode_track(track, 60.0).unwrap_err().code_str(), "ih4004");
    }

    #[test]
    fn a_low_rate_track_meets_the_cap_by_its_length_not_by_the_output_so_far() {
        // 40 frames at 7 Hz: 5.7 s, all of it below one resampler chunk until the end. Found by
        // the `wav` fuzz target (fuzz/regressions/wav/crash-bae562b2...): it came out of
        // `finish` as 91,429 samples under a 2 s cap.
        let frames = [100i16; 40];
        let err = decode_track(pcm_track_at(&frames, 7), 2.0).unwrap_err();
        assert_eq!(err.code_str(), "ih4004");
        // Under a cap it fits, it is decoded whole: 40 / 7 s at 16 kHz.
        let pcm = decode_track(pcm_track_at(&frames, 7), 10.0).unwrap();
        assert_eq!(pcm.samples.len(), (40 * 16_000usize).div_ceil(7));
    }

    #[test]
    fn non_finite_samples_become_silence_and_huge_ones_are_clipped() {
        let mut s = [0.5, f32::NAN, f32::INFINITY, -0.25, -1.7e38, 1.5];
        sanitize(&mut s);
        assert_eq!(s, [0.5, 0.0, 0.0, -0.25, -MAX_SAMPLE, 1.5]);
    }
}
