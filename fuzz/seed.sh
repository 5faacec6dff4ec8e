#!/usr/bin/env bash
# Seeds fuzz/corpus/<target>/ from the committed fixtures (tests/fixtures). The corpora are not
# committed: run this once before fuzzing; what the fuzzer adds stays local.
#
# Each demuxer target gets the fixtures of its container, whole and as a 16 KiB prefix (a cut
# file reaches the parsers' truncation paths, and short inputs fuzz faster); `decode` gets
# every fixture; `live` gets the streamable fixtures behind the 5-byte header that fuzz_targets/live.rs
# reads (mode, limits, frame-size scale, seed).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FIX="$HERE/../tests/fixtures"
CORPUS="$HERE/corpus"

# put TARGET FILE...: copies each FILE whole and as its first 16 KiB.
put() {
    local target="$1"
    shift
    mkdir -p "$CORPUS/$target"
    local f base
    for f in "$@"; do
        [ -f "$f" ] || continue
        base="$(basename "$f")"
        cp "$f" "$CORPUS/$target/$base"
        if [ "$(stat -c %s "$f")" -gt 16384 ]; then
            head -c 16384 "$f" > "$CORPUS/$target/$base.16k"
        fi
    done
}

# live HEADER FILE...: FILE behind the live target's header, given as printf escapes.
live() {
    local header="$1"
    shift
    mkdir -p "$CORPUS/live"
    local f
    for f in "$@"; do
        [ -f "$f" ] || continue
        { printf "$header"; cat "$f"; } > "$CORPUS/live/$(basename "$f").$(printf '%s' "$header" | tr -dc '0-9a-fx')"
    done
}

put mp4 "$FIX"/*.mp4 "$FIX"/*.mov "$FIX"/*.m4a
# The fixtures keep moov after mdat, so their prefixes hold no moov; with ffmpeg at hand, add
# moov-first copies whose prefixes keep the whole box tree and point past their end.
if command -v ffmpeg > /dev/null; then
    tmp="$(mktemp -d)"
    for f in "$FIX"/mp4_h264_aac_editlist.mp4 "$FIX"/mp4_h264_opus.mp4 "$FIX"/mov_h264_aac.mov \
        "$FIX"/m4a_alac.m4a "$FIX"/mov_mjpeg_pcm_s16le.mov; do
        ext="${f##*.}"
        out="$tmp/faststart_$(basename "$f" ".$ext").$ext"
        ffmpeg -v error -y -i "$f" -c copy -map 0 -movflags +faststart "$out" || continue
        put mp4 "$out"
    done
    rm -rf "$tmp"
fi
put mkv "$FIX"/*.mkv "$FIX"/*.webm "$FIX"/segments/*.webm
put avi "$FIX"/*.avi
put ts "$FIX"/*.ts
put wav "$FIX"/*.wav
put flac "$FIX"/*.flac
put mp3 "$FIX"/*.mp3
put ogg "$FIX"/*.ogg
# Elementary streams as the TS and AVI readers meet them: ADTS, MPEG audio, Annex B video.
put elementary "$FIX"/*.ts "$FIX"/*.mp3 "$FIX"/*.avi
put decode "$FIX"/*.mp4 "$FIX"/*.mov "$FIX"/*.m4a "$FIX"/*.mkv "$FIX"/*.webm "$FIX"/*.avi \
    "$FIX"/*.ts "$FIX"/*.wav "$FIX"/*.flac "$FIX"/*.mp3 "$FIX"/*.ogg "$FIX"/random.bin "$FIX"/text.txt

# Header byte 0: bits 0-2 mode (0 auto, 1 segments, 2 continuous, 3 PCM 16 kHz, 4 PCM 24 kHz),
# bit 3 needs video, bit 4 small limits, bits 5-7 frame-size scale (0 ~1 B, 1 ~4, 2 ~32,
# 3 ~256, 4 ~2 KiB, 5 whole input, 6-7 ~32 KiB); bytes 1-4 seed the frame sizes.
STREAMS=("$FIX"/*.webm "$FIX"/*.mkv "$FIX"/mp4frag_h264_aac.mp4 "$FIX"/*.ts "$FIX"/segments/continuous.webm)
live '\x82\x2a\x00\x00\x00' "${STREAMS[@]}"       # continuous, ~2 KiB frames
live '\x48\x07\x00\x00\x00' "${STREAMS[@]}"       # auto, needs video, ~32 B frames
live '\x92\x05\x00\x00\x00' "${STREAMS[@]}"       # continuous, small limits, ~2 KiB frames
live '\xa1\x01\x00\x00\x00' "$FIX"/segments/seg*.webm "$FIX"/short_2s.mp4 "$FIX"/mp4_h264_aac.mp4
live '\xa0\x01\x00\x00\x00' "$FIX"/wav_pcm_s16le.wav "$FIX"/ogg_opus.ogg "$FIX"/mp3_mp3.mp3 "$FIX"/random.bin
live '\x63\x09\x00\x00\x00' "$FIX"/speech_16k_s16le.pcm
live '\x04\x09\x00\x00\x00' "$FIX"/speech_24k_s16le.pcm
# Segments glued into one input, as a client that sends several files back to back.
{ printf '\xa0\x03\x00\x00\x00'; cat "$FIX"/segments/seg0.webm "$FIX"/segments/seg1.webm; } \
    > "$CORPUS/live/seg0+seg1.webm"

for d in "$CORPUS"/*/; do
    printf '%-12s %4d files\n' "$(basename "$d")" "$(find "$d" -type f | wc -l)"
done
