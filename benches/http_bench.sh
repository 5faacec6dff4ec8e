#!/usr/bin/env bash
# HTTP benchmarks of `attune serve` (release build) on this machine:
#   1. `GET /v2/upload/jobs/{job_id}` of a completed job under wrk: requests/s
#      and latency percentiles;
#   2. the time to accept a 32 MB upload: a maximal-size valid WAV answered
#      202 (`wait_seconds` 0), the same size of non-media refused 422 at
#      validation, and a 40 MB chunked upload cut 413 once it passes the
#      limit; curl's total time per request, over loopback.
#
# Needs: cargo, curl, wrk (Debian: `apt-get install wrk`).
# Usage: benches/http_bench.sh   (WRK_THREADS, WRK_CONNECTIONS, WRK_SECONDS,
#        UPLOAD_RUNS override the defaults below)
#
# The server and the load generator share the machine's cores; the server
# logs at its default level (`info`, one line per request) to a file.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
source benches/lib.sh

WRK_THREADS=${WRK_THREADS:-2}
WRK_CONNECTIONS=${WRK_CONNECTIONS:-64}
WRK_SECONDS=${WRK_SECONDS:-20}
UPLOAD_RUNS=${UPLOAD_RUNS:-5}
# The default upload limit, 32 MiB: the largest file accepted.
MAX_UPLOAD_BYTES=33554432

for tool in curl wrk; do
    command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 1; }
done

cargo build --release --locked -p attune-server --bin attune
attune="${CARGO_TARGET_DIR:-target}/release/attune"

work=$(mktemp -d)
server_pid=
cleanup() {
    bench_stop "$server_pid" TERM
    rm -rf "$work"
}
trap cleanup EXIT

bench_clean_env
export ATTUNE_STORE_PATH="$work/attune.sqlite3"
key=$(bench_key bench service.upload,service.upload.inter-2,service.upload.inter-2-audio)
bench_serve "$work/server.log"
base="http://$server_addr"

job_id_of() { sed -n 's/.*"job_id":"\([0-9a-f]*\)".*/\1/p'; }
status_of() { sed -n 's/.*"status":"\([a-z]*\)".*/\1/p'; }
wait_done() {
    local id=$1 status
    for _ in $(seq 1 1200); do
        status=$(curl -s -H "Authorization: Bearer $key" "$base/v2/upload/jobs/$id" | status_of)
        [[ "$status" == completed || "$status" == failed ]] && return 0
        sleep 0.1
    done
    echo "job $id did not finish" >&2
    return 1
}

# A 16 kHz mono 16-bit PCM WAV of exactly $2 bytes (silence).
le() { # value, bytes: little-endian printf escapes
    local v=$1 n=$2 out=
    for _ in $(seq 1 "$n"); do out+=$(printf '\\x%02x' $((v & 255))); v=$((v >> 8)); done
    printf '%s' "$out"
}
make_wav() {
    local path=$1 size=$2 data=$(($2 - 44))
    {
        printf 'RIFF'; printf "$(le $((size - 8)) 4)"; printf 'WAVEfmt '
        printf "$(le 16 4)$(le 1 2)$(le 1 2)$(le 16000 4)$(le 32000 4)$(le 2 2)$(le 16 2)"
        printf 'data'; printf "$(le "$data" 4)"
        head -c "$data" /dev/zero
    } >"$path"
}

echo "== machine"
echo "cpus: $(nproc), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"
echo "server: $base (release build, workers = cpus)"

echo
echo "== GET /v2/upload/jobs/{job_id}"
submitted=$(curl -s -H "Authorization: Bearer $key" -F model=inter-2-audio -F wait_seconds=60 \
    -F 'include[]=signals' -F 'include[]=conversation_quality_overall' \
    -F file=@tests/fixtures/speech/hesitant.wav "$base/v2/upload/analyze")
