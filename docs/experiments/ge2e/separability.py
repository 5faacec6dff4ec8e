"""Step 3: cosine-similarity distributions of GE2E embeddings of 1.0 s and
1.6 s segments (hop 0.5 s) for same- and different-speaker pairs.

Per speaker, its reference single-speaker stretches (RTTM regions where only
that speaker talks; for monologues, energy-VAD regions) are joined into one
speech stream and cut into windows; pairs of windows that share audio are
left out. Writes results/separability_<norm>.json and prints tables.

    OMP_NUM_THREADS=1 nice -n 10 venv/bin/python separability.py [window|file|none]
"""
import itertools
import json
import sys
from pathlib import Path

import numpy as np

from common import (calm_then_stressed, CONV, FIX, MONOLOGUES, SR, embed_segments, energy_vad, load_monologue,
                    parse_rttm, read_wav, single_speaker_stretches)

NORM = sys.argv[1] if len(sys.argv) > 1 else "window"
LENGTHS = [1.0, 1.6]
HOP = 0.5
OUT = Path(__file__).parent / "results"
OUT.mkdir(exist_ok=True)


def stream_windows(x, stretches, length):
    """Join stretches [(s, e)] of x into one stream; windows of `length` every
    HOP s. Returns the stream, window spans in stream time, and for each
    window its start/end in original time."""
    parts, orig = [], []
    for s, e in stretches:
        a, b = int(round(s * SR)), int(round(e * SR))
        parts.append(x[a:b])
        orig.append(np.arange(a, b))
    y = np.concatenate(parts)
    o = np.concatenate(orig) / SR
    spans, where = [], []
    t = 0.0
    while t + length <= len(y) / SR + 1e-9:
        spans.append((t, t + length))
        i0, i1 = int(round(t * SR)), min(int(round((t + length) * SR)), len(y)) - 1
        where.append((float(o[i0]), float(o[i1])))
        t += HOP
    return y, spans, where


def sims(A, B=None, length=None, sa=None, sb=None):
    """Cosines of all pairs (A x A upper triangle, or A x B), leaving out pairs
    of windows of the same stream whose audio overlaps."""
    if B is None:
        C = A @ A.T
        out = []
        for i, j in itertools.combinations(range(len(A)), 2):
            if abs(sa[i][0] - sa[j][0]) >= length - 1e-9:
                out.append(C[i, j])
        return np.array(out)
    return (A @ B.T).ravel()


def stats(v):
    if len(v) == 0:
        return None
    return {"n": int(len(v)), "mean": float(np.mean(v)), "p5": float(np.percentile(v, 5)),
            "p95": float(np.percentile(v, 95)), "min": float(np.min(v)), "max": float(np.max(v))}


def conv_files():
    files = [("real/sample", FIX / "real/sample.wav", FIX / "real/sample.rttm", None)]
    for w in sorted(CONV.glob("c*.wav")):
        j = json.loads(w.with_suffix(".json").read_text())
        files.append((w.stem, w, w.with_suffix(".rttm"), j["spans"]))
    return files


def span_of(spans, t0, t1):
    if not spans:
        return None
    for s in spans:
        if s["start_s"] <= t0 and t1 <= s["end_s"]:
            return s["behaviour"]
    return None  # straddles a behaviour change


