"""Shared helpers for the GE2E (Resemblyzer) speaker-embedding experiment.

Everything runs single-threaded (torch.set_num_threads(1)); run scripts with
`OMP_NUM_THREADS=1 nice -n 10 venv/bin/python ...`.
"""
import os
import wave
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np
import torch

torch.set_num_threads(1)

from resemblyzer import VoiceEncoder  # noqa: E402
from resemblyzer.audio import wav_to_mel_spectrogram  # noqa: E402

SR = 16000
HOP = 160  # mel hop (10 ms)
FIX = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
CONV = FIX / "conversations"
SPEECH = FIX / "speech"
TARGET_DBFS = -30.0  # resemblyzer's audio_norm_target_dBFS
INT16_MAX = 2 ** 15 - 1

_ENC = None


def encoder():
    global _ENC
    if _ENC is None:
        _ENC = VoiceEncoder("cpu", verbose=False)
        _ENC.eval()
    return _ENC


def read_wav(path):
    with wave.open(str(path)) as w:
        assert w.getframerate() == SR and w.getnchannels() == 1 and w.getsampwidth() == 2, path
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return x.astype(np.float32) / 32768.0


def parse_rttm(path):
    segs = []
    for line in Path(path).read_text().splitlines():
        p = line.split()
        if p and p[0] == "SPEAKER":
            s, d = float(p[3]), float(p[4])
            segs.append((s, s + d, p[7]))
    return segs


def energy_vad(x, frame=0.02, rel_db=-35.0, bridge=0.3, min_len=0.2):
    """Speech regions of a clean (synthetic) monologue: 20 ms frames within
    `rel_db` of the loudest frame, gaps shorter than `bridge` closed."""
    n = int(frame * SR)
    k = len(x) // n
    p = (x[: k * n].reshape(k, n) ** 2).mean(1) + 1e-12
    db = 10 * np.log10(p)
    on = db > db.max() + rel_db
    regs = []
    i = 0
    while i < k:
        if on[i]:
            j = i
            while j < k and on[j]:
                j += 1
            regs.append([i * frame, j * frame])
            i = j
        else:
            i += 1
    merged = []
    for r in regs:
        if merged and r[0] - merged[-1][1] < bridge:
            merged[-1][1] = r[1]
        else:
            merged.append(r)
    return [(a, b) for a, b in merged if b - a >= min_len]


