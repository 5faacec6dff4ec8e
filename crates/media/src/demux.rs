//! What an incremental demuxer hands its caller: the events of one container read as its bytes
//! arrive, the same for a whole file (fed at once, then finished) and a live stream.

use symphonia::core::packet::Packet;

use crate::audio::AudioSetup;
use crate::error::MediaError;
use crate::info::{Container, VideoFrameInfo};

/// A non-fatal problem with part of the input; the session goes on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LiveProblem {
    /// The bytes are not readable media (not a container, or broken structure). `ih6007`.
    #[error("unreadable segment: {reason}")]
    Unreadable {
        /// What was wrong, for logs.
        reason: String,
    },
    /// Media data arrived without the container header it needs (a fragment before any init
    /// segment, clusters before any Tracks). `ih5004`.
    #[error("malformed segment: {reason}")]
    MissingHeader {
        /// What was missing, for logs.
        reason: String,
    },
    /// A self-contained segment shorter than the 3 s minimum. `ih5006`.
    #[error("the segment lasts {duration:.3} s, under the minimum of 3 s")]
    TooShort {
        /// Its duration in seconds.
        duration: f64,
    },
    /// The stream has audio but no video and the model needs video; reported once per
    /// session. `ih5001`.
    #[error("the stream has audio but no video")]
    NoVideo,
    /// The stream has no audio track; reported once per session. `ih5008`.
    #[error("the stream has no audio")]
    NoAudio,
    /// The audio codec cannot be decoded. `ih5003`.
    #[error("unsupported codec: {codec}")]
    Unsupported {
        /// The codec's name.
        codec: String,
    },
    /// A video frame of the segment is over the 32 MB cap
    /// ([`MAX_VIDEO_UNIT_BYTES`](crate::MAX_VIDEO_UNIT_BYTES)); the segment is skipped. `ih5005`.
    #[error("a video frame of {size} bytes is larger than the limit of {limit} bytes")]
    VideoUnitTooLarge {
        /// The frame's size as the container declares it.
        size: u64,
        /// The limit.
        limit: u64,
    },
}

impl LiveProblem {
    /// The interface error code, e.g. `"ih6007"`.
    pub fn code_str(&self) -> &'static str {
        match self {
            Self::Unreadable { .. } => "ih6007",
            Self::MissingHeader { .. } => "ih5004",
            Self::TooShort { .. } => "ih5006",
            Self::NoVideo => "ih5001",
            Self::NoAudio => "ih5008",
            Self::Unsupported { .. } => "ih5003",
            Self::VideoUnitTooLarge { .. } => "ih5005",
        }
    }

    /// The live problem a file-path error amounts to.
    pub(crate) fn from_media(e: &MediaError) -> Self {
        match e {
            MediaError::UnsupportedCodec { codec } => Self::Unsupported {
                codec: codec.clone(),
            },
            MediaError::NoAudioStream => Self::NoAudio,
            MediaError::VideoUnitTooLarge { size, limit } => Self::VideoUnitTooLarge {
                size: *size,
                limit: *limit,
            },
            other => Self::Unreadable {
                reason: other.to_string(),
            },
        }
    }
}

/// What a demuxer hands its caller.
pub(crate) enum Event {
    /// A file's header was read: its tracks are known.
    Header {
        container: Container,
        has_video: bool,
        has_audio: bool,
    },
    /// How the file's first audio track decodes; comes before its first packet.
    AudioSetup(AudioSetup),
    /// The codec of the file's first video track and its configuration record, from demuxers
    /// whose frames carry their bytes in a stream (Matroska/WebM); after the header.
    VideoSetup {
        codec: crate::info::Codec,
        config: Option<Vec<u8>>,
    },
    /// One packet of the first audio track.
    Audio(Packet),
    /// One frame of the first video track, `pts` on the file's clock, with its bytes when the
    /// demuxer was asked to keep them (a whole file read for its pixels).
    Video(VideoFrameInfo, Option<Vec<u8>>),
    /// Something was wrong; the demuxer carries on.
    Problem(LiveProblem),
    /// A new file starts within the stream; the events after it are the new file's.
    NewFile,
}

/// An incremental container reader. `Send`, so that a session can move between threads.
pub(crate) trait Demuxer: Send {
    /// Reads `data`, appending what it found to `out`.
    fn feed(&mut self, data: &[u8], out: &mut Vec<Event>);
    /// The input has ended: hands out what was held back for more data.
    fn finish(&mut self, out: &mut Vec<Event>);
    /// Bytes held waiting for the rest of a unit.
    fn pending_bytes(&self) -> usize;
}

/// Where a [`Stepper`] stands in its input; every stepper keeps the same.
#[derive(Debug, Default)]
pub(crate) struct StepState {
    /// The start of a unit a feed cut off, waiting for its rest.
    pub(crate) tail: Vec<u8>,
    /// Input position of the first byte not yet consumed.
    pub(crate) pos: u64,
    /// Bytes of an ignored unit still to drop.
    pub(crate) skip: u64,
    /// Bytes the resynchronisation scan dropped during the current feed.
    pub(crate) resync_dropped: usize,
}

impl StepState {
    /// Damage in a live stream: reports it, forgets any ignored unit and returns the one byte
    /// to consume, stepping past the damaged header so the resynchronisation scan (which the
    /// caller enters) does not find it again.
    pub(crate) fn unreadable(&mut self, reason: impl Into<String>, out: &mut Vec<Event>) -> usize {
        out.push(Event::Problem(LiveProblem::Unreadable {
            reason: reason.into(),
        }));
        self.skip = 0;
        1
    }
}

