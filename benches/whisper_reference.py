# openai-whisper transcribe (greedy, temperature fallback, one thread) on the converted
# weights: CPU seconds per audio second, median of N runs after a warm-up. benches/whisper.sh.
import sys, time, wave, numpy as np, torch, statistics
torch.set_num_threads(1)
import os
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from safetensors.torch import load_file
import whisper
from whisper.model import Whisper, ModelDimensions
sys.path.insert(0, os.path.join(ROOT, "models"))
from whisper_ct2 import openai_state_dict  # HF/candle names -> openai-whisper's
dims = ModelDimensions(n_mels=80, n_audio_ctx=1500, n_audio_state=384, n_audio_head=6, n_audio_layer=4,
                       n_vocab=51864, n_text_ctx=448, n_text_state=384, n_text_head=6, n_text_layer=4)
m = Whisper(dims); m.load_state_dict(openai_state_dict(load_file(os.path.join(ROOT, "models/whisper-tiny-en.safetensors"))), strict=False); m.eval()
path = sys.argv[1]
with wave.open(path) as w:
    audio = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768.0
secs = audio.size / 16000
whisper.transcribe(m, audio, fp16=False)
runs = []
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
    c = time.process_time(); out = whisper.transcribe(m, audio, fp16=False); runs.append(time.process_time() - c)
print(f"openai-whisper cpu s per audio s: {statistics.median(runs)/secs:.4f} runs {runs}")
print(out["text"][:200])
