//! Movie fragments (`moof`): the samples each track fragment (`traf`) adds, with their input
//! offsets (ISO 14496-12 8.8).

use super::boxes::{bad, child, split_boxes};
use super::moov::{Defaults, Movie, Sample};
use crate::bytes::Cursor;
use crate::error::MediaError;

/// The samples one `moof` adds, per track (an index into [`Movie::traks`]), in decode order.
/// `moof_start` is the input position of the `moof` header, `file_start` that of the file's
/// first byte (the origin of explicit base data offsets). At most `room` samples are accepted
/// in all; every track's next decode time is advanced past its samples.
///
/// Errors: [`MediaError::Unreadable`] for a short `tfhd` or `tfdt`, a malformed `trun`, or more
/// samples than `room`.
pub(super) fn parse_moof(
    movie: &mut Movie,
    body: &[u8],
    moof_start: u64,
    file_start: u64,
    room: usize,
) -> Result<Vec<(usize, Vec<Sample>)>, MediaError> {
    let mut out = Vec::new();
    let mut room = room;
    // Without an explicit base, the first track fragment's data starts from the moof and each
    // later one where the previous one's data ended (ISO 14496-12 8.8.7.1).
    let mut data_end = moof_start;
    for traf in split_boxes(body)?.iter().filter(|b| &b.kind == b"traf") {
        let kids = split_boxes(traf.body)?;
        let Some(tfhd) = child(&kids, b"tfhd") else {
            continue;
        };
        let mut c = Cursor::new(tfhd.body);
        let flags = c.u32_be().ok_or_else(|| bad("tfhd"))? & 0x00ff_ffff;
        let track_id = c.u32_be().ok_or_else(|| bad("tfhd"))?;
        let index = movie.traks.iter().position(|t| t.id == track_id);
        let mut defaults = index.map(|i| movie.traks[i].defaults).unwrap_or_default();
        let base = if flags & 0x1 != 0 {
            let offset = c.u64_be().ok_or_else(|| bad("tfhd"))?;
            file_start
                .checked_add(offset)
                .ok_or_else(|| bad("tfhd base data offset"))?
        } else if flags & 0x2_0000 != 0 {
            moof_start
        } else {
            data_end
        };
        let fields = (|| {
            if flags & 0x2 != 0 {
                c.skip(4)?;
            }
            if flags & 0x8 != 0 {
                defaults.duration = c.u32_be()?;
            }
            if flags & 0x10 != 0 {
                defaults.size = c.u32_be()?;
            }
            if flags & 0x20 != 0 {
                defaults.flags = c.u32_be()?;
            }
            Some(())
        })();
        fields.ok_or_else(|| bad("tfhd"))?;
        let mut dts = match child(&kids, b"tfdt") {
            Some(tfdt) => {
                let mut c = Cursor::new(tfdt.body);
                let version = c.u8().ok_or_else(|| bad("tfdt"))?;
                c.skip(3).ok_or_else(|| bad("tfdt"))?;
                if version == 1 {
                    c.u64_be().ok_or_else(|| bad("tfdt"))?
                } else {
                    u64::from(c.u32_be().ok_or_else(|| bad("tfdt"))?)
                }
            }
            None => index.map_or(0, |i| movie.traks[i].next_dts),
        };
        let mut samples = Vec::new();
        let mut data_pos = base;
        for trun in kids.iter().filter(|b| &b.kind == b"trun") {
            let before = samples.len();
            parse_trun(
                trun.body,
                &defaults,
                base,
                &mut data_pos,
                &mut dts,
                &mut samples,
                room,
            )?;
            room -= samples.len() - before;
        }
        data_end = data_pos;
        if let Some(i) = index {
            movie.traks[i].next_dts = dts;
            out.push((i, samples));
        }
    }
    Ok(out)
}

/// Whether fragment sample flags mark a sync sample (`sample_is_non_sync_sample` clear).
fn is_sync(flags: u32) -> bool {
    flags & 0x0001_0000 == 0
}

/// One `trun`: appends its samples with their input offsets, advancing `dts` and `data_pos`
/// (where the previous run's data ended; a run with a data offset starts at `base` plus it).
/// More than `room` samples are an error.
pub(super) fn parse_trun(
    body: &[u8],
    defaults: &Defaults,
    base: u64,
    data_pos: &mut u64,
    dts: &mut u64,
    out: &mut Vec<Sample>,
    room: usize,
) -> Result<(), MediaError> {
    let mut c = Cursor::new(body);
    let version_flags = c.u32_be().ok_or_else(|| bad("trun"))?;
    let version = version_flags >> 24;
    let flags = version_flags & 0x00ff_ffff;
    let count = c.u32_be().ok_or_else(|| bad("trun"))? as usize;
    if flags & 0x1 != 0 {
        let offset = c.i32_be().ok_or_else(|| bad("trun"))?;
        *data_pos = base.saturating_add_signed(i64::from(offset));
    }
    let first_flags = if flags & 0x4 != 0 {
        Some(c.u32_be().ok_or_else(|| bad("trun"))?)
    } else {
        None
    };
    let per_sample = [0x100, 0x200, 0x400, 0x800]
        .iter()
        .filter(|&&f| flags & f != 0)
        .count()
        * 4;
    if per_sample > 0 && count > c.remaining() / per_sample {
        return Err(bad("trun sample count exceeds the box"));
    }
    // A run of default-sized samples declares its count alone: the room bounds it, checked
    // before anything is allocated for it.
    if count > room {
        return Err(bad("more fragment samples than the input can hold"));
    }
    out.reserve(count);
    for i in 0..count {
        let duration = if flags & 0x100 != 0 {
            c.u32_be().ok_or_else(|| bad("trun"))?
        } else {
            defaults.duration
        };
        let size = if flags & 0x200 != 0 {
            c.u32_be().ok_or_else(|| bad("trun"))?
        } else {
            defaults.size
        };
        let sflags = if flags & 0x400 != 0 {
            c.u32_be().ok_or_else(|| bad("trun"))?
        } else if i == 0 {
            first_flags.unwrap_or(defaults.flags)
        } else {
            defaults.flags
        };
        let cts_offset = if flags & 0x800 != 0 {
            let raw = c.u32_be().ok_or_else(|| bad("trun"))?;
            if version == 0 {
                i64::from(raw)
            } else {
                i64::from(raw as i32)
            }
        } else {
            0
        };
        out.push(Sample {
            dts: *dts,
            cts_offset,
            duration,
            size,
            sync: is_sync(sflags),
            offset: *data_pos,
        });
        *data_pos = data_pos.saturating_add(u64::from(size));
        *dts = dts.saturating_add(u64::from(duration));
    }
    Ok(())
}