def calm_then_stressed():
    """The behaviour test's recording as diarization_eval builds it:
    baseline twice, cut to a multiple of 5 s, then stressed. Returns the audio
    and the time where the stressed part starts."""
    calm = read_wav(SPEECH / "baseline.wav")
    calm = np.concatenate([calm, calm])
    calm = calm[: (len(calm) // 80000) * 80000]
    stressed = read_wav(SPEECH / "stressed.wav")
    return np.concatenate([calm, stressed]), len(calm) / SR


MONOLOGUES = ["calm_then_stressed", "baseline", "hesitant", "rising", "stressed", "disengaged", "fillers"]


def load_monologue(name):
    if name == "calm_then_stressed":
        x, _ = calm_then_stressed()
        return x
    return read_wav(SPEECH / f"{name}.wav")


def single_speaker_stretches(segs):
    """Reference regions where exactly one speaker talks: (start, end, spk)."""
    cuts = sorted({t for s, e, _ in segs for t in (s, e)})
    out = []
    for a, b in zip(cuts, cuts[1:]):
        mid = 0.5 * (a + b)
        who = {k for s, e, k in segs if s <= mid < e}
        if len(who) == 1:
            spk = who.pop()
            if out and out[-1][2] == spk and abs(out[-1][1] - a) < 1e-9:
                out[-1] = (out[-1][0], b, spk)
            else:
                out.append((a, b, spk))
    return out


def speech_union(segs):
    iv = sorted((s, e) for s, e, _ in segs)
    out = []
    for s, e in iv:
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(a, b) for a, b in out]


def gain_to_target(x, increase_only=False):
    rms = np.sqrt(np.mean((x * INT16_MAX) ** 2)) + 1e-9
    change = TARGET_DBFS - 20 * np.log10(rms / INT16_MAX)
    if increase_only and change < 0:
        return 1.0
    return 10 ** (change / 20)


def mel(x):
    """resemblyzer's front end: librosa power mel, 16 kHz, n_fft 400, hop 160,
    40 mels, [frames, 40] float32 (not log)."""
    return wav_to_mel_spectrogram(x)


@torch.no_grad()
def embed_mels(mels):
    """mels: [B, T, 40] float32 -> [B, 256] L2-normalised embeddings."""
    t = torch.from_numpy(np.ascontiguousarray(mels, dtype=np.float32))
    return encoder()(t).numpy()


def embed_segments(x, spans, norm="window"):
    """Embed each (start_s, end_s) span of audio x. norm: 'window' scales each
    span to -30 dBFS (both ways); 'file' applies resemblyzer's increase-only
    whole-file normalisation first; 'none' leaves the level alone."""
    if norm == "file":
        x = x * gain_to_target(x, increase_only=True)
    out = []
    by_len = {}
    for i, (s, e) in enumerate(spans):
        seg = x[int(round(s * SR)): int(round(e * SR))]
        if norm == "window":
            seg = seg * gain_to_target(seg)
        m = mel(seg)
        by_len.setdefault(m.shape[0], []).append((i, m))
    res = [None] * len(spans)
    for _, items in by_len.items():
        E = embed_mels(np.stack([m for _, m in items]))
        for (i, _), e in zip(items, E):
            res[i] = e
    return np.array(res)


def windows_in(stretches, length, hop=0.5):
    """Segments of `length` s every `hop` s that fit inside each stretch."""
    out = []
    for s, e, *rest in stretches:
        t = s
        while t + length <= e + 1e-9:
            out.append((t, t + length, *rest))
            t += hop
    return out


def der(reference, hypothesis, collar=0.25):
    """DER as attune_core::diarization::diarization_error_rate (pyannote
    convention: collar/2 either side of every reference boundary removed;
    optimal one-to-one speaker mapping). Returns dict of seconds."""
    from scipy.optimize import linear_sum_assignment

    ref = [r for r in reference if r[1] > r[0]]
    hyp = [h for h in hypothesis if h[1] > h[0]]
    rl = sorted({r[2] for r in ref})
    hl = sorted({h[2] for h in hyp})
    half = collar / 2
    excl = [iv for s, e, _ in ref for iv in ((s - half, s + half), (e - half, e + half))] if half > 0 else []
    cuts = sorted({t for s, e, _ in ref + hyp for t in (s, e)} | {t for iv in excl for t in iv})
    pieces = []
    for a, b in zip(cuts, cuts[1:]):
        mid = 0.5 * (a + b)
        if any(e0 < mid < e1 for e0, e1 in excl):
            continue
        r = sorted({rl.index(k) for s, e, k in ref if s <= mid < e})
        h = sorted({hl.index(k) for s, e, k in hyp if s <= mid < e})
        if r or h:
            pieces.append((b - a, r, h))
    ov = np.zeros((max(len(rl), 1), max(len(hl), 1)))
    for d, r, h in pieces:
        for i in r:
            for j in h:
                ov[i, j] += d
    ri, ci = linear_sum_assignment(-ov)
    mapping = {j: i for i, j in zip(ri, ci) if ov[i, j] > 0}
    tot = miss = fa = conf = 0.0
    for d, r, h in pieces:
        nr, nh = len(r), len(h)
        tot += d * nr
        miss += d * max(0, nr - nh)
        fa += d * max(0, nh - nr)
        correct = sum(1 for j in h if j in mapping and mapping[j] in r)
        conf += d * (min(nr, nh) - correct)
    return {"total": tot, "missed": miss, "false_alarm": fa, "confusion": conf,
            "der": (miss + fa + conf) / tot if tot > 0 else 0.0}
