"""Sanity: our window embedding vs resemblyzer's own embed_utterance partials
(rate 2/s = hop 0.5 s) on a stretch of c02, and the library's full path
(preprocess_wav with webrtcvad) on the real sample's two speakers."""
import numpy as np
from resemblyzer import preprocess_wav
from common import CONV, FIX, SR, embed_segments, encoder, parse_rttm, read_wav, single_speaker_stretches

x = read_wav(CONV / "c02_neutral_m1_m2.wav")[int(0.5 * SR): int(4.5 * SR)]
_, partials, slices = encoder().embed_utterance(x, return_partials=True, rate=2.0, min_coverage=0.99)
spans = [(s.start / SR, s.stop / SR) for s in slices if s.stop <= len(x)]
ours = embed_segments(x, spans, norm="none")
print("ours vs library partials, cosine:", np.round((ours * partials[:len(ours)]).sum(1), 4))
y = read_wav(FIX / "real/sample.wav")
st = single_speaker_stretches(parse_rttm(FIX / "real/sample.rttm"))
emb = {}
for k in sorted({s[2] for s in st}):
    w = np.concatenate([y[int(a * SR): int(b * SR)] for a, b, kk in st if kk == k])
    emb[k] = encoder().embed_utterance(preprocess_wav(w, source_sr=SR))
    print(k, f"{len(w)/SR:.1f} s of speech")
a, b = emb.values()
print(f"real sample, library path (preprocess_wav + embed_utterance), speaker90 vs speaker91 utterance cosine {a @ b:.3f}")
half = {}
for k in emb:
    w = np.concatenate([y[int(a_ * SR): int(b_ * SR)] for a_, b_, kk in st if kk == k])
    h = len(w) // 2
    e1 = encoder().embed_utterance(preprocess_wav(w[:h], source_sr=SR))
    e2 = encoder().embed_utterance(preprocess_wav(w[h:], source_sr=SR))
    print(f"{k}: first half vs second half utterance cosine {e1 @ e2:.3f}")
