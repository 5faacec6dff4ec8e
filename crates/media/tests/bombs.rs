//! Resource bombs: small inputs that declare hours of media, billions of samples, huge sizes
//! or deep nesting. Each gets its interface error (or the documented refusal of the upload
//! duration limit, `ih4004`) with bounded memory, on the file path and fed to the live reader.
//!
//! Every bomb runs in a child process (this test binary, re-run on the ignored `bomb_child`
//! test), so that its peak resident memory (`VmHWM` of `/proc/self/status`) is its own; the
//! parent asserts the outcome and the bound. The only clock is a hang guard of minutes.
//! docs/FUZZING.md ("Resource bombs") lists each bomb and its bound.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use attune_media::live::LiveReader;
use attune_media::{check, decode_audio, probe, video_frames, MediaError, MediaRequirements};

const MIB: u64 = 1024 * 1024;

fn read(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// Generators.

/// The offset of the first box of type `kind` (found by its type bytes after a size).
fn find_box(data: &[u8], kind: &[u8; 4]) -> usize {
    (4..data.len() - 4)
        .find(|&i| &data[i..i + 4] == kind)
        .map(|i| i - 4)
        .unwrap_or_else(|| panic!("no {} box", String::from_utf8_lossy(kind)))
}

fn put_u32(data: &mut [u8], at: usize, v: u32) {
    data[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// An MP4 whose `stsz` declares 4 billion samples of one byte each.
fn mp4_billions_of_samples() -> Vec<u8> {
    let mut mp4 = read("mp4_aac.mp4");
    let stsz = find_box(&mp4, b"stsz");
    put_u32(&mut mp4, stsz + 12, 1);
    put_u32(&mut mp4, stsz + 16, u32::MAX);
    mp4
}

/// An MP4 whose movie, media and `stts` durations claim about 50 days.
fn mp4_hours() -> Vec<u8> {
    let mut mp4 = read("mp4_aac.mp4");
    for kind in [b"mvhd", b"mdhd"] {
        let at = find_box(&mp4, kind);
        assert_eq!(mp4[at + 8], 0, "version 0");
        put_u32(&mut mp4, at + 8 + 16, u32::MAX);
    }
    let stts = find_box(&mp4, b"stts");
    put_u32(&mut mp4, stts + 16, u32::MAX);
    mp4
}

/// A fragmented MP4 whose first `trun` declares 4 billion default-sized samples.
fn fmp4_billions_of_samples() -> Vec<u8> {
    let mut mp4 = read("mp4frag_h264_aac.mp4");
    let trun = find_box(&mp4, b"trun");
    // Flags: a data offset only (it stays where it was); no per-sample fields.
    put_u32(&mut mp4, trun + 8, 0x0000_0001);
    put_u32(&mut mp4, trun + 12, u32::MAX);
    mp4
}

/// `depth` boxes of `kind` each inside the previous, after an `ftyp`.
fn nested_boxes(kind: &[u8; 4], depth: usize) -> Vec<u8> {
    let mut out = 16u32.to_be_bytes().to_vec();
    out.extend_from_slice(b"ftypisom\0\0\0\0");
    for i in 0..depth {
        let size = ((depth - i) * 8) as u32;
        out.extend_from_slice(&size.to_be_bytes());
        out.extend_from_slice(if i == 0 { b"moov" } else { kind });
    }
    out
}

/// An EBML element: ID bytes, an 8-byte size (or unknown) and a body.
fn ebml(id: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = id.to_vec();
    out.push(0x01);
    out.extend_from_slice(&(body.len() as u64).to_be_bytes()[1..]);
    out.extend_from_slice(body);
    out
}

fn ebml_uint(id: &[u8], v: u64) -> Vec<u8> {
    ebml(id, &v.to_be_bytes())
}

/// The EBML header of a Matroska file, and a Segment of unknown size.
fn mkv_start() -> Vec<u8> {
    let mut out = ebml(&[0x1a, 0x45, 0xdf, 0xa3], &ebml(&[0x42, 0x82], b"matroska"));
    out.extend_from_slice(&[
        0x18, 0x53, 0x80, 0x67, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    ]);
    out
}

/// A Matroska file with one 16 kHz mono s16 PCM track and its Info.
fn mkv_pcm_header() -> Vec<u8> {
    let mut out = mkv_start();
    out.extend(ebml(
        &[0x15, 0x49, 0xa9, 0x66],
        &ebml_uint(&[0x2a, 0xd7, 0xb1], 1_000_000),
    ));
    let audio = [
        ebml(&[0xb5], &16_000f64.to_be_bytes()),
        ebml_uint(&[0x9f], 1),
        ebml_uint(&[0x62, 0x64], 16),
    ]
    .concat();
    let entry = [
        ebml_uint(&[0xd7], 1),
        ebml_uint(&[0x83], 2),
        ebml(&[0x86], b"A_PCM/INT/LIT"),
        ebml(&[0xe1], &audio),
    ]
    .concat();
    out.extend(ebml(&[0x16, 0x54, 0xae, 0x6b], &ebml(&[0xae], &entry)));
    out
}

/// A SimpleBlock of track 1 at `time` ms with `body` after its flags.
fn simple_block(time: i16, flags: u8, body: &[u8]) -> Vec<u8> {
    let mut b = vec![0x81];
    b.extend_from_slice(&time.to_be_bytes());
    b.push(flags);
    b.extend_from_slice(body);
    ebml(&[0xa3], &b)
}

/// A Matroska file with one good PCM block of 0.1 s, then a block whose Xiph lacing declares
/// 256 frames of hundreds of megabytes, then a Tracks element claiming a petabyte.
fn mkv_lacing_and_sizes() -> Vec<u8> {
    let mut out = mkv_pcm_header();
    let good = simple_block(0, 0x80, &[0u8; 3200]);
    let mut laced = vec![255u8];
    for _ in 0..255 {
        laced.extend(std::iter::repeat_n(0xffu8, 1_000_000 / 255));
        laced.push(1);
    }
    let bad = simple_block(100, 0x82, &laced[..4096]);
    let mut cluster = ebml_uint(&[0xe7], 0);
    cluster.extend(good);
    cluster.extend(bad);
    out.extend(ebml(&[0x1f, 0x43, 0xb6, 0x75], &cluster));
    // A Tracks element that claims 2^50 bytes and holds ten.
    out.extend_from_slice(&[0x16, 0x54, 0xae, 0x6b, 0x01, 0x04, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&[0; 10]);
    out
}

/// A Matroska file whose Info claims a petabyte, before any Tracks.
fn mkv_huge_info() -> Vec<u8> {
    let mut out = mkv_start();
    out.extend_from_slice(&[0x15, 0x49, 0xa9, 0x66, 0x01, 0x04, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&[0; 64]);
    out
}

/// 100 000 Clusters of unknown size, each opening inside the previous.
fn mkv_nested_clusters() -> Vec<u8> {
    let mut out = mkv_pcm_header();
    for _ in 0..100_000 {
        out.extend_from_slice(&[
            0x1f, 0x43, 0xb6, 0x75, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ]);
    }
    out
}

/// One transport stream packet on `pid`.
fn ts_packet(pid: u16, start: bool, cc: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![
        0x47,
        (u8::from(start) << 6) | (pid >> 8) as u8,
        pid as u8,
        0x10 | (cc & 15),
    ];
    p.extend_from_slice(&payload[..payload.len().min(184)]);
    p.resize(188, 0xff);
    p
}

fn mpeg_crc32(data: &[u8]) -> u32 {
    let mut crc = u32::MAX;
    for &b in data {
        crc ^= u32::from(b) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ 0x04c1_1db7
            } else {
                crc << 1
            };
        }
    }
    crc
}

fn psi(table_id: u8, body: &[u8]) -> Vec<u8> {
    let mut s = vec![table_id, 0xb0, (body.len() + 9) as u8, 0, 1, 0xc1, 0, 0];
    s.extend_from_slice(body);
    let crc = mpeg_crc32(&s);
    s.extend_from_slice(&crc.to_be_bytes());
    let mut out = vec![0];
    out.extend(s);
    out
}

/// A transport stream with an AAC program whose PES packets declare no length (unbounded)
/// and whose continuity counters jump at every packet, 20 000 packets of noise.
fn ts_broken_continuity() -> Vec<u8> {
    let mut out = ts_packet(0, true, 0, &psi(0, &[0, 1, 0xf0, 0x00]));
    out.extend(ts_packet(
        0x1000,
        true,
        0,
        &psi(2, &[0xe1, 0x01, 0xf0, 0, 0x0f, 0xe1, 0x01, 0xf0, 0]),
    ));
    let mut noise = 0x1234_5678u32;
    for i in 0..20_000u32 {
        let mut payload = Vec::new();
        if i % 1000 == 0 {
            // A PES header with PES_packet_length 0: "as long as it goes".
            payload.extend_from_slice(&[0, 0, 1, 0xc0, 0, 0, 0x80, 0x80, 5, 0x21, 0, 1, 0, 1]);
        }
        while payload.len() < 184 {
            noise ^= noise << 13;
            noise ^= noise >> 17;
            noise ^= noise << 5;
            payload.push(noise as u8);
        }
        out.extend(ts_packet(0x101, i % 1000 == 0, (i * 7) as u8, &payload));
    }
    out
}

fn crc8(data: &[u8]) -> u8 {
    let mut crc = 0u8;
    for &b in data {
        crc ^= b;
        for _ in 0..8 {
            crc = if crc & 0x80 != 0 {
                (crc << 1) ^ 0x07
            } else {
                crc << 1
            };
        }
    }
    crc
}

fn crc16(data: &[u8]) -> u16 {
    let mut crc = 0u16;
    for &b in data {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x8005
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// FLAC's UTF-8-like coding of a frame number.
fn flac_number(n: u32) -> Vec<u8> {
    match n {
        0..=0x7f => vec![n as u8],
        0x80..=0x7ff => vec![0xc0 | (n >> 6) as u8, 0x80 | (n & 0x3f) as u8],
        0x800..=0xffff => vec![
            0xe0 | (n >> 12) as u8,
            0x80 | ((n >> 6) & 0x3f) as u8,
            0x80 | (n & 0x3f) as u8,
        ],
        _ => vec![
            0xf0 | (n >> 18) as u8,
            0x80 | ((n >> 12) & 0x3f) as u8,
            0x80 | ((n >> 6) & 0x3f) as u8,
            0x80 | (n & 0x3f) as u8,
        ],
    }
}

/// A FLAC file of silence, 16 kHz mono 16-bit, `seconds` long, its STREAMINFO stating
/// `stated` samples: each 4096-sample frame is a constant subframe of about a dozen bytes.
fn flac_silence(seconds: u32, stated: u64) -> Vec<u8> {
    let mut out = b"fLaC".to_vec();
    let mut info = vec![0x10, 0x00, 0x10, 0x00, 0, 0, 0, 0, 0, 0];
    // 16000 Hz (20 bits), 1 channel (3 bits: 0), 16 bits (5 bits: 15), 36-bit sample count.
    let packed: u64 = (16_000u64 << 44) | (15u64 << 36) | (stated & 0xf_ffff_ffff);
    info.extend_from_slice(&packed.to_be_bytes());
    info.extend_from_slice(&[0; 16]);
    out.extend_from_slice(&[0x80, 0, 0, 34]);
    out.extend(info);
    let frames = seconds * 16_000 / 4096;
    for n in 0..frames {
        // Sync, fixed blocking; 4096 samples, 16 kHz; mono, 16 bits.
        let mut f = vec![0xff, 0xf8, 0xc5, 0x08];
        f.extend(flac_number(n));
        f.push(crc8(&f));
        // A constant subframe of value 0.
        f.extend_from_slice(&[0x00, 0x00, 0x00]);
        let crc = crc16(&f);
        f.extend_from_slice(&crc.to_be_bytes());
        out.extend(f);
    }
    out
}

/// A 16 kHz mono s16 WAV holding four seconds of a tone whose header claims about 37 hours.
fn wav_claiming_hours() -> Vec<u8> {
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&u32::MAX.to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&16_000u32.to_le_bytes());
    out.extend_from_slice(&32_000u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&0xffff_fff0u32.to_le_bytes());
    for i in 0..64_000 {
        let v = ((i as f32 * 0.1).sin() * 8000.0) as i16;
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Every bomb by name.
fn bomb(name: &str) -> Vec<u8> {
    match name {
        "mp4_billions_of_samples" => mp4_billions_of_samples(),
        "mp4_hours" => mp4_hours(),
        "fmp4_billions_of_samples" => fmp4_billions_of_samples(),
        "mp4_nested_boxes" => nested_boxes(b"trak", 100_000),
        "mkv_lacing_and_sizes" => mkv_lacing_and_sizes(),
        "mkv_huge_info" => mkv_huge_info(),
        "mkv_nested_clusters" => mkv_nested_clusters(),
        "ts_broken_continuity" => ts_broken_continuity(),
        "flac_silence_claiming_hours" => flac_silence(3 * 60 * 60, 3 * 60 * 60 * 16_000),
        "flac_silence_past_the_cap" => flac_silence(40 * 60, 0),
        "wav_claiming_hours" => wav_claiming_hours(),
        other => panic!("no bomb {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The child: runs one bomb through the file path and the live reader and prints the outcome.

fn outcome<T>(r: Result<T, MediaError>, ok: impl Fn(&T) -> String) -> String {
    match r {
        Ok(v) => format!("ok:{}", ok(&v)),
        Err(e) => e.code_str().to_string(),
    }
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("procfs");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

#[test]
#[ignore = "run by the bomb tests in a child process"]
fn bomb_child() {
    let Ok(name) = std::env::var("ATTUNE_BOMB") else {
        return;
    };
    let data = bomb(&name);
    let probed = probe(&data);
    let checked = match &probed {
        Ok(info) => outcome(check(info, &MediaRequirements::for_inter2_audio()), |_| {
            String::new()
        }),
        Err(e) => e.code_str().to_string(),
    };
    let probed = outcome(probed, |i| format!("{:.0}", i.duration));
    let decoded = outcome(decode_audio(&data), |p| p.samples.len().to_string());
    let frames = outcome(video_frames(&data), |f| f.len().to_string());
    let mut live = LiveReader::new(false);
    let mut codes = Vec::new();
    // Containers the live reader reads only whole come as one frame; the others in pieces.
    let whole = data.starts_with(b"fLaC") || data.starts_with(b"RIFF");
    let chunk = if whole { data.len() } else { 4096 };
    for (i, chunk) in data.chunks(chunk).enumerate() {
        let r = live.push(chunk, i as u64);
        live.drain_samples();
        codes.extend(r.problems.iter().map(|p| p.problem.code_str()));
        if let Some(f) = r.fatal {
            codes.push(f.code_str());
            break;
        }
    }
    codes.extend(live.finish().problems.iter().map(|p| p.problem.code_str()));
    codes.sort_unstable();
    codes.dedup();
    println!(
        "BOMB probe={probed} check={checked} decode={decoded} frames={frames} live={} \
         input_kib={} peak_kib={}",
        codes.join(","),
        data.len() / 1024,
        peak_rss_kib()
    );
}

/// What a bomb did, as its child printed it.
#[derive(Debug)]
struct Outcome {
    fields: Vec<(String, String)>,
    peak: u64,
}

impl Outcome {
    fn get(&self, key: &str) -> &str {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {key} in {self:?}"))
    }
}

/// Runs bomb `name` in a child process; panics if it runs past the hang guard.
fn explode(name: &str) -> Outcome {
    let exe = std::env::current_exe().expect("the test binary");
    let mut child = Command::new(exe)
        .args([
            "bomb_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("ATTUNE_BOMB", name)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn");
    let started = Instant::now();
    // A hang guard only: the bombs take well under a second each.
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("{name}: still running after 300 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("output");
    assert!(output.status.success(), "{name}: the child failed");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("BOMB ").map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("{name}: no outcome in {stdout}"));
    let fields: Vec<(String, String)> = line
        .split(' ')
        .filter_map(|f| f.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut out = Outcome { fields, peak: 0 };
    out.peak = out.get("peak_kib").parse::<u64>().expect("peak") * 1024;
    eprintln!("{name}: {line}");
    out
}

fn assert_peak_under(o: &Outcome, limit: u64, name: &str) {
    assert!(
        o.peak < limit,
        "{name}: peak RSS {} MiB over the bound of {} MiB",
        o.peak / MIB,
        limit / MIB
    );
}

// ---------------------------------------------------------------------------------------------
// The bombs.

#[test]
fn an_mp4_declaring_billions_of_samples_is_unreadable_with_bounded_memory() {
    let o = explode("mp4_billions_of_samples");
    assert_eq!(o.get("probe"), "ih5002");
    assert_eq!(o.get("decode"), "ih5002");
    assert_peak_under(&o, 64 * MIB, "mp4_billions_of_samples");
    let o = explode("fmp4_billions_of_samples");
    assert_eq!(o.get("probe"), "ih5002");
    assert_eq!(o.get("decode"), "ih5002");
    assert!(o.get("live").contains("ih6007"), "{o:?}");
    assert_peak_under(&o, 64 * MIB, "fmp4_billions_of_samples");
}

#[test]
fn an_mp4_claiming_weeks_is_refused_by_the_duration_limit() {
    let o = explode("mp4_hours");
    let seconds: f64 = o
        .get("probe")
        .trim_start_matches("ok:")
        .parse()
        .expect("a duration");
    assert!(seconds > 1e6, "{o:?}");
    assert_eq!(o.get("check"), "ih4004");
    assert_peak_under(&o, 64 * MIB, "mp4_hours");
}

#[test]
fn deeply_nested_boxes_and_clusters_are_unreadable_with_bounded_memory() {
    let o = explode("mp4_nested_boxes");
    assert_eq!(o.get("probe"), "ih5002");
    assert_peak_under(&o, 64 * MIB, "mp4_nested_boxes");
    let o = explode("mkv_nested_clusters");
    // Clusters without blocks: the tracks are there, the media is not.
    assert!(["ih5001", "ih5002"].contains(&o.get("probe")), "{o:?}");
    assert_peak_under(&o, 64 * MIB, "mkv_nested_clusters");
}

#[test]
fn matroska_with_huge_sizes_and_lacing_reads_what_it_holds() {
    let o = explode("mkv_lacing_and_sizes");
    // The good block decodes (0.1 s at 16 kHz); the laced block and the huge Tracks do not.
    assert_eq!(o.get("decode"), "ok:1600", "{o:?}");
    assert_peak_under(&o, 64 * MIB, "mkv_lacing_and_sizes");
    let o = explode("mkv_huge_info");
    assert_eq!(o.get("probe"), "ih5002");
    assert_peak_under(&o, 64 * MIB, "mkv_huge_info");
}

#[test]
fn a_transport_stream_with_broken_continuity_and_unbounded_pes_stays_bounded() {
    let o = explode("ts_broken_continuity");
    // 3.6 MiB of noise: no AAC frame in it.
    assert!(o.get("decode").starts_with("ih"), "{o:?}");
    assert_peak_under(&o, 96 * MIB, "ts_broken_continuity");
}

#[test]
fn flac_silence_claiming_hours_is_refused_or_capped() {
    let o = explode("flac_silence_claiming_hours");
    assert_eq!(o.get("probe"), "ok:10800");
    assert_eq!(o.get("check"), "ih4004");
    // Decoding it anyway stops at the decode cap (31 min): its PCM is the bound.
    assert_eq!(o.get("decode"), "ih4004");
    assert_peak_under(&o, 320 * MIB, "flac_silence_claiming_hours");
    // Without a stated length, the decode cap stops it all the same.
    let o = explode("flac_silence_past_the_cap");
    assert_eq!(o.get("decode"), "ih4004");
    assert_peak_under(&o, 320 * MIB, "flac_silence_past_the_cap");
}

#[test]
fn a_wav_claiming_hours_is_read_for_what_it_holds() {
    let o = explode("wav_claiming_hours");
    assert_eq!(o.get("probe"), "ok:4");
    assert_eq!(o.get("check"), "ok:");
    assert_eq!(o.get("decode"), "ok:64000");
    assert_eq!(o.get("live"), "", "{o:?}");
    assert_peak_under(&o, 64 * MIB, "wav_claiming_hours");
}
