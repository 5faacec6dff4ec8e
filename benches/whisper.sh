#!/usr/bin/env bash
# Speech recognition beside the reference implementation in the same run: CPU seconds per audio
# second of Attune's Whisper tiny.en (crates/voice, candle, greedy with openai-whisper's
# temperature fallback, 8-bit decoder) and of openai-whisper 20250625 (torch on CPU, the same
# converted weights, greedy with fallback, torch.set_num_threads(1)), each on one core, models
# loaded before timing, on the real telephone call (30 s) and on the synthetic conversations
# joined (6 min). Needs python3 and PyPI (installs torch, about 3 GB, into the bench directory
# unless WHISPER_VENV names a venv holding openai-whisper==20250625 and safetensors).
#     bash benches/whisper.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${CARGO_TARGET_DIR:-$ROOT/target}/bench-whisper"
mkdir -p "$OUT"
cargo build --quiet --release --locked -p attune-voice --example transcribe
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/transcribe"
VENV="${WHISPER_VENV:-$OUT/venv}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check \
        torch==2.9.1 openai-whisper==20250625 safetensors==0.7.0 packaging 'numpy>=1.26,<3'
fi
JOINED="$OUT/conversations.wav"
python3 - "$JOINED" tests/fixtures/conversations/c*.wav <<'PY'
import sys, wave
out = wave.open(sys.argv[1], "wb")
out.setnchannels(1); out.setsampwidth(2); out.setframerate(16000)
for p in sys.argv[2:]:
    with wave.open(p) as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1
        out.writeframes(w.readframes(w.getnframes()))
out.close()
PY
for f in tests/fixtures/real/sample.wav "$JOINED"; do
    echo "== $(basename "$f")"
    for i in 1 2 3; do
        RAYON_NUM_THREADS=1 taskset -c 0 "$BIN" "$f" 2>&1 >/dev/null | sed 's/^/attune:          /'
    done
    taskset -c 0 "$VENV/bin/python" benches/whisper_reference.py "$f" 3 | head -1 | sed 's/^/openai-whisper:  /'
done
