//! Cosine similarity of CAM++ embeddings of EmoDB clips (one per clip): same actor and emotion,
//! same actor across emotions, different actors of the same sex. For choosing the clustering
//! threshold against one voice whose register moves.
//!
//! ```text
//! cargo run --release -p attune-core --example voice_emodb_sim
//! ```

use attune_voice::fbank::fbank;
use attune_voice::{cosine, SpeakerEmbedder};

fn main() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/real/emodb"
    );
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("../shared/data/real/emodb")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".wav"))
        .collect();
    names.sort();
    let female = ["08", "09", "13", "14", "16"];
    let mut items = Vec::new();
    for n in &names {
        let bytes = std::fs::read(format!("{dir}/{n}")).unwrap();
        let pcm = attune_media::decode_audio_limited(&bytes, 60.0)
            .unwrap()
            .samples;
        let mut fb = Vec::new();
        fbank(&pcm, &mut fb);
        if let Some(e) = SpeakerEmbedder.embed(&fb, 200).unwrap() {
            items.push((n[0..2].to_string(), n.chars().nth(5).unwrap(), e));
        }
    }
    let mut groups: std::collections::BTreeMap<&str, Vec<f32>> = Default::default();
    for (i, a) in items.iter().enumerate() {
        for b in &items[i + 1..] {
            let s = cosine(&a.2, &b.2);
            let key = if a.0 == b.0 && a.1 == b.1 {
                "same actor, same emotion"
            } else if a.0 == b.0 {
                let calm = |e: char| matches!(e, 'N' | 'L' | 'T');
                if calm(a.1) != calm(b.1) {
                    "same actor, calm vs aroused"
                } else {
                    "same actor, other emotion"
                }
            } else if female.contains(&a.0.as_str()) == female.contains(&b.0.as_str()) {
                "different actors, same sex"
            } else {
                "different actors, other sex"
            };
            groups.entry(key).or_default().push(s);
        }
    }
    for (k, mut v) in groups {
        v.sort_by(f32::total_cmp);
        let q = |p: f64| v[((v.len() - 1) as f64 * p) as usize];
        println!(
            "{k:<32} n {:6} mean {:.3}  p5 {:.3} p25 {:.3} p50 {:.3} p75 {:.3} p95 {:.3}",
            v.len(),
            v.iter().sum::<f32>() / v.len() as f32,
            q(0.05),
            q(0.25),
            q(0.5),
            q(0.75),
            q(0.95)
        );
    }
}
