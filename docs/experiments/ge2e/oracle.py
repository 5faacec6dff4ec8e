"""Diagnostic for step 4: how well 1.6 s windows classify when the speaker
centroids are perfect (built from the file's own reference: mean of the
windows wholly inside one speaker's speech). Each window then goes to the
nearest oracle centroid; DER as in tracker.py. A ceiling for any tracker that
assigns windows by cosine to a centroid.

    OMP_NUM_THREADS=1 nice -n 10 venv/bin/python oracle.py
"""
import numpy as np

from common import der, single_speaker_stretches, speech_union
from tracker import files, hypothesis, stream, to_original, window_embeddings, SR

tot_e = tot_t = 0.0
for name, x, ref, kind in files():
    if kind == "mono":
        continue
    regions = speech_union(ref)
    y, starts = stream(x, regions)
    spans, E = window_embeddings(y)
    st = single_speaker_stretches(ref)
    owner = []
    for a, b in spans:
        iv = to_original(a, b, regions, starts)
        who = set()
        for o0, o1 in iv:
            ks = {k for s, e, k in st if s <= o0 + 1e-6 and o1 <= e + 1e-6}
            who |= ks if ks else {None}
        owner.append(who.pop() if len(who) == 1 else None)
    spk = sorted({o for o in owner if o})
    C = np.array([E[[i for i, o in enumerate(owner) if o == s]].mean(0) for s in spk])
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    S = E @ C.T
    labels = list(S.argmax(1))
    hyp = hypothesis(labels, spans, len(y) / SR, regions, starts)
    d = der(ref, hyp)
    pure = [i for i, o in enumerate(owner) if o]
    acc = np.mean([spk[labels[i]] == owner[i] for i in pure])
    print(f"{name:40s} oracle-centroid DER {100*d['der']:5.1f} % (missed {100*d['missed']/d['total']:.1f}); "
          f"pure windows {len(pure)}/{len(spans)} correct {100*acc:.0f} %; centroid cos "
          + " ".join(f"{C[i]@C[j]:.3f}" for i in range(len(C)) for j in range(i + 1, len(C))))
    if kind == "conv":
        tot_e += d["der"] * d["total"]
        tot_t += d["total"]
print(f"c01-c12 time-weighted oracle-centroid DER {100*tot_e/tot_t:.1f} %")