def main():
    res = {"norm": NORM, "files": {}}
    for length in LENGTHS:
        key = f"{length:.1f}"
        # Conversations and the real sample.
        for name, wav, rttm, spans in conv_files():
            x = read_wav(wav)
            if NORM == "file":
                from common import gain_to_target
                x = x * gain_to_target(x, increase_only=True)
            st = single_speaker_stretches(parse_rttm(rttm))
            emb = {}
            for spk in sorted({k for *_, k in st}):
                y, sp, where = stream_windows(x, [(s, e) for s, e, k in st if k == spk], length)
                if not sp:
                    continue
                E = embed_segments(y, sp, norm="window" if NORM == "window" else "none")
                emb[spk] = (E, sp, where)
            d = res["files"].setdefault(name, {})
            same = np.concatenate([sims(E, length=length, sa=sp) for E, sp, _ in emb.values()])
            diff = np.concatenate([sims(emb[a][0], emb[b][0]) for a, b in itertools.combinations(emb, 2)]) \
                if len(emb) > 1 else np.array([])
            entry = {"same": stats(same), "diff": stats(diff),
                     "windows": {k: len(v[0]) for k, v in emb.items()}}
            # Same speaker across a behaviour change (windows wholly inside different spans).
            if spans:
                cross = []
                for E, sp, where in emb.values():
                    tags = [span_of(spans, a, b) for a, b in where]
                    for i, j in itertools.combinations(range(len(E)), 2):
                        if tags[i] and tags[j] and tags[i] != tags[j]:
                            cross.append(float(E[i] @ E[j]))
                entry["same_cross_behaviour"] = stats(np.array(cross))
            # Centroid view: each window vs its own speaker's centroid (others'
            # windows) and vs the other speakers' centroids.
            if len(emb) > 1:
                cents = {k: v[0].mean(0) / np.linalg.norm(v[0].mean(0)) for k, v in emb.items()}
                own = [float(e @ cents[k]) for k, v in emb.items() for e in v[0]]
                other = [float(e @ cents[o]) for k, v in emb.items() for e in v[0] for o in cents if o != k]
                entry["to_own_centroid"] = stats(np.array(own))
                entry["to_other_centroid"] = stats(np.array(other))
                entry["centroid_cos"] = {f"{a}-{b}": float(cents[a] @ cents[b])
                                         for a, b in itertools.combinations(cents, 2)}
            d[key] = entry
        # Monologues: one speaker each.
        mono_emb = {}
        for name in MONOLOGUES:
            x = load_monologue(name)
            if NORM == "file":
                from common import gain_to_target
                x = x * gain_to_target(x, increase_only=True)
            regs = energy_vad(x)
            y, sp, where = stream_windows(x, regs, length)
            E = embed_segments(y, sp, norm="window" if NORM == "window" else "none")
            mono_emb[name] = E
            entry = {"same": stats(sims(E, length=length, sa=sp)), "windows": len(E)}
            if name == "calm_then_stressed":
                _, cut = calm_then_stressed()  # 15.0 s: baseline twice cut to 5 s multiples
                calm = [i for i, (a, b) in enumerate(where) if b < cut]
                strs = [i for i, (a, b) in enumerate(where) if a >= cut]
                entry["cross_register"] = stats(sims(E[calm], E[strs]))
                entry["windows_calm_stressed"] = [len(calm), len(strs)]
                c = E[calm].mean(0)
                c /= np.linalg.norm(c)
                entry["stressed_to_calm_centroid"] = stats(E[strs] @ c)
            c = E.mean(0)
            c /= np.linalg.norm(c)
            entry["to_own_centroid"] = stats(E @ c)
            res["files"].setdefault(name, {})[key] = entry
        # One voice (en-us) across files: baseline vs each other register.
        cb = mono_emb["baseline"].mean(0)
        cb /= np.linalg.norm(cb)
        for other in ["hesitant", "rising", "stressed", "disengaged"]:
            res["files"].setdefault(f"en-us baseline x {other}", {})[key] = {
                "cross_register": stats(sims(mono_emb["baseline"], mono_emb[other])),
                "to_baseline_centroid": stats(mono_emb[other] @ cb)}
        res["files"].setdefault("fillers(en-gb) x baseline(en-us)", {})[key] = {
            "diff": stats(sims(mono_emb["fillers"], mono_emb["baseline"])),
            "to_baseline_centroid": stats(mono_emb["fillers"] @ cb)}
    (OUT / f"separability_{NORM}.json").write_text(json.dumps(res, indent=1))
    report(res)


def fmt(s):
    return "-" if not s else f"{s['mean']:.3f} [{s['p5']:.3f},{s['p95']:.3f}] min {s['min']:.3f} max {s['max']:.3f} n={s['n']}"


def report(res):
    print(f"normalisation: {res['norm']}")
    for key in ["1.0", "1.6"]:
        print(f"\n== {key} s segments: mean [p5, p95] ==")
        for name, d in res["files"].items():
            e = d.get(key, {})
            line = f"{name:42s}"
            for k in ["same", "same_cross_behaviour", "cross_register", "diff", "to_own_centroid",
                      "to_other_centroid", "stressed_to_calm_centroid", "to_baseline_centroid"]:
                if e.get(k):
                    line += f" | {k}: {fmt(e[k])}"
            if "centroid_cos" in e:
                line += " | centroids " + " ".join(f"{k}={v:.3f}" for k, v in e["centroid_cos"].items())
            print(line)


if __name__ == "__main__":
    main()
