#!/usr/bin/env bash
# The store under load: `attune serve` (release build) on the embedded SQLite
# store, and 1 and 2 instances sharing one PostgreSQL, on this machine in one
# run:
#   1. job reads: `GET /v2/upload/jobs/{job_id}` of a completed job under wrk,
#      requests/s summed over the instances (each instance gets its own wrk
#      with half the connections);
#   2. submit-to-complete: N uploads of a 10 s speech clip, one at a time with
#      `wait_seconds` (alternating instances when there are two); p50 and p99
#      of curl's total time.
#
# PostgreSQL is a throwaway cluster started by tests/pg/with-postgres.sh (the
# one `.ci/run` uses: Debian's `postgresql`, fsync off, a temporary directory).
#
# Needs: cargo, curl, wrk, psql (Debian: `apt-get install wrk postgresql`).
# Usage: benches/store_scale.sh   (WRK_CONNECTIONS, WRK_SECONDS, RUNS override
#        the defaults below; SETUPS="pg1" measures only some of sqlite, pg1, pg2)
#
# The instances, PostgreSQL and the load generators share the machine's cores,
# so two instances on one machine measure the store's sharing, not scale-out.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
source benches/lib.sh

if [[ -z "${ATTUNE_TEST_PG_URL:-}" ]]; then
    exec bash tests/pg/with-postgres.sh "$0" "$@"
fi

WRK_CONNECTIONS=${WRK_CONNECTIONS:-32}
WRK_SECONDS=${WRK_SECONDS:-15}
RUNS=${RUNS:-20}
SETUPS=${SETUPS:-sqlite pg1 pg2}

for tool in curl wrk psql; do
    command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 1; }
done

cargo build --release --locked -p attune-server --bin attune >&2
target_dir=${CARGO_TARGET_DIR:-target}
[[ "$target_dir" = /* ]] || target_dir="$(pwd)/$target_dir"
attune="$target_dir/release/attune"
clip="$(pwd)/tests/fixtures/speech/baseline.wav"

work=$(mktemp -d)
chmod 755 "$work"
pids=()
stop_servers() {
    for pid in "${pids[@]}"; do
        bench_stop "$pid" TERM
    done
    pids=()
}
cleanup() {
    stop_servers
    rm -rf "$work"
}
trap cleanup EXIT

bench_clean_env

# Starts one instance; appends its base URL to $bases.
bases=()
start_instance() {
    bench_serve "$work/server${#pids[@]}.log"
    pids+=("$server_pid")
    bases+=("http://$server_addr")
}

job_id_of() { sed -n 's/.*"job_id":"\([^"]*\)".*/\1/p'; }

# One upload with wait_seconds on $1; prints curl's total time (s) and the job id.
submit() {
    curl -s -o "$work/submit.json" -w '%{time_total}\n' \
        -H "Authorization: Bearer $key" \
        -F model=inter-2-audio -F 'include[]=signals' -F wait_seconds=60 \
        -F "file=@$clip;type=audio/wav" "$1/v2/upload/analyze"
    grep -q '"status":"completed"' "$work/submit.json" \
        || { echo "upload did not complete: $(cat "$work/submit.json")" >&2; exit 1; }
}

percentile() { # p, over stdin numbers
    sort -n | awk -v p="$1" '{ a[NR] = $1 } END { i = int((NR - 1) * p / 100 + 0.5) + 1; printf "%.0f", a[i] * 1000 }'
}

# Measures one setup: $1 label, $2 instances. The store is already chosen by
# the environment.
measure() {
    local label=$1 instances=$2
    key=$(bench_key bench service.upload,service.upload.inter-2,service.upload.inter-2-audio)
    bases=()
    for _ in $(seq 1 "$instances"); do start_instance; done

    # A completed job to read.
    submit "${bases[0]}" >/dev/null
    local id
    id=$(job_id_of <"$work/submit.json")

    local per=$((WRK_CONNECTIONS / instances)) i=0 loaders=()
    for base in "${bases[@]}"; do
        wrk -t1 -c"$per" -d"${WRK_SECONDS}s" -H "Authorization: Bearer $key" \
            "$base/v2/upload/jobs/$id" >"$work/wrk$i.txt" &
        loaders+=($!)
        i=$((i + 1))
    done
    for loader in "${loaders[@]}"; do wait "$loader"; done
    local reads
    reads=$(cat "$work"/wrk*.txt | awk '/^Requests\/sec/ { s += $2 } END { printf "%.0f", s }')
    local non2xx
    non2xx=$(cat "$work"/wrk*.txt | awk '/Non-2xx/ { s += $NF } END { print s + 0 }')
    rm -f "$work"/wrk*.txt

    : >"$work/latencies.txt"
    for run in $(seq 1 "$RUNS"); do
        submit "${bases[$((run % instances))]}" | head -n 1 >>"$work/latencies.txt"
    done
    local p50 p99
    p50=$(percentile 50 <"$work/latencies.txt")
    p99=$(percentile 99 <"$work/latencies.txt")
    printf '| %s | %s | %s | %s | %s | %s |\n' \
        "$label" "$instances" "$reads" "$non2xx" "$p50" "$p99"
    stop_servers
}

echo "| store | instances | job reads/s | non-2xx | submit-to-complete p50 ms | p99 ms |"
echo "|---|---|---|---|---|---|"

if [[ " $SETUPS " == *" sqlite "* ]]; then
    export ATTUNE_STORE_PATH="$work/attune.sqlite3"
    measure sqlite 1
    unset ATTUNE_STORE_PATH
fi

for instances in 1 2; do
    [[ " $SETUPS " == *" pg$instances "* ]] || continue
    db="attune_bench_$instances"
    psql -q "$ATTUNE_TEST_PG_URL" -c "CREATE DATABASE $db" >/dev/null
    export ATTUNE_STORE_URL="${ATTUNE_TEST_PG_URL%/*}/$db"
    measure postgresql "$instances"
    unset ATTUNE_STORE_URL
done
echo
echo "cores: $(nproc); wrk: ${WRK_CONNECTIONS} connections for ${WRK_SECONDS}s; $RUNS uploads of $(basename "$clip")"
