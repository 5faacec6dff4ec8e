#!/usr/bin/env bash
# Stream load: `attune serve` (release build) holding N concurrent WebSocket sessions on
# loopback, each streaming a real recording (continuous VP9+Opus WebM, looped) at real-time
# pace in one-second chunks; reports sessions held, chunk-to-event latency percentiles, and the
# server's CPU and resident memory (see crates/server/examples/stream_load.rs).
#
# Needs: cargo. Usage: benches/stream_load.sh [N ...]   (default: 50 200 500)
# Environment: SECONDS_PER_SESSION (default 60), RAMP (seconds to open all sessions, default 20),
# ATTUNE_BIN and STREAM_LOAD_BIN (binaries to run instead of building them), STREAM_LOAD_MEDIA
# (the WebM each session loops instead of tests/fixtures/segments/continuous.webm; e.g. the face
# videos benches/faces_media.sh makes), STREAM_LOAD_MODEL (stream on /v2/stream/analyze with this
# model, e.g. inter-2-audio for audio sessions; unset: v1 with the default model).
#
# The server and the load generator share the machine's cores.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
source benches/lib.sh

SECONDS_PER_SESSION=${SECONDS_PER_SESSION:-60}
RAMP=${RAMP:-20}
counts=("$@")
[[ ${#counts[@]} -gt 0 ]] || counts=(50 200 500)

target="${CARGO_TARGET_DIR:-target}/release"
if [[ -z "${ATTUNE_BIN:-}" || -z "${STREAM_LOAD_BIN:-}" ]]; then
    cargo build --release --locked -p attune-server --bin attune --example stream_load
fi
# ATTUNE_BIN / STREAM_LOAD_BIN run given builds instead (say, a saved build
# from before a change, to compare in one run).
attune="${ATTUNE_BIN:-$target/attune}"
load="${STREAM_LOAD_BIN:-$target/examples/stream_load}"

work=$(mktemp -d)
server_pid=
cleanup() {
    bench_stop "$server_pid" KILL
    rm -rf "$work"
}
trap cleanup EXIT

bench_clean_env
export ATTUNE_STORE_PATH="$work/attune.sqlite3"
# 500 handshakes in a few seconds would pass the default 600 requests a minute.
key=$(bench_key load service.stream,service.stream.inter-2,service.stream.inter-2-audio)
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

echo "== machine"
echo "cpus: $(nproc), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"

for n in "${counts[@]}"; do
    bench_serve "$work/server.log"
    addr=$server_addr
    echo
    echo "== $n sessions"
    echo "+ stream_load --url ws://$addr --key <key> --sessions $n --seconds $SECONDS_PER_SESSION --ramp $RAMP --server-pid <pid>${STREAM_LOAD_MEDIA:+ --file $STREAM_LOAD_MEDIA}${STREAM_LOAD_MODEL:+ --model $STREAM_LOAD_MODEL}"
    # The load generator's own CPU, beside the server's (it shares the cores).
    /usr/bin/time -f "load generator CPU %U s user + %S s sys over %e s wall" \
        "$load" --url "ws://$addr" --key "$key" --sessions "$n" --seconds "$SECONDS_PER_SESSION" \
        --ramp "$RAMP" --server-pid "$server_pid" ${STREAM_LOAD_MEDIA:+--file "$STREAM_LOAD_MEDIA"} \
        ${STREAM_LOAD_MODEL:+--model "$STREAM_LOAD_MODEL"}
    bench_stop "$server_pid" KILL
    server_pid=
done
