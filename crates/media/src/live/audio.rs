//! Push-driven audio decoding: packets in as they are demuxed, 16 kHz mono samples out at once.
//!
//! This is `decode_track` of the file path turned inside out: the same decoder, the same start
//! corrections (frames dropped by `skip`, silence put in front by `lead`, both converted at the
//! decoder's output rate once the first packet tells it) and the same resampler, but fed one
//! packet at a time with its state kept between calls. The output is therefore identical to
//! the file decode of the same packets, whatever way the bytes were cut.

use symphonia::core::packet::Packet;

use crate::audio::resample::StreamResampler;
use crate::audio::{frames_at, AudioSetup, Decoder, MAX_CONSECUTIVE_BAD_PACKETS};
use crate::error::MediaError;
use crate::info::Pcm;

/// Why a pipeline stopped taking packets; the file path ends its decode at the same points.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stopped {
    /// More than [`MAX_CONSECUTIVE_BAD_PACKETS`] packets in a row failed to decode.
    BadPackets(String),
    /// The decoder changed its output rate mid-stream (one timeline needs one rate).
    RateChanged,
    /// The decoder reported 0 Hz.
    ZeroRate,
}

/// One audio track being decoded.
pub(crate) struct AudioPipeline {
    decoder: Decoder,
    skip: (u64, u32),
    lead: (u64, u32),
    resampler: Option<(u32, StreamResampler)>,
    skip_left: Option<u64>,
    mono: Vec<f32>,
    bad_in_a_row: usize,
    first_error: Option<MediaError>,
    stopped: Option<Stopped>,
}

impl AudioPipeline {
    /// A pipeline for `setup`.
    ///
    /// Errors: [`MediaError::UnsupportedCodec`] when no decoder can be built.
    pub(crate) fn new(setup: AudioSetup) -> Result<Self, MediaError> {
        Ok(Self {
            decoder: Decoder::new(setup.codec)?,
            skip: setup.skip,
            lead: setup.lead,
            resampler: None,
            skip_left: None,
            mono: Vec::new(),
            bad_in_a_row: 0,
            first_error: None,
            stopped: None,
        })
    }

    /// Why the pipeline stopped, if it did.
    pub(crate) fn stopped(&self) -> Option<&Stopped> {
        self.stopped.as_ref()
    }

    /// Decodes one packet and appends what the resampler has ready to `out`. `room` is how many
    /// more output samples the caller accepts; the leading silence is refused beyond it before
    /// it is generated.
    ///
    /// Errors: [`MediaError::TooLong`] when the leading silence alone exceeds `room`, and the
    /// resampler's failures. A packet that does not decode is skipped, as in the file path.
    pub(crate) fn push(
        &mut self,
        packet: &Packet,
        out: &mut Vec<f32>,
        room: u64,
    ) -> Result<(), MediaError> {
        if self.stopped.is_some() {
            return Ok(());
        }
        let rate = match self.decoder.decode(packet, &mut self.mono) {
            Ok(rate) => {
                self.bad_in_a_row = 0;
                rate
            }
            Err(e) => {
                self.first_error.get_or_insert(e);
                self.bad_in_a_row += 1;
                if self.bad_in_a_row > MAX_CONSECUTIVE_BAD_PACKETS {
                    let reason = self
                        .first_error
                        .as_ref()
                        .map_or_else(String::new, ToString::to_string);
                    self.stopped = Some(Stopped::BadPackets(reason));
                }
                return Ok(());
            }
        };
        if self.mono.is_empty() {
            return Ok(());
        }
        if rate == 0 {
            self.stopped = Some(Stopped::ZeroRate);
            return Ok(());
        }
        let (res_rate, res) = match &mut self.resampler {
            Some((r, res)) => (*r, res),
            slot => {
                let lead = frames_at(self.lead.0, self.lead.1, rate);
                let lead_out = u128::from(lead) * u128::from(Pcm::SAMPLE_RATE) / u128::from(rate);
                if lead_out > u128::from(room) {
                    return Err(MediaError::TooLong {
                        duration: lead as f64 / f64::from(rate),
                        maximum: room as f64 / f64::from(Pcm::SAMPLE_RATE),
                    });
                }
                let (_, res) = slot.insert((rate, StreamResampler::new(rate)?));
                let zeros = [0.0f32; 4096];
                let mut left = lead;
                while left > 0 {
                    let n = left.min(zeros.len() as u64) as usize;
                    res.push(&zeros[..n])?;
                    res.drain_output(out);
                    left -= n as u64;
                }
                (rate, res)
            }
        };
        if res_rate != rate {
            self.stopped = Some(Stopped::RateChanged);
            return Ok(());
        }
        let skip_now = self
            .skip_left
            .get_or_insert_with(|| frames_at(self.skip.0, self.skip.1, rate));
        let drop = (*skip_now).min(self.mono.len() as u64) as usize;
        *skip_now -= drop as u64;
        res.push(&self.mono[drop..])?;
        res.drain_output(out);
        Ok(())
    }

    /// Flushes the resampler's tail into `out`; the track's output then has exactly the length
    /// the file decode gives.
    pub(crate) fn finish(self, out: &mut Vec<f32>) -> Result<(), MediaError> {
        if let Some((_, res)) = self.resampler {
            out.extend(res.finish()?);
        }
        Ok(())
    }
}

/// Raw PCM, already decoded: only the resampler, fed straight.
pub(crate) struct RawPipeline {
    resampler: StreamResampler,
}

impl RawPipeline {
    /// A pipeline for mono samples at `rate` Hz.
    pub(crate) fn new(rate: u32) -> Result<Self, MediaError> {
        Ok(Self {
            resampler: StreamResampler::new(rate)?,
        })
    }

    /// Resamples `samples`, appending what is ready to `out`.
    pub(crate) fn push(&mut self, samples: &[f32], out: &mut Vec<f32>) -> Result<(), MediaError> {
        self.resampler.push(samples)?;
        self.resampler.drain_output(out);
        Ok(())
    }

    /// Flushes the resampler's tail into `out`.
    pub(crate) fn finish(self, out: &mut Vec<f32>) -> Result<(), MediaError> {
        out.extend(self.resampler.finish()?);
        Ok(())
    }
}
