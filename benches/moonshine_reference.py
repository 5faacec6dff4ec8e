"""Moonshine tiny (quantized ONNX from npm @moonshine-ai/moonshine-js) on the real call, through
the decoding loop of useful-moonshine-onnx's `MoonshineOnnxModel.generate` (onnxruntime, one
thread, greedy, at most 6.5 tokens per second of audio as its callers cap it). Called by
benches/moonshine.sh: python moonshine_reference.py BENCH_DIR CALL.wav CALL.stm"""
import sys
import time

import jiwer
import numpy as np
import onnxruntime as ort
import soundfile as sf
import tokenizers
from whisper.normalizers import EnglishTextNormalizer

out, wav_path, stm_path = sys.argv[1:4]
models = f"{out}/package/dist/model/tiny/quantized"
opts = ort.SessionOptions()
opts.intra_op_num_threads = 1
opts.inter_op_num_threads = 1
encoder = ort.InferenceSession(f"{models}/encoder_model.onnx", opts)
decoder = ort.InferenceSession(f"{models}/decoder_model_merged.onnx", opts)
tokenizer = tokenizers.Tokenizer.from_file(f"{out}/moonshine_onnx/assets/tokenizer.json")
LAYERS, HEADS, HEAD_DIM, START, END = 6, 8, 36, 1, 2


def generate(audio):
    hidden = encoder.run(None, {"input_values": audio[None, :].astype(np.float32)})[0]
    past = {
        f"past_key_values.{i}.{a}.{b}": np.zeros((0, HEADS, 1, HEAD_DIM), np.float32)
        for i in range(LAYERS)
        for a in ("decoder", "encoder")
        for b in ("key", "value")
    }
    tokens, ids = [START], [[START]]
    for step in range(int(len(audio) / 16000 * 6.5) + 4):
        logits, *present = decoder.run(
            None,
            dict(
                input_ids=np.array(ids, np.int64),
                encoder_hidden_states=hidden,
                use_cache_branch=np.array([step > 0]),
                **past,
            ),
        )
        token = int(logits[0, -1].argmax())
        tokens.append(token)
        if token == END:
            break
        ids = [[token]]
        for key, value in zip(list(past), present):
            if step == 0 or "decoder" in key:
                past[key] = value
    return tokenizer.decode(tokens, skip_special_tokens=True)


wav, rate = sf.read(wav_path, dtype="float32")
assert rate == 16000
if wav.ndim > 1:
    wav = wav.mean(1)
lines = [line.split(None, 5) for line in open(stm_path) if line.strip()]
segments = [(float(s[3]), float(s[4]), s[5].strip()) for s in lines]
reference = " ".join(text for _, _, text in segments)
normalize = EnglishTextNormalizer()
generate(wav[: 5 * 16000])  # warm-up

# Pieces cut where the reference has a pause over 0.3 s (at most 15 s, 0.2 s margins): the
# kindest cut a voice detector could make. Then fixed 10 s pieces, as a stream with no pauses.
pieces = []
for start, end, _ in segments:
    if pieces and start - pieces[-1][1] <= 0.3 and end - pieces[-1][0] <= 15:
        pieces[-1][1] = max(pieces[-1][1], end)
    else:
        pieces.append([start, end])
cuts = {
    "at the reference's pauses": [(max(0, a - 0.2), b + 0.2) for a, b in pieces],
    "fixed 10 s": [(a, a + 10) for a in range(0, int(len(wav) / 16000), 10)],
}
for name, spans in cuts.items():
    cpu = time.process_time()
    text = " ".join(generate(wav[int(a * 16000) : int(b * 16000)]) for a, b in spans)
    cpu = time.process_time() - cpu
    error = jiwer.wer(normalize(reference), normalize(text))
    print(
        f"moonshine tiny, {name} ({len(spans)} pieces): WER {100 * error:.1f} %, "
        f"{cpu / (len(wav) / 16000):.4f} CPU s per audio s"
    )
