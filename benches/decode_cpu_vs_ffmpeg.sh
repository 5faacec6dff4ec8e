#!/usr/bin/env bash
# Issue 26, item 3: each pixel decoder against ffmpeg's on the same files, CPU seconds per frame,
# one thread, in one run (runs alternate, so both see the same load on a shared machine).
#
# ffmpeg: `ffmpeg -benchmark -threads 1 -i FILE -map 0:v:0 -f null -`, its `utime` + `stime`
# (the whole process: probing and demuxing included, a few milliseconds).
# attune: the `decode_cpu` example (crates/media/examples/decode_cpu.rs), the CPU time of the
# decode loop alone, in two modes: `all` (every frame decoded, each shrunk to a 16 px thumbnail)
# and `decode` (what the analysis decodes: H.264 pictures nothing predicts from are not decoded).
# Two builds: the bundled decoders (OpenH264, oximedia-codec, rusty_vp9; the default) and the
# `ffmpeg` feature (libavcodec). Median of RUNS runs (default 3) of each.
#
# Files: the 5 s 720p testsrc2 files of benches/decode_vs_ffmpeg.sh (H.264 High with B-frames,
# VP8 and VP9 realtime), and the face benchmark media of benches/faces_media.sh (57 s of the face
# animation: 720p H.264, 640x480 VP8 and VP9). Needs ffmpeg (libx264, libvpx), libavcodec-dev,
# libavformat-dev, libavutil-dev, pkg-config and libclang-dev for the `ffmpeg` build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
MEDIA="$TARGET/bench-media"
RUNS="${RUNS:-3}"
mkdir -p "$MEDIA"
vencode() {
    [ -f "$MEDIA/$1" ] || ffmpeg -nostdin -v error -y -f lavfi \
        -i testsrc2=size=1280x720:rate=30:duration=5 -g 60 -pix_fmt yuv420p -threads 1 \
        -map_metadata -1 "${@:2}" "$MEDIA/$1"
}
vencode h264_720p.mp4 -c:v libx264 -preset medium -crf 23
vencode vp8_720p.webm -c:v libvpx -deadline realtime -cpu-used 8 -b:v 2M
vencode vp9_720p.webm -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -b:v 1.5M
bash benches/faces_media.sh >/dev/null
FACES="$ROOT/target/bench-media"
FILES=("$MEDIA/h264_720p.mp4" "$MEDIA/vp8_720p.webm" "$MEDIA/vp9_720p.webm"
    "$FACES/faces_720p30_segment.mp4" "$FACES/faces_vp8_opus.webm" "$FACES/faces_vp9_opus.webm")

BUNDLED="$TARGET/decode_cpu_bundled"
FFMPEG_BUILD="$TARGET/decode_cpu_ffmpeg"
cargo build --release --locked -p attune-media --example decode_cpu
cp "$TARGET/release/examples/decode_cpu" "$BUNDLED"
cargo build --release --locked -p attune-media --features ffmpeg --example decode_cpu
cp "$TARGET/release/examples/decode_cpu" "$FFMPEG_BUILD"

median() { sort -g | awk '{ t[NR] = $1 } END { print (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2 }'; }
frames() { ffprobe -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets -of csv=p=0 "$1"; }
ffmpeg_cpu() { # CPU seconds of ffmpeg's decode of every frame of $1
    ffmpeg -nostdin -hide_banner -benchmark -threads 1 -i "$1" -map 0:v:0 -f null - 2>&1 |
        sed -n 's/.*utime=\([0-9.]*\)s stime=\([0-9.]*\)s.*/\1 \2/p' | awk '{ print $1 + $2 }'
}
ours_cpu() { # $1 binary, $2 file, $3 mode: CPU seconds of the decode loop
    "$1" "$2" "$3" 1 | sed -n 's/.*: \([0-9.]*\) s CPU.*/\1/p'
}

printf '%-28s %6s | %9s | %9s %9s | %9s %9s | %s\n' file frames "ffmpeg" "bundled" "decode" \
    "ffmpeg-ft" "decode" "ms per frame; load"
for f in "${FILES[@]}"; do
    n=$(frames "$f")
    declare -A t=()
    for _ in $(seq "$RUNS"); do
        t[ff]+="$(ffmpeg_cpu "$f") "
        t[ba]+="$(ours_cpu "$BUNDLED" "$f" all) "
        t[bd]+="$(ours_cpu "$BUNDLED" "$f" decode) "
        t[fa]+="$(ours_cpu "$FFMPEG_BUILD" "$f" all) "
        t[fd]+="$(ours_cpu "$FFMPEG_BUILD" "$f" decode) "
    done
    ms() { echo "${t[$1]}" | tr ' ' '\n' | grep . | median | awk -v n="$n" '{ printf "%.2f", 1000 * $1 / n }'; }
    printf '%-28s %6s | %9s | %9s %9s | %9s %9s | %s\n' "$(basename "$f")" "$n" "$(ms ff)" \
        "$(ms ba)" "$(ms bd)" "$(ms fa)" "$(ms fd)" "$(cut -d' ' -f1-3 /proc/loadavg)"
done
