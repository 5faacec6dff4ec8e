//! Variants of a recording as another microphone, room, line or codec would give it, made at
//! test time from 16 kHz mono samples (pure Rust; the lossy codec round trips shell out to the
//! `ffmpeg` program when it is installed and decode with `attune-media`, the product's decoders).

#![allow(dead_code)]

use std::f64::consts::PI;

/// Samples per second of every recording here.
pub const RATE: usize = 16_000;

/// `samples` `db` louder, through a fast-attack peak limiter at -1 dBFS (what a phone's AGC
/// does to a loud talker): instant attack, 50 ms release, so no sample exceeds the ceiling.
pub fn gain_limited(samples: &[f32], db: f64) -> Vec<f32> {
    let g = 10f64.powf(db / 20.0);
    let ceiling = 10f64.powf(-1.0 / 20.0);
    let release = (-1.0 / (0.050 * RATE as f64)).exp();
    let mut env = 0.0f64;
    samples
        .iter()
        .map(|&s| {
            let x = f64::from(s) * g;
            env = x.abs().max(env * release);
            let gr = if env > ceiling { ceiling / env } else { 1.0 };
            (x * gr) as f32
        })
        .collect()
}

/// `samples` with `db` more gain from `at_s` seconds on (a speaker moving closer, an AGC
/// settling), through the same limiter.
pub fn level_step(samples: &[f32], at_s: f64, db: f64) -> Vec<f32> {
    let at = ((at_s * RATE as f64) as usize).min(samples.len());
    let mut out = gain_limited(&samples[..at], 0.0);
    out.extend(gain_limited(&samples[at..], db));
    out
}

/// A biquad section (RBJ cookbook), direct form I.
#[derive(Clone, Copy)]
struct Biquad {
    b: [f64; 3],
    a: [f64; 2],
}

impl Biquad {
    fn new(high: bool, f0: f64, q: f64, rate: f64) -> Biquad {
        let w = 2.0 * PI * f0 / rate;
        let (sin, cos) = w.sin_cos();
        let alpha = sin / (2.0 * q);
        let a0 = 1.0 + alpha;
        let b = if high {
            [(1.0 + cos) / 2.0, -(1.0 + cos), (1.0 + cos) / 2.0]
        } else {
            [(1.0 - cos) / 2.0, 1.0 - cos, (1.0 - cos) / 2.0]
        };
        Biquad {
            b: [b[0] / a0, b[1] / a0, b[2] / a0],
            a: [-2.0 * cos / a0, (1.0 - alpha) / a0],
        }
    }

    fn run(self, x: &[f64]) -> Vec<f64> {
        let (mut x1, mut x2, mut y1, mut y2) = (0.0, 0.0, 0.0, 0.0);
        x.iter()
            .map(|&x0| {
                let y0 = self.b[0] * x0 + self.b[1] * x1 + self.b[2] * x2
                    - self.a[0] * y1
                    - self.a[1] * y2;
                (x2, x1, y2, y1) = (x1, x0, y1, y0);
                y0
            })
            .collect()
    }
}

/// Fourth-order Butterworth (two biquads, Q 0.541 and 1.307).
fn butter4(x: &[f64], high: bool, f0: f64, rate: f64) -> Vec<f64> {
    let y = Biquad::new(high, f0, 0.541_196, rate).run(x);
    Biquad::new(high, f0, 1.306_563, rate).run(&y)
}

/// The telephone band: 300-3400 Hz (fourth-order Butterworth edges), down to 8 kHz and back
/// up to 16 kHz through a proper anti-aliasing and anti-imaging low-pass (a Kaiser-windowed
/// sinc, [`narrowband_lowpass`]), as a telephone channel does: ITU-T P.48's sending filter is
/// 37 dB down at 4 kHz and 52 dB at 5 kHz. A fourth-order edge alone is 7 dB down at 4 kHz and
/// 14 dB at 5 kHz, which folds a voiced fricative's 4-8 kHz energy into the band.
pub fn telephone(samples: &[f32]) -> Vec<f32> {
    line(samples, true)
}

