#!/usr/bin/env bash
# Full audio analysis (decode + all features + windows + signals) of a
# 10-minute speech file against openSMILE's eGeMAPS low-level extraction of
# the same audio, in the same run. Prints wall and CPU seconds and the
# realtime factors. Needs the reference venv (tests/reference/run.sh makes it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/target/reference-venv"
MEDIA="$ROOT/target/bench-media"
mkdir -p "$MEDIA"
WAV="$MEDIA/speech_10min.wav"
if [ ! -f "$WAV" ]; then
    # The six speech fixtures, ten times over: 618 s of 16 kHz mono speech.
    python3 - "$WAV" tests/fixtures/speech/{baseline,two_voices,hesitant,rising,stressed,disengaged}.wav <<'PY'
import sys, wave
out, parts = sys.argv[1], sys.argv[2:]
frames = []
for p in parts:
    with wave.open(p) as w:
        params = w.getparams()
        frames.append(w.readframes(w.getnframes()))
with wave.open(out, "wb") as w:
    w.setparams(params)
    for _ in range(10):
        for f in frames:
            w.writeframes(f)
PY
fi
if ! "$VENV/bin/python" -c "import opensmile, soundfile" 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "opensmile==2.6.0" "praat-parselmouth==0.4.7" numpy soundfile
fi
cargo build --quiet --release --locked --example analyze_file
DUR=$(python3 -c "import wave,sys; w=wave.open(sys.argv[1]); print(w.getnframes()/w.getframerate())" "$WAV")
echo "audio: $DUR s"
# BEFORE_BIN=path/to/an/older/analyze_file times that build too, alternating
# with this one, so a change is measured before and after in one run.
for i in 1 2 3; do
    if [ -n "${BEFORE_BIN:-}" ]; then
        /usr/bin/time -f "before (BEFORE_BIN) full analysis (inter-2-audio): %e s wall, %U s user" \
            "$BEFORE_BIN" "$WAV" inter-2-audio > /dev/null
    fi
    /usr/bin/time -f "attune full analysis (inter-2-audio): %e s wall, %U s user" \
        "${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/analyze_file" "$WAV" inter-2-audio > /dev/null
done
for i in 1 2; do
"$VENV/bin/python" - "$WAV" <<'PY'
import sys, time, opensmile, soundfile as sf
y, sr = sf.read(sys.argv[1], dtype="float32")
smile = opensmile.Smile(feature_set=opensmile.FeatureSet.eGeMAPSv02,
                        feature_level=opensmile.FeatureLevel.LowLevelDescriptors)
w, c = time.time(), time.process_time()
smile.process_signal(y, sr)
print(f"openSMILE eGeMAPS LLD: {time.time()-w:.2f} s wall, {time.process_time()-c:.2f} s cpu")
PY
done
