"""Runs senko (PyPI senko 0.2.2, CPU, one thread) on WAV files and writes one RTTM per file
plus the CPU seconds its diarization took; see run.sh."""

import json
import os
import resource
import sys
import time

import torch

torch.set_num_threads(1)
os.environ.setdefault("OMP_NUM_THREADS", "1")

from senko import Diarizer  # noqa: E402  (after the thread settings)

out_dir, wavs = sys.argv[1], sys.argv[2:]
os.makedirs(out_dir, exist_ok=True)
diarizer = Diarizer(device="cpu", warmup=True, quiet=True)
# Senko's own CPU path sets torch to all cores around its VAD; hold it to one.
diarizer._set_torch_num_threads = lambda num=None: torch.set_num_threads(1)
torch.set_num_threads(1)


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


timing = {}
for wav in wavs:
    name = os.path.splitext(os.path.basename(wav))[0]
    t0, w0 = cpu(), time.time()
    result = diarizer.diarize(wav)
    timing[name] = {"cpu_s": cpu() - t0, "wall_s": time.time() - w0}
    with open(os.path.join(out_dir, f"{name}.rttm"), "w") as f:
        for seg in (result or {}).get("merged_segments", []):
            f.write(f"SPEAKER {name} 1 {seg['start']:.3f} {seg['end'] - seg['start']:.3f} "
                    f"<NA> <NA> {seg['speaker']} <NA> <NA>\n")
with open(os.path.join(out_dir, "timing.json"), "w") as f:
    json.dump(timing, f, indent=1)
print(json.dumps(timing))
