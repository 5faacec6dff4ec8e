#!/usr/bin/env bash
# Makes the face benchmark media in target/bench-media/ (never committed), each only if absent:
#
# - faces_720p30_10min.mp4: 600 s of 1280x720 30 fps H.264 (libx264 defaults: High profile,
#   B-frames, CRF 23, preset medium) with AAC speech. The picture is the face test animation
#   (tests/fixtures/faces/video/astronaut_h264.mp4: nods, shakes, a slide, an occlusion, no
#   face, two faces) scaled to 960x720 on a 1280x720 black canvas, with temporal noise like a
#   webcam sensor's, so that every frame differs (the animation is 10 fps: without the noise
#   two of every three frames would be exact repeats, cheap to decode and skipped as frozen).
#   One 57 s segment is encoded and repeated by stream copy (every repeat starts at an IDR
#   picture); the sound is the six speech fixtures, looped.
# - faces_vp8_opus.webm / faces_vp9_opus.webm: the same picture at 640x480 30 fps (what
#   browsers record by default), VP8 or VP9 (libvpx realtime) + Opus, 57 s, for the stream
#   load (STREAM_LOAD_MEDIA in benches/stream_load.sh).
#
# Needs ffmpeg with libx264, libvpx, libopus. Prints the paths it made or found.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MEDIA="$ROOT/target/bench-media"
mkdir -p "$MEDIA"
SRC="$ROOT/tests/fixtures/faces/video/astronaut_h264.mp4"
FF=(ffmpeg -hide_banner -loglevel error -y)
# The animation three times (57 s), 30 fps, with per-frame sensor-like noise.
picture() { # $1: width, $2: height, $3: scaled width
    echo "fps=30,scale=$3:$2:flags=bicubic,pad=$1:$2:($1-$3)/2:0,noise=alls=5:allf=t"
}

speech="$MEDIA/faces_speech.wav"
if [[ ! -f "$speech" ]]; then
    parts=()
    for f in baseline two_voices hesitant rising stressed disengaged; do
        parts+=(-i "$ROOT/tests/fixtures/speech/$f.wav")
    done
    "${FF[@]}" "${parts[@]}" -filter_complex "concat=n=6:v=0:a=1" -ar 16000 -ac 1 "$speech"
fi

h264="$MEDIA/faces_720p30_10min.mp4"
if [[ ! -f "$h264" ]]; then
    seg="$MEDIA/faces_720p30_segment.mp4"
    "${FF[@]}" -stream_loop 2 -i "$SRC" -vf "$(picture 1280 720 960)" -an \
        -c:v libx264 -crf 23 -preset medium -pix_fmt yuv420p "$seg"
    "${FF[@]}" -stream_loop 10 -i "$seg" -stream_loop -1 -i "$speech" -map 0:v -map 1:a \
        -c:v copy -c:a aac -b:a 64k -ac 1 -t 600 "$h264"
fi
echo "$h264"

for codec in vp8 vp9; do
    webm="$MEDIA/faces_${codec}_opus.webm"
    if [[ ! -f "$webm" ]]; then
        lib=libvpx
        [[ $codec == vp9 ]] && lib=libvpx-vp9
        "${FF[@]}" -stream_loop 2 -i "$SRC" -i "$speech" -map 0:v -map 1:a \
            -vf "$(picture 640 480 640)" -c:v "$lib" -deadline realtime -cpu-used 8 -b:v 1M \
            -g 60 -c:a libopus -b:a 32k -ar 48000 -t 57 "$webm"
    fi
    echo "$webm"
done
