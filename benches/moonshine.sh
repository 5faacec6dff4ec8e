#!/usr/bin/env bash
# A candidate recognizer for realtime sessions, measured through its reference implementation
# before any Rust is written for it: Moonshine tiny (Useful Sensors; MIT), quantized ONNX as the
# npm package @moonshine-ai/moonshine-js 0.1.29 ships it, run by the decoding loop of the PyPI
# package useful-moonshine-onnx 20251121 (onnxruntime, one thread, greedy) on the real telephone
# call. Prints the word error rate against sample.stm (Whisper's English normalizer, as
# `transcribe --reference` counts it) and CPU seconds per audio second. Needs python3, curl and
# PyPI; WHISPER_VENV may name a venv holding openai-whisper (for its normalizer).
#     bash benches/moonshine.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${CARGO_TARGET_DIR:-$ROOT/target}/bench-moonshine"
mkdir -p "$OUT"
VENV="${WHISPER_VENV:-$OUT/venv}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check openai-whisper==20250625
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check \
    onnxruntime==1.32.0 tokenizers==0.23.3 jiwer soundfile 'numpy>=1.26,<3'
if [ ! -f "$OUT/package/dist/model/tiny/quantized/encoder_model.onnx" ]; then
    curl -sSfL -o "$OUT/moonshine-js.tgz" \
        https://registry.npmjs.org/@moonshine-ai/moonshine-js/-/moonshine-js-0.1.29.tgz
    tar -xzf "$OUT/moonshine-js.tgz" -C "$OUT"
fi
if [ ! -f "$OUT/moonshine_onnx/assets/tokenizer.json" ]; then
    "$VENV/bin/pip" download --quiet --no-deps -d "$OUT" useful-moonshine-onnx==20251121
    (cd "$OUT" && python3 -m zipfile -e useful_moonshine_onnx-20251121-py3-none-any.whl .)
fi
taskset -c 0 "$VENV/bin/python" benches/moonshine_reference.py "$OUT" \
    tests/fixtures/real/sample.wav tests/fixtures/real/sample.stm
