"""Step 5: single-threaded speed of the mel front end and the GE2E LSTM for
the tracker's schedule (1.6 s windows = 160 mel frames, every 0.5 s).
CPU time by time.process_time (machine shared with a fuzzing campaign, run
under nice; process time is less disturbed than wall time)."""
import time

import numpy as np
import torch

from common import CONV, embed_mels, encoder, mel, read_wav, SR

torch.set_num_threads(1)
x = read_wav(CONV / "c05_hesitant_f2_m4.wav")  # 44.9 s
dur = len(x) / SR
enc = encoder()


def cpu(f, reps=3):
    best = 1e9
    for _ in range(reps):
        t = time.process_time()
        out = f()
        best = min(best, time.process_time() - t)
    return best, out


# Mel: once over the whole stream (streaming would compute each 10 ms frame once).
t_mel, M = cpu(lambda: mel(x))
# Mel recomputed per window (what embed_segments does): 2 windows/s of audio.
starts = np.arange(0, dur - 1.6 + 1e-9, 0.5)
t_melw, _ = cpu(lambda: [mel(x[int(s * SR): int((s + 1.6) * SR)]) for s in starts], reps=2)
# Encoder: one window at a time (streaming), and all windows batched.
wins = np.stack([M[int(round(s * 100)): int(round(s * 100)) + 160] for s in starts])
t_one, _ = cpu(lambda: [embed_mels(w[None]) for w in wins], reps=2)
t_batch, _ = cpu(lambda: embed_mels(wins), reps=2)
print(f"audio {dur:.1f} s, {len(starts)} windows of 160 frames (hop 0.5 s), torch threads {torch.get_num_threads()}")
print(f"mel, whole stream once:       {t_mel*1000:7.1f} ms CPU -> {dur/t_mel:7.0f} s audio per CPU s")
print(f"mel, per 1.6 s window:        {t_melw*1000:7.1f} ms CPU -> {dur/t_melw:7.0f} s audio per CPU s")
print(f"LSTM, one window per call:    {t_one*1000:7.1f} ms CPU ({t_one/len(starts)*1000:.2f} ms/window) -> {dur/t_one:6.1f} s audio per CPU s")
print(f"LSTM, all windows batched:    {t_batch*1000:7.1f} ms CPU -> {dur/t_batch:6.1f} s audio per CPU s")
print(f"schedule total (mel once + LSTM one by one): {dur/(t_mel+t_one):.1f} s audio per CPU s")
