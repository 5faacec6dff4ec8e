#!/usr/bin/env bash
# What a realtime session costs when its video shows a person (issue 29's "a realtime session
# with transcription under 0.1 core", issue 26's face cost): `examples/realtime_cost.rs` on a
# two-minute VP8 + Opus call whose picture is a face, as a browser's webcam sends it, and whose
# sound is the real telephone call.
#
# The default input of `realtime_cost` (tests/fixtures/real/sample_vp8_opus.webm) is a 160x120
# test pattern with no face: it measures the words and the voices, while its pictures cost
# little (the detector finds nothing to follow). This script makes the other case, in
# target/bench-media/ (never committed), only if absent:
#
# - face_call_vp8_opus.webm: tests/fixtures/faces/video/webcam_vp8.webm (640x480, 15 fps, a
#   still face, nods and head shakes, as the `/demo` page's camera sends it) looped to 120 s,
#   re-encoded with libvpx's realtime mode at 250 kb/s, a key frame every 2 s; with
#   tests/fixtures/real/sample.wav (30 s) four times as Opus 24 kb/s.
#
# Then runs `realtime_cost` on it once per build given, on one core (`taskset -c $CORE`,
# default 1): `bash benches/realtime_face_call.sh [BINARY...]` (default: the release build of
# the example in target/release; pass a build with `--features attune-media/ffmpeg` beside it
# to compare the bundled VP8 decoder with libavcodec's). Needs ffmpeg with libvpx and libopus.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MEDIA="$ROOT/target/bench-media"
mkdir -p "$MEDIA"
call="$MEDIA/face_call_vp8_opus.webm"
if [[ ! -f "$call" ]]; then
    ffmpeg -nostdin -hide_banner -loglevel error -y \
        -stream_loop 14 -i "$ROOT/tests/fixtures/faces/video/webcam_vp8.webm" \
        -stream_loop 3 -i "$ROOT/tests/fixtures/real/sample.wav" \
        -map 0:v -map 1:a -c:v libvpx -b:v 250k -g 30 -deadline realtime -cpu-used 8 \
        -c:a libopus -b:a 24k -ar 48000 -ac 1 -t 120 "$call"
fi
echo "$call"
if [[ $# -eq 0 ]]; then
    set -- "$ROOT/target/release/examples/realtime_cost"
    if [[ ! -x "$1" ]]; then
        (cd "$ROOT" && cargo build --release --locked --example realtime_cost)
    fi
fi
for bin in "$@"; do
    echo "== $bin"
    taskset -c "${CORE:-1}" "$bin" "$call" 1
done
