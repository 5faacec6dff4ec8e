#!/usr/bin/env bash
# Soak: `attune serve` (release build, SQLite store) under SESSIONS WebSocket sessions plus a
# steady upload load for SOAK_MINUTES minutes (issue 16, item 6). Reports, per slice of
# SLICE_SECONDS (5 minutes): chunk-to-event latency percentiles, the server's resident memory,
# its open file descriptors and its CPU, errors and `coverage.dropped` events; then the RSS
# growth after the first 10 minutes, the descriptor growth, and how the uploads were answered.
#
# Streams: crates/server/examples/stream_load.rs in soak mode: each of SESSIONS slots streams a
# real recording (VP9+Opus WebM) at real-time pace in one-second chunks, closes its session after
# SESSION_SECONDS and opens a new one, so sessions churn as real ones do. The sessions are v2 on
# SOAK_MODEL (inter-2-audio: the Opus is decoded and analyzed, the VP9 demuxed and not decoded);
# SOAK_MODEL=inter-2 reads faces in the pictures too, which two cores hold for 6 VP9 sessions,
# not 200 (BENCHMARKS.md, issue 14).
# SOAK_STAGGER=1 (the default) spreads the sessions' ends from the start (stream_load --stagger:
# slot i's first session lasts (i+1)/SESSIONS of SESSION_SECONDS), so one session ends and
# another opens every SESSION_SECONDS/SESSIONS seconds, as in a population of sessions that did
# not all start together; SOAK_STAGGER=0 starts them within 20 s and every generation of
# SESSIONS sessions then ends and reopens within those 20 s (the 2026-11-27 run).
# Uploads: one v2 upload (`inter-2-audio`, a 10 s two-voice speech WAV, wait_seconds 0) every
# UPLOAD_EVERY seconds, each followed to its end by polling.
#
# Needs: cargo, curl. Usage: benches/soak.sh
# Environment: SOAK_MINUTES (60), SESSIONS (200), SESSION_SECONDS (600), SLICE_SECONDS (300),
# UPLOAD_EVERY (5), SOAK_MODEL (inter-2-audio), SOAK_STAGGER (1).
# The server and the load generator share the machine's cores.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
source benches/lib.sh

SOAK_MINUTES=${SOAK_MINUTES:-60}
SESSIONS=${SESSIONS:-200}
SESSION_SECONDS=${SESSION_SECONDS:-600}
SLICE_SECONDS=${SLICE_SECONDS:-300}
UPLOAD_EVERY=${UPLOAD_EVERY:-5}
SOAK_MODEL=${SOAK_MODEL:-inter-2-audio}
SOAK_STAGGER=${SOAK_STAGGER:-1}
stagger=()
[[ "$SOAK_STAGGER" == 1 ]] && stagger=(--stagger)
seconds=$((SOAK_MINUTES * 60))

cargo build --release --locked -p attune-server --bin attune --example stream_load
target="${CARGO_TARGET_DIR:-target}/release"
attune="$target/attune"
load="$target/examples/stream_load"

work=$(mktemp -d)
server_pid=
uploader_pid=
cleanup() {
    [[ -n "$uploader_pid" ]] && kill "$uploader_pid" 2>/dev/null || true
    bench_stop "$server_pid" KILL
    rm -rf "$work"
}
trap cleanup EXIT

bench_clean_env
export ATTUNE_STORE_PATH="$work/attune.sqlite3"
key=$(bench_key soak "service.stream,service.stream.$SOAK_MODEL,service.upload,service.upload.inter-2-audio")
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

bench_serve "$work/server.log"
addr=$server_addr
base="http://$addr"

echo "== machine"
echo "cpus: $(nproc), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== soak: $SESSIONS $SOAK_MODEL sessions ($SESSION_SECONDS s each, back to back, staggered: $SOAK_STAGGER) + one upload every $UPLOAD_EVERY s, $SOAK_MINUTES min"

# The upload load: submit, then follow each job to its end (in the background, so the pace holds).
upload_file=tests/fixtures/speech/two_voices.wav
uploads() {
    local end=$((SECONDS + seconds))
    while ((SECONDS < end)); do
        (
            answer=$(curl -s -w ' %{http_code}' -H "Authorization: Bearer $key" \
                -F model=inter-2-audio -F wait_seconds=0 -F "file=@$upload_file" \
                "$base/v2/upload/analyze")
            code=${answer##* }
            id=$(echo "$answer" | sed -n 's/.*"job_id":"\([0-9a-f]*\)".*/\1/p')
            status=none
            if [[ -n "$id" ]]; then
                for _ in $(seq 1 600); do
                    status=$(curl -s -H "Authorization: Bearer $key" "$base/v2/upload/jobs/$id" |
                        sed -n 's/.*"status":"\([a-z]*\)".*/\1/p')
                    [[ "$status" == completed || "$status" == failed ]] && break
                    sleep 1
                done
            fi
            echo "$code $status" >>"$work/uploads.txt"
        ) &
        sleep "$UPLOAD_EVERY"
    done
    wait
}
uploads &
uploader_pid=$!

echo "+ stream_load --url ws://$addr --key <key> --sessions $SESSIONS --seconds $seconds --ramp 20 \\"
echo "      --session-seconds $SESSION_SECONDS ${stagger[*]} --slice $SLICE_SECONDS --model $SOAK_MODEL --server-pid <pid>"
"$load" --url "ws://$addr" --key "$key" --sessions "$SESSIONS" --seconds "$seconds" --ramp 20 \
    --session-seconds "$SESSION_SECONDS" "${stagger[@]}" --slice "$SLICE_SECONDS" --model "$SOAK_MODEL" \
    --server-pid "$server_pid" |
    tee "$work/load.txt"
wait "$uploader_pid" 2>/dev/null || true
uploader_pid=

echo
echo "== uploads (HTTP status at submit, job status at the end)"
sort "$work/uploads.txt" | uniq -c

echo
echo "== growth"
# Slice lines: index minute samples p50 p99 max rss fds cpu errors dropped ready
awk -v slice="$SLICE_SECONDS" '
    $1 ~ /^[0-9]+$/ && NF == 12 {
        if ($2 >= 10 && base_rss == "") { base_rss = $7; base_fds = $8; base_min = $2 }
        last_rss = $7; last_fds = $8; last_min = $2
        if ($5 > worst_p99) worst_p99 = $5
        n++
    }
    END {
        if (base_rss == "") { print "too short to measure growth after minute 10"; exit }
        printf "RSS: %.1f MiB at minute %.0f, %.1f MiB at minute %.0f: %+.1f%%\n", base_rss, base_min, last_rss, last_min, (last_rss - base_rss) * 100 / base_rss
        printf "open descriptors: %d at minute %.0f, %d at minute %.0f\n", base_fds, base_min, last_fds, last_min
        printf "worst slice p99: %.1f ms over %d slices\n", worst_p99, n
    }' "$work/load.txt"
