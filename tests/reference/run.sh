#!/usr/bin/env bash
# Feature agreement with the reference tools (issue 4, "Feature agreement with
# reference tools"): extracts attune's features from every speech fixture and
# compares them with Praat (parselmouth) and openSMILE (eGeMAPSv02).
#
# Creates a venv under the cargo target directory (reference-venv) on first use and installs the
# reference tools from PyPI into it. Prints a table; exits non-zero when a
# feature is outside its tolerance.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$TARGET/reference-venv"
OUT="$TARGET/reference-out"
FIXTURES="$ROOT/tests/fixtures/speech"

if ! "$VENV/bin/python" -c "import opensmile, parselmouth, numpy" 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check \
        "opensmile==2.6.0" "praat-parselmouth==0.4.7" numpy
fi

source "$ROOT/tests/built.sh" examples/dump_features
mkdir -p "$OUT"
for wav in "$FIXTURES"/*.wav; do
    "$BUILT/examples/dump_features" "$wav" > "$OUT/$(basename "$wav" .wav).json"
done

"$VENV/bin/python" "$ROOT/tests/reference/compare.py" --fixtures "$FIXTURES" --ours "$OUT"
