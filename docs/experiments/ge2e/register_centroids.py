"""Centroid-level view: cosine between centroids of one voice in two
registers (each centroid = mean of that part's 1.6 s windows), to set beside
the different-speaker centroid cosines of oracle.py."""
import numpy as np
from common import SPEECH, energy_vad, load_monologue, read_wav, calm_then_stressed, SR
from tracker import stream, window_embeddings

def cent(x):
    y, _ = stream(x, energy_vad(x))
    _, E = window_embeddings(y)
    c = E.mean(0)
    return c / np.linalg.norm(c), len(E)

C = {n: cent(load_monologue(n)) for n in ["baseline", "hesitant", "rising", "stressed", "disengaged", "fillers"]}
for n in ["hesitant", "rising", "stressed", "disengaged"]:
    print(f"en-us baseline vs {n:10s} centroid cos {C['baseline'][0] @ C[n][0]:.3f} ({C['baseline'][1]} vs {C[n][1]} windows)")
print(f"en-us stressed vs disengaged centroid cos {C['stressed'][0] @ C['disengaged'][0]:.3f}")
print(f"en-us stressed vs hesitant centroid cos {C['stressed'][0] @ C['hesitant'][0]:.3f}")
x = load_monologue("fillers"); h = len(x) // 2
a, b = cent(x[:h]), cent(x[h:])
print(f"fillers first half vs second half centroid cos {a[0] @ b[0]:.3f}")
print(f"fillers (en-gb) vs baseline (en-us) centroid cos {C['fillers'][0] @ C['baseline'][0]:.3f}  (different espeak voices)")
x, cut = calm_then_stressed(); k = int(cut * SR)
a, b = cent(x[:k]), cent(x[k:])
print(f"calm_then_stressed: calm vs stressed centroid cos {a[0] @ b[0]:.3f}")
