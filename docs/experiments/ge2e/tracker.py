"""Step 4: a simple online speaker tracker on GE2E embeddings, DER per file.

Speech = the reference RTTM union (conversations, real sample) or energy-VAD
regions (monologues), so only the speaker question is scored. The speech is
joined into one stream; a 1.6 s window every 0.5 s is embedded (each window
scaled to -30 dBFS); each window goes to the nearest speaker centroid
(running mean of its windows' embeddings) if cosine >= T, else it founds a
new speaker (found=2: only after two consecutive windows fit no speaker;
the first of them then joins the new speaker too). A window's label covers
its central 0.5 s (the first and last windows extend to the stream's ends),
so the look-ahead is 0.55 s of speech (1.05 s with found=2).

    OMP_NUM_THREADS=1 nice -n 10 venv/bin/python tracker.py
"""
import json
from pathlib import Path

import numpy as np
import soundfile as sf

from common import (CONV, FIX, MONOLOGUES, SPEECH, SR, der, embed_segments, energy_vad,
                    load_monologue, parse_rttm, read_wav, speech_union)

WIN, HOP = 1.6, 0.5
THRESHOLDS = [0.60, 0.65, 0.70, 0.725, 0.75, 0.775, 0.80, 0.825, 0.85]
OUT = Path(__file__).parent / "results"
OUT.mkdir(exist_ok=True)


def robustness_base():
    """tests/fixtures/robustness/base.flac (two_voices + baseline + disengaged +
    hesitant + stressed) with a reference built from truth.json's turns and
    energy-VAD regions of the one-voice parts (all en-us)."""
    x, sr = sf.read(str(FIX / "robustness/base.flac"), dtype="float32")
    assert sr == SR
    truth = json.loads((SPEECH / "truth.json").read_text())["files"]["two_voices.wav"]["turns"]
    ref = [(t["start_s"], t["end_s"], "V" + t["voice"]) for t in truth]
    off = len(read_wav(SPEECH / "two_voices.wav")) / SR
    for n in ["baseline", "disengaged", "hesitant", "stressed"]:
        y = read_wav(SPEECH / f"{n}.wav")
        ref += [(off + a, off + b, "Ven-us") for a, b in energy_vad(y)]
        off += len(y) / SR
    return x, ref


def files():
    out = [("real/sample", read_wav(FIX / "real/sample.wav"), parse_rttm(FIX / "real/sample.rttm"), "real")]
    for w in sorted(CONV.glob("c*.wav")):
        out.append((w.stem, read_wav(w), parse_rttm(w.with_suffix(".rttm")), "conv"))
    x, ref = robustness_base()
    out.append(("robustness/base (2 voices)", x, ref, "extra"))
    for n in MONOLOGUES:
        x = load_monologue(n)
        out.append((n, x, [(a, b, "S") for a, b in energy_vad(x)], "mono"))
    return out


def stream(x, regions):
    parts = [x[int(round(a * SR)): int(round(b * SR))] for a, b in regions]
    y = np.concatenate(parts)
    # stream offset (s) where each region starts
    starts = np.cumsum([0] + [len(p) for p in parts[:-1]]) / SR
    return y, starts


def to_original(s0, s1, regions, starts):
    """Stream interval -> list of original-time intervals."""
    out = []
    for (a, b), st in zip(regions, starts):
        ln = b - a
        lo, hi = max(s0, st), min(s1, st + ln)
        if hi > lo:
            out.append((a + lo - st, a + hi - st))
    return out


def window_embeddings(y):
    dur = len(y) / SR
    if dur < WIN:
        spans = [(0.0, dur)]
    else:
        n = int(np.floor((dur - WIN) / HOP + 1e-9)) + 1
        spans = [(k * HOP, k * HOP + WIN) for k in range(n)]
    return spans, embed_segments(y, spans, norm="window")


def track(E, T, found=1):
    sums, labels = [], []
    pending = None  # index of a window that fitted no speaker (found=2)
    for i, e in enumerate(E):
        if sums:
            C = np.array([s / np.linalg.norm(s) for s in sums])
            c = C @ e
            j = int(np.argmax(c))
            fits = c[j] >= T
        else:
            fits = False
        if fits:
            sums[j] = sums[j] + e
            labels.append(j)
            pending = None
            continue
        if found == 1 or not sums or pending == i - 1:
            sums.append(e.copy())
            k = len(sums) - 1
            if pending is not None and pending == i - 1 and found == 2 and len(sums) > 1:
                # the pending window joins the new speaker (moved from its provisional one)
                old = labels[pending]
                sums[old] = sums[old] - E[pending]
                sums[k] = sums[k] + E[pending]
                labels[pending] = k
            labels.append(k)
            pending = None
        else:
            # provisional: nearest speaker, centroid untouched
            labels.append(j)
            pending = i
    return labels


def hypothesis(labels, spans, total, regions, starts):
    hyp = []
    for k, (lab, (a, b)) in enumerate(zip(labels, spans)):
        mid = 0.5 * (a + b)
        s0 = 0.0 if k == 0 else mid - HOP / 2
        s1 = total if k == len(spans) - 1 else mid + HOP / 2
        for o0, o1 in to_original(s0, s1, regions, starts):
            hyp.append((o0, o1, f"h{lab}"))
    return hyp


def main():
    rows = {}
    for name, x, ref, kind in files():
        regions = speech_union(ref)
        y, starts = stream(x, regions)
        spans, E = window_embeddings(y)
        total = len(y) / SR
        rows[name] = {"kind": kind, "speech_s": total, "windows": len(spans), "runs": {}}
        for found in (1, 2):
            for T in THRESHOLDS:
                labels = track(E, T, found)
                hyp = hypothesis(labels, spans, total, regions, starts)
                d = der(ref, hyp)
                n_spk = len(set(labels))
                durs = {}
                for a, b, k in hyp:
                    durs[k] = durs.get(k, 0) + b - a
                major = max(durs.values()) / sum(durs.values())
                rows[name]["runs"][f"f{found}_T{T:.3f}"] = {
                    "der": d["der"], "total": d["total"], "missed": d["missed"],
                    "false_alarm": d["false_alarm"], "confusion": d["confusion"],
                    "speakers": n_spk, "majority_share": major}
        print(name, len(spans), "windows", flush=True)
    (OUT / "tracker.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