/// A demuxer that parses bytes where they arrive: each step reads the unconsumed bytes and
/// says how many it consumed, and only the start of a unit a feed cut off is kept, in its tail.
/// Every stepper is a [`Demuxer`] by the same feed loop.
pub(crate) trait Stepper: Send {
    /// One step over the unconsumed bytes `b`: the bytes consumed (zero when only the state
    /// changed, at most three times in a row), or `None` to wait for more.
    fn step(&mut self, b: &[u8], out: &mut Vec<Event>) -> Option<usize>;
    /// Where it stands in its input.
    fn steps(&self) -> &StepState;
    /// Where it stands in its input, to move on.
    fn steps_mut(&mut self) -> &mut StepState;
    /// The input has ended and the bytes held were dropped: closes what the container
    /// leaves open at its end. Nothing by default.
    fn end(&mut self) {}
}

/// Steps over `b` until a step waits; returns the bytes consumed.
fn run<S: Stepper>(s: &mut S, b: &[u8], out: &mut Vec<Event>) -> usize {
    let mut at = 0;
    // Every step consumes bytes, changes state or waits; state changes without consuming
    // happen at most three times in a row, so a step that consumes nothing four times in a
    // row means a bug, and stops the loop rather than spin.
    let mut idle = 0;
    while idle < 4 {
        let Some(n) = s.step(&b[at..], out) else {
            break;
        };
        let n = n.min(b.len() - at);
        at += n;
        s.steps_mut().pos += n as u64;
        idle = if n == 0 { idle + 1 } else { 0 };
    }
    at
}

impl<S: Stepper> Demuxer for S {
    /// The bytes are parsed where they are when no tail waits, and only what they leave
    /// unconsumed is copied.
    fn feed(&mut self, data: &[u8], out: &mut Vec<Event>) {
        self.steps_mut().resync_dropped = 0;
        if self.steps().tail.is_empty() {
            let used = run(self, data, out);
            self.steps_mut().tail.extend_from_slice(&data[used..]);
        } else {
            let mut buf = std::mem::take(&mut self.steps_mut().tail);
            buf.extend_from_slice(data);
            let used = run(self, &buf, out);
            buf.drain(..used);
            self.steps_mut().tail = buf;
        }
        let dropped = std::mem::take(&mut self.steps_mut().resync_dropped);
        if dropped > 0 {
            // Damage that began in an earlier frame still covers this one.
            out.push(Event::Problem(LiveProblem::Unreadable {
                reason: format!("{dropped} bytes skipped to resynchronise"),
            }));
        }
    }

    fn finish(&mut self, _out: &mut Vec<Event>) {
        let steps = self.steps_mut();
        steps.tail = Vec::new();
        steps.skip = 0;
        self.end();
    }

    fn pending_bytes(&self) -> usize {
        self.steps().tail.len()
    }
}

/// Helpers for the chunking tests of every demuxer: what a demuxer's events amount to, and a
/// demuxer fed a file cut into chunks.
#[cfg(test)]
pub(crate) mod testing {
    use proptest::prelude::*;
    use symphonia::core::units::Duration as SymDuration;

    use super::{Demuxer, Event};

    /// A committed fixture's bytes.
    pub(crate) fn fixture(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// What a read produced: the audio lead, every audio packet with its end trim, and every video
    /// frame (times as bits, so equality is exact), in the order the demuxer gave them.
    #[derive(Debug, PartialEq)]
    pub(crate) struct Output {
        pub(crate) lead: Option<(u64, u32)>,
        pub(crate) audio: Vec<(Box<[u8]>, SymDuration)>,
        pub(crate) video: Vec<(u64, u32, bool)>,
        pub(crate) headers: usize,
        pub(crate) problems: Vec<String>,
    }

    pub(crate) fn collect(events: Vec<Event>) -> Output {
        let mut out = Output {
            lead: None,
            audio: Vec::new(),
            video: Vec::new(),
            headers: 0,
            problems: Vec::new(),
        };
        for event in events {
            match event {
                Event::Header { .. } => out.headers += 1,
                Event::AudioSetup(setup) => out.lead = Some(setup.lead),
                Event::Audio(p) => out.audio.push((p.data, p.trim_end)),
                Event::Video(f, _) => out.video.push((f.pts.to_bits(), f.size, f.keyframe)),
                Event::Problem(p) => out.problems.push(p.to_string()),
                Event::VideoSetup { .. } => {}
                Event::NewFile => out.problems.push("a new file".into()),
            }
        }
        out
    }

    /// `demux` fed `bytes` cut by `sizes`, used in turn and over again, then finished.
    pub(crate) fn streamed(mut demux: impl Demuxer, bytes: &[u8], sizes: &[usize]) -> Output {
        let mut events = Vec::new();
        let mut rest = bytes;
        for &size in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (chunk, tail) = rest.split_at(size.clamp(1, rest.len()));
            demux.feed(chunk, &mut events);
            rest = tail;
        }
        demux.finish(&mut events);
        collect(events)
    }

    /// Chunk sizes from single bytes to more than a whole fixture.
    pub(crate) fn chunk_sizes() -> impl Strategy<Value = Vec<usize>> {
        prop::collection::vec(prop_oneof![1usize..8, 1usize..600, 1usize..100_000], 1..48)
    }
}
