"""Reading a CTranslate2 Whisper model.bin and renaming it to the Hugging Face tensor names
candle's `whisper::model` (and attune-voice's `whisper::model`) load; shared by
convert_whisper.py (tiny.en) and convert_whisper_language.py (base, for language
identification).
"""

import re
import struct

import numpy as np
import torch

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


class Ct2Whisper:
    """The tensors (fp16, by CT2 name) and architecture scalars of a CT2 Whisper model.bin."""

    def __init__(self, data, heads):
        r = Reader(data)
        version = r.unpack("I")
        assert version == 6, f"CTranslate2 binary version {version}, this reader knows 6"
        self.spec, self.revision = r.string(), r.unpack("I")
        assert (self.spec, self.revision) == ("WhisperSpec", 3), (self.spec, self.revision)
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
        self.scalars = {k: int(v) for k, v in ct2.items() if v.ndim == 0}
        expected_scalars = {
            "decoder/activation": 3,            # ActivationType::GELU (erf), as nn.GELU in Whisper
            "decoder/alibi": 0,
            "decoder/alignment_heads": 1,       # defaults; the real heads are in config.json
            "decoder/alignment_layer": -1,
            "decoder/num_heads": heads,
            "decoder/pre_norm": 1,
            "decoder/scale_embeddings": 0,
            "decoder/start_from_zero_embedding": 0,
            "encoder/num_heads": heads,
        }
        # Later CTranslate2 converters also write the ALiBi options, off for Whisper.
        for name in ("decoder/alibi_use_positive_positions", "decoder/scale_alibi"):
            if name in self.scalars:
                expected_scalars[name] = 0
        assert self.scalars == expected_scalars, self.scalars
        self.tensors = {k: v for k, v in ct2.items() if v.ndim > 0}
        assert all(v.dtype == np.float16 for v in self.tensors.values())

        t = self.tensors
        self.heads = heads
        self.d_model = t["decoder/embeddings/weight"].shape[1]
        self.vocab_size = t["decoder/embeddings/weight"].shape[0]
        self.n_mels = t["encoder/conv1/weight"].shape[1]
        self.n_audio_ctx = t["encoder/position_encodings/encodings"].shape[0]
        self.n_text_ctx = t["decoder/position_encodings/encodings"].shape[0]
        self.n_enc, self.n_dec = self._layers("encoder"), self._layers("decoder")
        self.ffn = t["encoder/layer_0/ffn/linear_0/weight"].shape[0]
        print(f"CT2 {self.spec} rev {self.revision}: {len(t)} tensors (fp16), d_model {self.d_model}, "
              f"vocab {self.vocab_size}, mels {self.n_mels}, audio ctx {self.n_audio_ctx}, "
              f"text ctx {self.n_text_ctx}, layers {self.n_enc}+{self.n_dec}, ffn {self.ffn}")

    def _layers(self, side):
        return len({k.split("/")[1] for k in self.tensors if re.match(rf"{side}/layer_\d+/", k)})

    def check_sinusoids(self, sinusoids):
        """The encoder's stored position encodings are Whisper's fixed sinusoids (computed at
        load time by candle and openai-whisper), so they are left out."""
        diff = float(np.abs(self.tensors["encoder/position_encodings/encodings"].astype(np.float32)
                            - sinusoids(self.n_audio_ctx, self.d_model).numpy()).max())
        assert diff < 1e-3, diff
        print(f"encoder position encodings: the sinusoids within {diff:.2e} (fp16); not carried over")

    def hugging_face(self):
        """Every tensor under its Hugging Face name, the fused QKV / KV projections split and the
        all-zero key biases dropped; checks every CT2 tensor was used."""
        tensors, d_model = self.tensors, self.d_model
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
        for i in range(self.n_enc):
            self_attention(f"encoder/layer_{i}/self_attention", f"model.encoder.layers.{i}.self_attn")
            ffn_block(f"encoder/layer_{i}/ffn", f"model.encoder.layers.{i}")
        layer_norm("encoder/layer_norm", "model.encoder.layer_norm")
        take("decoder/embeddings/weight", "model.decoder.embed_tokens.weight")
        take("decoder/position_encodings/encodings", "model.decoder.embed_positions.weight")
        for i in range(self.n_dec):
            self_attention(f"decoder/layer_{i}/self_attention", f"model.decoder.layers.{i}.self_attn")
            cross_attention(f"decoder/layer_{i}/attention", f"model.decoder.layers.{i}.encoder_attn")
            ffn_block(f"decoder/layer_{i}/ffn", f"model.decoder.layers.{i}")
        layer_norm("decoder/layer_norm", "model.decoder.layer_norm")
        assert used == set(tensors), sorted(set(tensors) - used)
        assert set(hf) == candle_names(self.n_enc, self.n_dec), sorted(set(hf) ^ candle_names(self.n_enc, self.n_dec))
        assert all(a.dtype == np.float16 for a in hf.values())
        return hf


def candle_names(n_enc, n_dec):
    """Exactly the tensors candle-transformers 0.11.1 whisper::model::Whisper::load asks for."""
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


def place_language_rows(sd, rows, n_vocab, n_text_ctx):
    """An openai-whisper state dict of the language-identification file (its token embedding
    trimmed to `rows`, its positions to position 0) made full size: each kept row back at its
    token id, the rest zeros (`detect_language` never reads them)."""
    embed = sd.pop("decoder.token_embedding.weight")
    full = torch.zeros(n_vocab, embed.shape[1])
    full[rows] = embed
    first = sd.pop("decoder.positional_embedding")
    positions = torch.zeros(n_text_ctx, first.shape[1])
    positions[:1] = first
    sd["decoder.token_embedding.weight"], sd["decoder.positional_embedding"] = full, positions
    return sd


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
