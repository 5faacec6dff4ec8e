#!/usr/bin/env bash
# Audio decode throughput of attune-media against ffmpeg, single-threaded, on the same three
# 60 s files in the same run: AAC-LC in MP4 (48 kHz stereo, 128 kb/s), Opus in WebM (48 kHz
# stereo, 96 kb/s) and FLAC (44.1 kHz stereo, 16-bit), made from the committed speech fixtures.
#
# attune: `cargo bench -p attune-media --bench decode` (criterion; `decode_audio`, which
# includes the downmix and the resampling to 16 kHz mono), the median time per decode.
# ffmpeg: `ffmpeg -threads 1 -i FILE -f null -` as given, and the same with `-ar 16000 -ac 1`
# (ffmpeg's default swresample to 16 kHz mono, the output attune produces), RUNS runs each,
# the median of the decode loop's real time as ffmpeg's `-benchmark` reports it (`rtime`: process
# start-up and probing excluded, as criterion excludes them for attune).
# Throughput is seconds of media per second; ratio = ffmpeg's throughput / attune's (the goal
# in issue 3 is a ratio of at most 1.5). Needs ffmpeg with libopus, python3 and cargo.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
MEDIA="$TARGET/bench-media"
RUNS="${RUNS:-7}"
mkdir -p "$MEDIA"

SPEECH=(tests/fixtures/speech/{baseline,two_voices,hesitant,rising,stressed,disengaged}.wav)
SOURCE="$MEDIA/speech_60s.wav"
if [ ! -f "$SOURCE" ]; then
    # The six speech fixtures (61.8 s of 16 kHz mono) one after the other, cut at 60 s.
    inputs=()
    for f in "${SPEECH[@]}"; do inputs+=(-i "$f"); done
    ffmpeg -nostdin -v error -y "${inputs[@]}" \
        -filter_complex "concat=n=${#SPEECH[@]}:v=0:a=1,atrim=duration=60" "$SOURCE"
fi
encode() {
    local out="$1"
    shift
    [ -f "$MEDIA/$out" ] || ffmpeg -nostdin -v error -y -i "$SOURCE" -map_metadata -1 "$@" "$MEDIA/$out"
}
encode aac_60s.mp4 -ar 48000 -ac 2 -c:a aac -b:a 128k
encode opus_60s.webm -ar 48000 -ac 2 -c:a libopus -b:a 96k
encode flac_60s.flac -ar 44100 -ac 2 -c:a flac -sample_fmt s16
FILES=(aac_60s.mp4 opus_60s.webm flac_60s.flac)
# Video: 5 s of testsrc2 at 1280x720, 30 fps, a key frame every 2 s: H.264 as libx264 writes it
# by default (High profile, B-frames), VP8 and VP9 as browsers' MediaRecorder would.
vencode() {
    local out="$1"
    shift
    [ -f "$MEDIA/$out" ] || ffmpeg -nostdin -v error -y -f lavfi \
        -i testsrc2=size=1280x720:rate=30:duration=5 -g 60 -pix_fmt yuv420p -threads 1 \
        -map_metadata -1 "$@" "$MEDIA/$out"
}
vencode h264_720p.mp4 -c:v libx264 -preset medium -crf 23
vencode vp8_720p.webm -c:v libvpx -deadline realtime -cpu-used 8 -b:v 2M
vencode vp9_720p.webm -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -b:v 1.5M
VIDEO_FILES=(h264_720p.mp4 vp8_720p.webm vp9_720p.webm)

echo "== attune: cargo bench -p attune-media --bench decode"
export CRITERION_HOME="$MEDIA/criterion"
ATTUNE_BENCH_MEDIA="$MEDIA" cargo bench --locked -p attune-media --bench decode -- "${BENCH_FILTER:-}"

echo "== ffmpeg $(ffmpeg -version | head -n1 | cut -d' ' -f3), $RUNS runs per file and variant"
# median_rtime FILE ARGS...: the median decode-loop real time of RUNS ffmpeg runs, in seconds.
median_rtime() {
    local file="$1"
    shift
    for _ in $(seq "$RUNS"); do
        ffmpeg -nostdin -hide_banner -benchmark -threads 1 -i "$MEDIA/$file" "$@" -f null - 2>&1 |
            sed -n 's/.*rtime=\([0-9.]*\)s.*/\1/p'
    done | sort -g | awk '{ t[NR] = $1 } END { print (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2 }'
}
duration() {
    ffprobe -v error -show_entries format=duration -of csv=p=0 "$MEDIA/$1"
}

printf '\n%-15s %-22s %14s %14s %8s\n' "file" "ffmpeg output" "attune s/s" "ffmpeg s/s" "ratio"
for f in "${FILES[@]}"; do
    est="$CRITERION_HOME/decode_audio/$f/new/estimates.json"
    # Not measured in this run (BENCH_FILTER=decode_video): no row.
    [ -f "$est" ] || continue
    attune_ns="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["median"]["point_estimate"])' "$est")"
    dur="$(duration "$f")"
    for variant in native 16k-mono; do
        if [ "$variant" = native ]; then
            t="$(median_rtime "$f")"
        else
            t="$(median_rtime "$f" -ar 16000 -ac 1)"
        fi
        python3 - "$f" "$variant" "$dur" "$attune_ns" "$t" <<'PY'
import sys
name, variant, dur, attune_ns, ff = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
# Both speeds from the container's duration (criterion's own elem/s counts a nominal 60 s).
attune = dur / (attune_ns / 1e9)
ffmpeg = dur / ff
label = "as decoded" if variant == "native" else "-ar 16000 -ac 1"
print(f"{name:<15} {label:<22} {attune:>14.0f} {ffmpeg:>14.0f} {ffmpeg / attune:>8.2f}")
PY
    done
done
echo
echo "attune: criterion median; ffmpeg: median of $RUNS runs of -benchmark rtime; ratio = ffmpeg / attune"

# Video: ms per frame, attune (criterion median / frames) beside ffmpeg's single-threaded decode
# of the same file (decode-loop rtime / frames).
printf '\n%-15s %16s %16s %16s %8s\n' "file" "attune luma ms" "attune sampled" "ffmpeg ms" "ratio"
for f in "${VIDEO_FILES[@]}"; do
    frames="$(ffprobe -v error -select_streams v -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$MEDIA/$f")"
    luma="$CRITERION_HOME/decode_video/${f}_luma/new/estimates.json"
    sampled="$CRITERION_HOME/decode_video/${f}_sampled/new/estimates.json"
    [ -f "$luma" ] || continue
    t="$(median_rtime "$f")"
    python3 - "$f" "$frames" "$luma" "$sampled" "$t" <<'PY'
import json, sys
name, frames, luma, sampled, ff = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5])
ms = lambda path: json.load(open(path))["median"]["point_estimate"] / 1e6 / frames
a, s, f = ms(luma), ms(sampled), ff * 1e3 / frames
print(f"{name:<15} {a:>16.2f} {s:>16.2f} {f:>16.2f} {a / f:>8.2f}")
PY
done
