//! The first audio track's decoder setup, the same for a whole file and a stream, and its
//! packets cut from a whole file's bytes.

use std::io::Cursor as IoCursor;

use symphonia::core::codecs::audio::well_known::CODEC_ID_OPUS;
use symphonia::core::codecs::CodecParameters;
use symphonia::core::formats::{FormatOptions, FormatReader};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::packet::Packet;
use symphonia::core::units::{Duration as SymDuration, Timestamp};
use symphonia::default::formats::IsoMp4Reader;

use super::boxes::bad;
use super::moov::Movie;
use crate::audio::opus::OpusHead;
use crate::audio::{AudioCodec, AudioSetup, PacketSource};
use crate::error::MediaError;
use crate::info::TrackKind;

/// How the movie's first audio track decodes. `ftyp` and `moov` are those boxes whole
/// (header included); the codec parameters (AAC's AudioSpecificConfig, ALAC's cookie, PCM
/// layouts, ...) come from Symphonia's reader of the two, run only after
/// [`Movie::parse`] checked that every box of the `moov` lies inside its parent.
///
/// Errors: [`MediaError::NoAudioStream`] without audio, [`MediaError::UnsupportedCodec`] when
/// its codec cannot be decoded, [`MediaError::Unreadable`] when Symphonia cannot read the
/// sample entry.
pub(super) fn audio_setup(
    ftyp: Option<&[u8]>,
    moov: &[u8],
    movie: &Movie,
) -> Result<AudioSetup, MediaError> {
    let trak = movie
        .first(TrackKind::Audio)
        .map(|i| &movie.traks[i])
        .ok_or(MediaError::NoAudioStream)?;
    if !trak.track.codec.is_decodable_audio() {
        return Err(MediaError::unsupported(trak.track.codec.to_string()));
    }
    // Symphonia wants a brand first; a file or init segment without one is read as ISO.
    let mut init = match ftyp {
        Some(ftyp) => ftyp.to_vec(),
        None => {
            let mut f = 16u32.to_be_bytes().to_vec();
            f.extend_from_slice(b"ftypisom\0\0\0\0");
            f
        }
    };
    init.extend_from_slice(moov);
    let mss = MediaSourceStream::new(Box::new(IoCursor::new(init)), Default::default());
    let reader = crate::guard::catch(|| IsoMp4Reader::try_new(mss, FormatOptions::default()))?
        .map_err(|e| bad(format!("mp4 reader: {e}")))?;
    let params = reader
        .tracks()
        .iter()
        .find(|t| t.id == trak.id)
        .and_then(|t| match &t.codec_params {
            Some(CodecParameters::Audio(p)) => Some(p.clone()),
            _ => None,
        })
        .ok_or_else(|| MediaError::unsupported(trak.track.codec.to_string()))?;
    let codec = if params.codec == CODEC_ID_OPUS {
        let channels = params
            .extra_data
            .as_deref()
            .and_then(OpusHead::parse)
            .map(|h| usize::from(h.channels))
            .or(trak.track.channels.map(usize::from))
            .unwrap_or(1);
        AudioCodec::Opus { channels }
    } else {
        AudioCodec::Symphonia(params)
    };
    // The edit list's media time is where presentation starts: for AAC it skips the encoder
    // priming (1024 frames from ffmpeg), for Opus the pre-skip. Symphonia 0.6 does not apply
    // edit lists, so the skip is handed to the decode loop.
    let skip = trak.edit.map_or(0, |e| e.media_time.max(0) as u64);
    Ok(AudioSetup {
        codec,
        skip: (skip, trak.timescale),
        // Leading empty edits delay the track's presentation.
        lead: (trak.edit.map_or(0, |e| e.empty_lead), movie.timescale),
    })
}

/// One audio sample as a packet, as the stream demuxer and the file reader both hand it over.
pub(super) fn packet(data: &[u8]) -> Packet {
    Packet::new(0, Timestamp::new(0), SymDuration::new(0), data)
}

/// The samples of a track cut from a whole file's bytes, in decode order. The track ends at
/// the first sample whose bytes are not all in the input (a truncated file, or a sample no
/// chunk offset places).
pub(super) struct SamplePackets<'a> {
    pub(super) bytes: &'a [u8],
    /// `(offset, size)` of each sample.
    pub(super) samples: std::vec::IntoIter<(u64, u32)>,
}

impl PacketSource for SamplePackets<'_> {
    fn next_packet(&mut self) -> Result<Option<Packet>, MediaError> {
        let Some((offset, size)) = self.samples.next() else {
            return Ok(None);
        };
        let data = usize::try_from(offset).ok().and_then(|at| {
            let end = at.checked_add(usize::try_from(size).ok()?)?;
            self.bytes.get(at..end)
        });
        Ok(data.map(packet))
    }
}
