"""Step 4, second design (exploratory): founding by buffered centroid.

Windows as tracker.py (1.6 s every 0.5 s, -30 dBFS each). A window whose best
cosine to a speaker centroid is >= TW joins it (centroid = running mean).
Windows that fit no speaker collect in a candidate buffer; when it holds N
consecutive windows its own centroid is compared with every speaker
centroid: below TC for all -> a new speaker founded from the buffer (its
windows relabelled), otherwise the buffer joins the nearest speaker. A window
that fits a speaker while the buffer is open closes it (buffered windows go
to their nearest speakers, centroids untouched). Look-ahead: up to N hops
(relabelling) plus 0.55 s.

Tuned on c01-c08 (as docs/EVALUATION.md's split); c09-c12 and the real
sample reported beside it. Writes results/tracker_buffered.json.
"""
import itertools
import json

import numpy as np

from common import der, speech_union
from tracker import OUT, SR, files, hypothesis, stream, window_embeddings


def unit(v):
    return v / np.linalg.norm(v)


def track(E, TW, TC, N):
    sums, labels, buf = [], [], []

    def nearest(e):
        C = np.array([unit(s) for s in sums])
        c = C @ e
        j = int(np.argmax(c))
        return j, c[j]

    def resolve(final=False):
        nonlocal buf
        if not buf:
            return
        b = unit(E[buf].mean(0))
        if not sums:
            sums.append(E[buf].sum(0))
            for i in buf:
                labels[i] = 0
        else:
            C = np.array([unit(s) for s in sums])
            cb = C @ b
            if cb.max() < TC and (len(buf) >= N or final and len(buf) >= 2):
                sums.append(E[buf].sum(0))
                for i in buf:
                    labels[i] = len(sums) - 1
            else:
                j = int(np.argmax(cb))
                sums[j] = sums[j] + E[buf].sum(0)
                for i in buf:
                    labels[i] = j
        buf = []

    for i, e in enumerate(E):
        labels.append(-1)
        if sums:
            j, c = nearest(e)
            labels[i] = j
            if c >= TW:
                if buf:  # close the buffer: each to its nearest, no update
                    for k in buf:
                        labels[k] = nearest(E[k])[0]
                    buf = []
                sums[j] = sums[j] + e
                continue
        buf.append(i)
        if len(buf) >= N:
            resolve()
    resolve(final=True)
    return labels


def main():
    data = []
    for name, x, ref, kind in files():
        regions = speech_union(ref)
        y, starts = stream(x, regions)
        spans, E = window_embeddings(y)
        data.append((name, kind, ref, regions, starts, spans, E, len(y) / SR))
    grid = list(itertools.product([0.70, 0.75, 0.80, 0.85], [0.75, 0.80, 0.82, 0.84, 0.86, 0.88, 0.90], [3, 4, 6]))
    res = {}
    for TW, TC, N in grid:
        key = f"TW{TW:.2f}_TC{TC:.2f}_N{N}"
        r = {}
        for name, kind, ref, regions, starts, spans, E, total in data:
            labels = track(E, TW, TC, N)
            hyp = hypothesis(labels, spans, total, regions, starts)
            d = der(ref, hyp)
            r[name] = {"kind": kind, "der": d["der"], "total": d["total"], "speakers": len(set(labels))}
        res[key] = r
    (OUT / "tracker_buffered.json").write_text(json.dumps(res, indent=1))

    def tw(r, pred):
        e = sum(v["der"] * v["total"] for n, v in r.items() if pred(n, v))
        t = sum(v["total"] for n, v in r.items() if pred(n, v))
        return 100 * e / t

    rows = []
    for key, r in res.items():
        mono = [v["speakers"] for v in r.values() if v["kind"] == "mono"]
        rows.append((tw(r, lambda n, v: n[:3] in [f"c0{i}" for i in range(1, 9)]), key,
                     tw(r, lambda n, v: n[:3] in ("c09", "c10", "c11", "c12")),
                     tw(r, lambda n, v: v["kind"] == "conv"), 100 * r["real/sample"]["der"],
                     r["real/sample"]["speakers"], mono, r))
    rows.sort(key=lambda t: t[0])
    print("setting | c01-c08 | c09-c12 | c01-c12 | real (spk) | monologue speakers")
    for tune, key, held, allc, real, rs, mono, r in rows[:15]:
        print(f"{key} | {tune:5.1f} | {held:5.1f} | {allc:5.1f} | {real:5.1f} ({rs}) | {mono}")
    ok = [t for t in rows if max(t[6]) == 1]
    print("\nbest with every monologue one speaker:")
    for tune, key, held, allc, real, rs, mono, r in ok[:5]:
        print(f"{key} | {tune:5.1f} | {held:5.1f} | {allc:5.1f} | {real:5.1f} ({rs}) | {mono}")
    best = ok[0]
    print(f"\nper file, {best[1]}:")
    for n, v in best[7].items():
        print(f"  {n:40s} {100*v['der']:5.1f} % ({v['speakers']} spk)")


if __name__ == "__main__":
    main()