/// [`telephone`] without its 300 Hz high-pass (`high_pass` false): a narrow band that keeps the
/// low harmonics, as many real lines and 8 kHz recordings do.
pub fn line(samples: &[f32], high_pass: bool) -> Vec<f32> {
    let x: Vec<f64> = samples.iter().map(|&s| f64::from(s)).collect();
    let x = if high_pass {
        butter4(&x, true, 300.0, RATE as f64)
    } else {
        x
    };
    let band = butter4(&x, false, 3400.0, RATE as f64);
    let narrow: Vec<f64> = narrowband_lowpass(&band).into_iter().step_by(2).collect();
    // The narrow-band signal back at 16 kHz: zeros between, the images above 4 kHz removed.
    let mut up = vec![0.0; samples.len()];
    for (i, v) in narrow.iter().enumerate() {
        if let Some(slot) = up.get_mut(2 * i) {
            *slot = 2.0 * v;
        }
    }
    narrowband_lowpass(&up)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

/// Taps of [`narrowband_lowpass`]'s filter, odd (a linear phase of `TAPS / 2` samples).
const TAPS: usize = 161;

/// A zero-phase FIR low-pass at 3.7 kHz for 16 kHz audio: a sinc under a Kaiser window
/// (beta 8, 161 taps: within 0.01 dB to about 3.45 kHz, 80 dB down from about 3.95 kHz).
/// The output is aligned with the input (the filter's delay removed).
fn narrowband_lowpass(x: &[f64]) -> Vec<f64> {
    let fc = 3700.0 / RATE as f64;
    let beta = 8.0;
    let m = (TAPS - 1) as f64;
    let i0 = |v: f64| {
        // Modified Bessel function of the first kind, order 0 (power series).
        let (mut sum, mut term, mut k) = (1.0, 1.0, 1.0);
        while term > 1e-12 * sum {
            term *= (v / (2.0 * k)).powi(2);
            sum += term;
            k += 1.0;
        }
        sum
    };
    let h: Vec<f64> = (0..TAPS)
        .map(|n| {
            let t = n as f64 - m / 2.0;
            let sinc = if t == 0.0 {
                2.0 * fc
            } else {
                (2.0 * PI * fc * t).sin() / (PI * t)
            };
            let r = 2.0 * n as f64 / m - 1.0;
            sinc * i0(beta * (1.0 - r * r).max(0.0).sqrt()) / i0(beta)
        })
        .collect();
    let half = TAPS / 2;
    (0..x.len())
        .map(|i| {
            h.iter()
                .enumerate()
                .filter_map(|(k, &hk)| {
                    let j = (i + half).checked_sub(k)?;
                    x.get(j).map(|&v| hk * v)
                })
                .sum()
        })
        .collect()
}

/// A small seeded generator (xorshift), uniform in [-1, 1).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// The active speech power: the mean power of the 20 ms frames within 30 dB of the loudest
/// (ITU-T P.56 in spirit).
pub fn active_power(samples: &[f32]) -> f64 {
    let powers: Vec<f64> = samples
        .chunks(RATE / 50)
        .map(|c| c.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / c.len() as f64)
        .collect();
    let peak = powers.iter().copied().fold(0.0, f64::max);
    let active: Vec<f64> = powers.into_iter().filter(|p| *p > peak * 1e-3).collect();
    active.iter().sum::<f64>() / active.len().max(1) as f64
}

/// `samples` with white (`pink` false) or pink noise added `snr_db` below the active speech
/// level (fixed seed).
pub fn with_noise(samples: &[f32], snr_db: f64, pink: bool) -> Vec<f32> {
    let mut rng = Noise(0x9e37_79b9_7f4a_7c15);
    let mut b = [0.0f64; 7];
    let noise: Vec<f64> = (0..samples.len())
        .map(|_| {
            let w = rng.next();
            if !pink {
                return w;
            }
            // Paul Kellet's pink filter.
            b[0] = 0.99886 * b[0] + w * 0.0555179;
            b[1] = 0.99332 * b[1] + w * 0.0750759;
            b[2] = 0.96900 * b[2] + w * 0.1538520;
            b[3] = 0.86650 * b[3] + w * 0.3104856;
            b[4] = 0.55000 * b[4] + w * 0.5329522;
            b[5] = -0.7616 * b[5] - w * 0.0168980;
            let p = b[0] + b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + w * 0.5362;
            b[6] = w * 0.115926;
            p
        })
        .collect();
    let np = noise.iter().map(|v| v * v).sum::<f64>() / noise.len().max(1) as f64;
    let scale = (active_power(samples) / 10f64.powf(snr_db / 10.0) / np.max(1e-30)).sqrt();
    samples
        .iter()
        .zip(&noise)
        .map(|(&s, n)| (f64::from(s) + n * scale) as f32)
        .collect()
}

/// 16-bit PCM WAV bytes of `samples`.
pub fn wav(samples: &[f32]) -> Vec<u8> {
    let data = (samples.len() * 2) as u32;
    let mut out = Vec::with_capacity(44 + data as usize);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&(RATE as u32).to_le_bytes());
    out.extend_from_slice(&(RATE as u32 * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data.to_le_bytes());
    for s in samples {
        let v = (s.clamp(-1.0, 1.0) * 32767.0).round() as i16;
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// A lossy or lossless codec that `ffmpeg` encodes to.
#[derive(Debug, Clone, Copy)]
pub struct Codec {
    /// Short name for tables.
    pub name: &'static str,
    /// File extension (the container).
    pub ext: &'static str,
    /// The `ffmpeg` output arguments.
    pub args: &'static [&'static str],
}

/// The round trips a user's files take: lossless FLAC, and lossy codecs at the bit rates of
/// voice apps and recorders.
pub const CODECS: [Codec; 5] = [
    Codec {
        name: "FLAC",
        ext: "flac",
        args: &["-c:a", "flac"],
    },
    Codec {
        name: "WebM Opus 24k",
        ext: "webm",
        args: &["-c:a", "libopus", "-b:a", "24k"],
    },
    Codec {
        name: "Ogg Vorbis q2",
        ext: "ogg",
        args: &["-c:a", "libvorbis", "-q:a", "2"],
    },
    Codec {
        name: "MP3 64k",
        ext: "mp3",
        args: &["-c:a", "libmp3lame", "-b:a", "64k"],
    },
    Codec {
        name: "M4A AAC 64k",
        ext: "m4a",
        args: &["-c:a", "aac", "-b:a", "64k"],
    },
];

/// Whether the `ffmpeg` program runs here.
pub fn have_ffmpeg() -> bool {
    std::process::Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `samples` encoded by `ffmpeg` with `codec` and decoded back by `attune-media`; `None` when
/// ffmpeg is not installed or cannot encode it (said on stderr).
pub fn round_trip(samples: &[f32], codec: Codec, tag: &str) -> Option<Vec<f32>> {
    let dir = std::env::temp_dir();
    let stem = format!("attune-variant-{}-{tag}", std::process::id());
    let input = dir.join(format!("{stem}.wav"));
    let output = dir.join(format!("{stem}.{}", codec.ext));
    std::fs::write(&input, wav(samples)).ok()?;
    let status = std::process::Command::new("ffmpeg")
        .args(["-nostdin", "-y", "-loglevel", "error", "-i"])
        .arg(&input)
        .args(codec.args)
        .arg(&output)
        .status();
    let bytes = std::fs::read(&output);
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    match (status, bytes) {
        (Ok(s), Ok(bytes)) if s.success() => {
            let pcm = attune_media::decode_audio(&bytes)
                .unwrap_or_else(|e| panic!("{} round trip does not decode: {e}", codec.name));
            Some(pcm.samples)
        }
        _ => {
            eprintln!("NOT RUN: ffmpeg could not encode {}", codec.name);
            None
        }
    }
}
