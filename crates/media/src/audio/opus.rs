//! Opus decoding with `opus-pure`, a pure-Rust decoder that matches libopus.

use crate::error::MediaError;

/// The longest Opus packet: 120 ms at 48 kHz.
const MAX_FRAMES_PER_PACKET: usize = 5760;

/// One Opus stream (mapping family 0 or 1 with at most two channels) decoding at 48 kHz.
pub(crate) struct OpusStream {
    decoder: opus_pure::OpusDecoder,
    channels: usize,
    scratch: Vec<f32>,
}

impl OpusStream {
    /// A decoder for `channels` (1 or 2) channels.
    pub(crate) fn new(channels: usize) -> Result<Self, MediaError> {
        if !(1..=2).contains(&channels) {
            return Err(MediaError::unsupported(format!(
                "opus with {channels} channels"
            )));
        }
        let decoder = opus_pure::OpusDecoder::new(48_000, channels)
            .map_err(|e| MediaError::unsupported(format!("opus: {e}")))?;
        Ok(Self {
            decoder,
            channels,
            scratch: vec![0.0; MAX_FRAMES_PER_PACKET * channels],
        })
    }

    /// Decodes one packet into `mono` (downmixed), replacing its contents.
    pub(crate) fn decode(&mut self, packet: &[u8], mono: &mut Vec<f32>) -> Result<(), MediaError> {
        if packet.is_empty() {
            // An empty packet would ask for loss concealment; in a file it is just nothing.
            mono.clear();
            return Ok(());
        }
        let Self {
            decoder,
            channels,
            scratch,
        } = self;
        let frames =
            crate::guard::catch(|| decoder.decode(packet, MAX_FRAMES_PER_PACKET, scratch))?
                .map_err(|e| MediaError::unreadable(None, format!("opus packet: {e}")))?;
        let used = (frames * *channels).min(scratch.len());
        super::downmix(&scratch[..used], *channels, mono);
        Ok(())
    }
}

/// The fields of an `OpusHead` (RFC 7845 section 5.1) that decoding needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpusHead {
    /// Output channel count.
    pub(crate) channels: u8,
    /// Samples at 48 kHz to drop from the start of the decode.
    pub(crate) pre_skip: u16,
}

impl OpusHead {
    /// Parses an `OpusHead` packet (Matroska CodecPrivate, Ogg first packet, MP4 `dOps` after
    /// Symphonia prefixes the magic).
    pub(crate) fn parse(data: &[u8]) -> Option<Self> {
        let rest = data.strip_prefix(b"OpusHead")?;
        let channels = *rest.get(1)?;
        let pre_skip = u16::from_le_bytes([*rest.get(2)?, *rest.get(3)?]);
        Some(Self { channels, pre_skip })
    }
}
