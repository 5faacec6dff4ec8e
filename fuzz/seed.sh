#!/usr/bin/env bash
# Seeds fuzz/seeds/<target>/ from the committed fixtures (tests/fixtures) and hand-written
# requests. The seeds are not committed (whole fixtures, megabytes); fuzz/campaign.sh runs this
# and fuzzes from them plus the small committed corpus fuzz/corpus/<target>/, which it then
# minimises back. Needs cargo (the video seeds come from a workspace test, see below).
#
# Each demuxer target gets the fixtures of its container, whole and as a 16 KiB prefix (a cut
# file reaches the parsers' truncation paths, and short inputs fuzz faster); `decode` gets
# every fixture; `live` gets the streamable fixtures behind the 5-byte header that fuzz_targets/live.rs
# reads (mode, limits, frame-size scale, seed).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FIX="$HERE/../tests/fixtures"
CORPUS="$HERE/seeds"

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

# The pixel decoders' seeds: each video fixture's encoded frames in the layout of
# attune_media::fuzzing::luma, written by an ignored test of crates/media/tests/fuzz_corpus.rs.
# `--workspace`, as the README's test command: a `-p` selection resolves features differently
# and rebuilds the dependency tree (tests/built.sh).
(cd "$HERE/.." && ATTUNE_FUZZ_SEED_DIR="$CORPUS" \
    cargo test -q --workspace --locked --test fuzz_corpus write_luma_seeds -- --ignored > /dev/null)

# Server parsers. upload_form: flags byte (bit 0 v2; bits 1-5 scopes; bits 6-7 chunking), the
# Content-Type value, `\n`, the body (see attune_server::fuzzing::upload_form).
form() {
    local name="$1" flags="$2"
    shift 2
    mkdir -p "$CORPUS/upload_form"
    {
        printf "$flags"
        printf 'multipart/form-data; boundary=XyZ\n'
        local part
        for part in "$@"; do
            printf -- '--XyZ\r\n%s\r\n' "$part"
        done
        printf -- '--XyZ--\r\n'
    } > "$CORPUS/upload_form/$name"
}
file_part='Content-Disposition: form-data; name="file"; filename="a.wav"
Content-Type: audio/wav

RIFF$\0\0\0WAVEfmt '
form v2_model_file '\xff' $'Content-Disposition: form-data; name="model"\r\n\r\ninter-2' "$file_part"
form v2_audio_wait '\x3f' $'Content-Disposition: form-data; name="model"\r\n\r\ninter-2-audio' \
    $'Content-Disposition: form-data; name="wait_seconds"\r\n\r\n30' \
    $'Content-Disposition: form-data; name="include[]"\r\n\r\nsignals' "$file_part"
form v2_deep '\x81' $'Content-Disposition: form-data; name="model"\r\n\r\ninter-2-deep' "$file_part"
form v1_all '\x7e' $'Content-Disposition: form-data; name="include[]"\r\n\r\nconversation_quality_overall' \
    $'Content-Disposition: form-data; name="goal_dimensions[]"\r\n\r\nrapport' \
    $'Content-Disposition: form-data; name="conversation_context"\r\n\r\nA sales call.' "$file_part"
form v1_two_files '\x40' "$file_part" "$file_part"
form v1_no_file '\xc0' $'Content-Disposition: form-data; name="other"\r\n\r\nx'

# handshake: the request target, then `name: value` header lines.
mkdir -p "$CORPUS/handshake"
printf '/v2/stream/analyze?model=inter-2-audio&ih_sdk=python&ih_sdk_version=2.1.0\nauthorization: Bearer att_abc\nx-service-sdk: python/2.1.0' \
    > "$CORPUS/handshake/v2_bearer"
printf '/v1/stream/analyze?sdk=js&sdk_version=1.0\nsec-websocket-protocol: access_token, atk_xyz' \
    > "$CORPUS/handshake/v1_subprotocol"
printf '/v0/realtime/analyze?model=inter-2-deep&x=%%zz&y=a+b\nauthorization: basic abc\nx-interhuman-sdk: web/3' \
    > "$CORPUS/handshake/realtime_basic"

# client_frame: byte 0 the endpoint (0 v1, 1 v2, 2 realtime) and model (bit 2), then frames
# separated by 0xff (text when UTF-8, binary otherwise).
mkdir -p "$CORPUS/client_frame"
printf '\x01{"include": ["conversation_quality_timeline"], "model": "inter-2-audio"}\xff\x1a\x45\xdf\xa3\xff{"type": "session.close"}' \
    > "$CORPUS/client_frame/v2_config_media_close"
printf '\x00{"audio_format": {"encoding": "pcm_s16le", "sample_rate": 16000, "channels": 1}}\xff\x00\x01\x02\x83\xff{"include": null}\xff{"type": "session.close", "x": 1}' \
    > "$CORPUS/client_frame/v1_pcm"
printf '\x02{"realtime_recommendation_instructions": "Be brief.", "realtime_recommendation_frequency": "high"}\xff{"type": "transcript.updated", "segments": []}\xff{"analysis_groups": null}\xff[1,2]' \
    > "$CORPUS/client_frame/realtime"

for d in "$CORPUS"/*/; do
    printf '%-12s %4d files\n' "$(basename "$d")" "$(find "$d" -type f | wc -l)"
done
