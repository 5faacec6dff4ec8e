#!/usr/bin/env bash
# Feature agreement with the reference tools (issue 4, "Feature agreement with
# reference tools"): extracts attune's features from every speech fixture and
# compares them with Praat (parselmouth) and openSMILE (eGeMAPSv02).
#
# Creates a venv under target/reference-venv on first use and installs the
# reference tools from PyPI into it. Prints a table; exits non-zero when a
# feature is outside its tolerance.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
VENV="$ROOT/target/reference-venv"
OUT="$ROOT/target/reference-out"
FIXTURES="$ROOT/tests/fixtures/speech"

if ! "$VENV/bin/python" -c "import opensmile, parselmouth, numpy" 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check \
        "opensmile==2.6.0" "praat-parselmouth==0.4.7" numpy
fi

source "$ROOT/tests/built.sh"
mkdir -p "$OUT"
for wav in "$FIXTURES"/*.wav; do
    "$BUILT/examples/dump_features" "$wav" > "$OUT/$(basename "$wav" .wav).json"
done

"$VENV/bin/python" "$ROOT/tests/reference/compare.py" --fixtures "$FIXTURES" --ours "$OUT"
