//! Elementary-stream framing for the live transport stream demuxer: ADTS and MPEG audio frame
//! headers and video keyframe detection. These are the file path's own rules, shared so a
//! stream and a file of the same bytes are framed identically.

pub(crate) use crate::formats::es::{aac_rate, adts_header, is_keyframe};
pub(crate) use crate::formats::plain::{mpeg_audio_header, mpeg_audio_layer};
