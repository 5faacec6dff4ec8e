# openai-whisper transcribe (greedy, temperature fallback, one thread) on the converted
# weights: CPU seconds per audio second, median of N runs after a warm-up. benches/whisper.sh.
import sys, time, wave, numpy as np, torch, statistics
torch.set_num_threads(1)
import os
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from safetensors.torch import load_file
import whisper
from whisper.model import Whisper, ModelDimensions
def openai_state_dict(hf):
    sd = {}
    for name, t in hf.items():
        n = name.removeprefix("model.")
        for a, b in ((".layers.", ".blocks."), ("self_attn_layer_norm", "attn_ln"),
                     ("encoder_attn_layer_norm", "cross_attn_ln"), ("final_layer_norm", "mlp_ln"),
                     (".self_attn.", ".attn."), (".encoder_attn.", ".cross_attn."),
                     ("q_proj", "query"), ("k_proj", "key"), ("v_proj", "value"), ("out_proj", "out"),
                     (".fc1.", ".mlp.0."), (".fc2.", ".mlp.2."),
                     ("decoder.embed_tokens.weight", "decoder.token_embedding.weight"),
                     ("decoder.embed_positions.weight", "decoder.positional_embedding"),
                     ("encoder.layer_norm.", "encoder.ln_post."), ("decoder.layer_norm.", "decoder.ln.")):
            n = n.replace(a, b)
        sd[n] = t.float()
    return sd
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
