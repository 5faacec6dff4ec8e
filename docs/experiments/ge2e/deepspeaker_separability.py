"""The GE2E separability measurement (docs/experiments/ge2e/separability.py) with
Deep Speaker's ResCNN (the checkpoint PyPI `speaker-verification` 0.1.2 ships, MIT)
in place of GE2E: 64 log filterbanks (python_speech_features.fbank, as the
package's audio.py), each frame normalised, the ResCNN's 512-d unit embedding.

    python3 -m venv ds-venv
    ds-venv/bin/pip install tensorflow-cpu tf-keras python_speech_features numpy scipy
    ds-venv/bin/pip download --no-deps --ignore-requires-python -d sv speaker-verification==0.1.2
    unzip sv/speaker_verification-0.1.2-py3-none-any.whl -d sv/x
    TF_USE_LEGACY_KERAS=1 OMP_NUM_THREADS=1 ds-venv/bin/python deepspeaker_separability.py
    ds-venv/bin/python key_table.py results/separability_deepspeaker.json

The tables are written as results/separability_deepspeaker.json (the run's
printed tables are committed as results/deepspeaker_*.txt).
"""
import os
import sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import types
# common.py imports torch and resemblyzer for GE2E; this script does not use them.
_torch = types.ModuleType("torch")
_torch.set_num_threads = lambda n: None
_torch.no_grad = lambda: (lambda f: f)
sys.modules["torch"] = _torch
_rz = types.ModuleType("resemblyzer")
_rz.VoiceEncoder = None
_rza = types.ModuleType("resemblyzer.audio")
_rza.wav_to_mel_spectrogram = None
sys.modules["resemblyzer"] = _rz
sys.modules["resemblyzer.audio"] = _rza
sys.modules["librosa"] = types.ModuleType("librosa")  # only audio_read uses it
HERE = os.path.dirname(os.path.abspath(__file__))
WHEEL = os.path.join(HERE, "sv", "x")  # the unpacked speaker-verification wheel
sys.path.insert(0, HERE)
sys.path.insert(0, WHEEL)
import numpy as np
from python_speech_features import fbank

import separability
from common import SR
from speaker_verification.deep_speaker.rescnn_model import DeepSpeakerModel

MODEL = DeepSpeakerModel(batch_input_shape=(None, None, 64, 1))
MODEL.rescnn.load_weights(
    os.path.join(WHEEL, "speaker_verification/models/ResCNN_triplet_training_checkpoint_265.h5"),
    by_name=True)


def feats(seg):
    fb, _ = fbank(seg, samplerate=SR, nfilt=64)
    m = np.array([(v - v.mean()) / max(v.std(), 1e-12) for v in fb], dtype=np.float32)
    return m


def embed_segments(x, spans, norm="window"):
    by_len, res = {}, [None] * len(spans)
    for i, (s, e) in enumerate(spans):
        seg = x[int(round(s * SR)): int(round(e * SR))]
        m = feats(seg)
        by_len.setdefault(m.shape[0], []).append((i, m))
    for _, items in by_len.items():
        batch = np.stack([m for _, m in items])[..., None]
        E = MODEL.rescnn.predict(batch, verbose=0, batch_size=64)
        for (i, _), e in zip(items, E):
            res[i] = e / np.linalg.norm(e)
    return np.array(res)


separability.embed_segments = embed_segments
separability.NORM = "deepspeaker"
separability.main()