job_id=$(echo "$submitted" | job_id_of)
[[ "$(echo "$submitted" | status_of)" == completed ]] || { echo "setup job: $submitted" >&2; exit 1; }
echo "job: $job_id (completed; envelope $(curl -s -H "Authorization: Bearer $key" \
    "$base/v2/upload/jobs/$job_id" | wc -c) bytes)"
echo "+ wrk -t$WRK_THREADS -c$WRK_CONNECTIONS -d${WRK_SECONDS}s --latency \\"
echo "      -H 'Authorization: Bearer <key>' $base/v2/upload/jobs/$job_id"
wrk -t"$WRK_THREADS" -c"$WRK_CONNECTIONS" -d5s -H "Authorization: Bearer $key" \
    "$base/v2/upload/jobs/$job_id" >/dev/null # warm-up
wrk -t"$WRK_THREADS" -c"$WRK_CONNECTIONS" -d"${WRK_SECONDS}s" --latency \
    -H "Authorization: Bearer $key" "$base/v2/upload/jobs/$job_id" | tee "$work/wrk.txt"
if grep -q "Non-2xx" "$work/wrk.txt"; then
    echo "some reads were not answered 200" >&2
    exit 1
fi
rps=$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk.txt")
p50=$(awk '$1 == "50%" {print $2}' "$work/wrk.txt")
p99=$(awk '$1 == "99%" {print $2}' "$work/wrk.txt")

echo
echo "== time to accept a 32 MB upload (curl time_total over $UPLOAD_RUNS runs)"
make_wav "$work/max.wav" "$MAX_UPLOAD_BYTES"
head -c "$MAX_UPLOAD_BYTES" /dev/zero >"$work/max.bin"
head -c $((40 * 1024 * 1024)) /dev/zero >"$work/over.bin"
upload() { # file, expected status, extra curl arguments...; prints seconds
    local file=$1 expected=$2 out
    shift 2
    out=$(curl -s -o "$work/answer.json" -w '%{http_code} %{time_total}' "$@" \
        -H "Authorization: Bearer $key" -F model=inter-2-audio -F wait_seconds=0 \
        -F "file=@$file" "$base/v2/upload/analyze")
    [[ "${out% *}" == "$expected" ]] || { echo "expected $expected, got $out: $(cat "$work/answer.json")" >&2; exit 1; }
    echo "${out#* }"
}
summary() { sort -n | awk '{v[NR]=$1} END {printf "median %.3f s (min %.3f, max %.3f)", v[int((NR+1)/2)], v[1], v[NR]}'; }
echo "+ curl -w '%{http_code} %{time_total}' -H 'Authorization: Bearer <key>' -F model=inter-2-audio \\"
echo "      -F wait_seconds=0 -F file=@<file> $base/v2/upload/analyze"
accepted=()
for _ in $(seq 1 "$UPLOAD_RUNS"); do
    accepted+=("$(upload "$work/max.wav" 202)")
    # Its analysis runs after the answer; let it end before the next run.
    wait_done "$(job_id_of <"$work/answer.json")"
done
refused=(); cut=()
for _ in $(seq 1 "$UPLOAD_RUNS"); do refused+=("$(upload "$work/max.bin" 422)"); done
# Chunked, so no Content-Length announces the size: the body is read until
# it passes the limit.
for _ in $(seq 1 "$UPLOAD_RUNS"); do
    cut+=("$(upload "$work/over.bin" 413 -H 'Transfer-Encoding: chunked')")
done

echo
echo "== summary"
echo "GET /v2/upload/jobs/{job_id}: $rps requests/s, p50 $p50, p99 $p99" \
    "(wrk -t$WRK_THREADS -c$WRK_CONNECTIONS -d${WRK_SECONDS}s)"
echo "32 MiB WAV accepted, 202:        $(printf '%s\n' "${accepted[@]}" | summary)"
echo "32 MiB non-media refused, 422:   $(printf '%s\n' "${refused[@]}" | summary)"
echo "40 MiB chunked upload cut, 413:  $(printf '%s\n' "${cut[@]}" | summary)"
