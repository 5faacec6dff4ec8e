#!/usr/bin/env bash
# A fuzzing campaign: every target (or those named) for a set time each, from the committed
# corpus plus fresh seeds, with a results table, the committed corpus minimised back, and each
# crash minimised into fuzz/regressions/<target>/ (which tests/fuzz_corpus.rs replays in CI).
#
#   fuzz/campaign.sh [SECONDS_PER_TARGET] [TARGET...]     (defaults: 600, every target)
#
# Environment: FUZZ_TARGET_DIR (cargo-fuzz's target dir, default fuzz/target), RESULTS (the
# file the table is appended to, default fuzz/results.local.md), MAX_LEN (longest input,
# 65536), COMMIT_MAX_LEN (longest input kept in the committed corpus, 8192), COMMIT_MAX_KIB
# (the committed corpus of one target, smallest inputs first, 200), RSS_MB (2048),
# TIMEOUT (seconds per input, 30), RUNS (stop a target after this many executions, e.g. 1000000
# for the aim in docs/FUZZING.md; SECONDS_PER_TARGET still bounds it), SKIP_SEED=1 (reuse fuzz/seeds), SKIP_BUILD=1 (run the
# targets as built), SKIP_MERGE=1 (leave fuzz/corpus as it is). Needs the nightly toolchain and cargo-fuzz (`cargo install
# cargo-fuzz --locked`); CI does not run this, it replays the corpus (see fuzz/README.md).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"

SECONDS_PER_TARGET="${1:-600}"
shift || true
TD="${FUZZ_TARGET_DIR:-$HERE/target}"
RESULTS="${RESULTS:-$HERE/results.local.md}"
MAX_LEN="${MAX_LEN:-65536}"
COMMIT_MAX_LEN="${COMMIT_MAX_LEN:-8192}"
COMMIT_MAX_KIB="${COMMIT_MAX_KIB:-200}"
RSS_MB="${RSS_MB:-2048}"
TIMEOUT="${TIMEOUT:-30}"
RUNS_FLAG=()
[ -z "${RUNS:-}" ] || RUNS_FLAG=(-runs="$RUNS")
# The server targets need the fuzz crate's `server` feature (attune-server's large tree).
# As cargo-fuzz sets it: the bundled OpenH264 defines some globals twice, a harmless ODR
# violation AddressSanitizer would otherwise stop on at start.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_odr_violation=0}"
SERVER_TARGETS=" upload_form handshake client_frame "

if [ "$#" -gt 0 ]; then
    TARGETS=("$@")
else
    mapfile -t TARGETS < <(cargo +nightly fuzz list)
fi
[ "${SKIP_SEED:-0}" = 1 ] || ./seed.sh > /dev/null

features() {
    case "$SERVER_TARGETS" in
        *" $1 "*) echo "--features=server" ;;
    esac
}

count() { find "$1" -type f 2> /dev/null | wc -l; }
kib() { du -sk "$1" 2> /dev/null | cut -f1; }
# stat NAME LOG: a libFuzzer final statistic (-print_final_stats=1), or `?`.
# trim DIR: keeps DIR's inputs of at most COMMIT_MAX_LEN bytes, smallest first, up to
# COMMIT_MAX_KIB in all: the committed corpus stays a few MB that CI replays in seconds.
# The live target's inputs carry whole streams: four times the room.
trim() {
    local total=0 size f limit="$COMMIT_MAX_LEN"
    [ "$2" != live ] || limit=$((COMMIT_MAX_LEN * 4))
    find "$1" -type f -size +"$limit"c -delete
    while read -r size f; do
        total=$((total + size))
        [ "$total" -le $((COMMIT_MAX_KIB * 1024)) ] || rm -f "$f"
    done < <(find "$1" -type f -printf '%s %p\n' | sort -n)
}

fstat() { grep -o "stat::$1: *[0-9]*" "$2" | tail -1 | grep -o '[0-9]*$' || echo '?'; }

{
    printf '\n## Campaign %s\n\n' "$(date -u +%Y-%m-%dT%H:%MZ)"
    [ -z "${RUNS:-}" ] || printf 'Each target stops at %s executions (`RUNS`) or the time, whichever comes first.\n\n' "$RUNS"
    printf 'Command: `fuzz/campaign.sh %s %s` on %s cores (%s), `-max_len=%s -timeout=%s -rss_limit_mb=%s`, AddressSanitizer, `-O -a` (optimised, debug assertions on).\n\n' \
        "$SECONDS_PER_TARGET" "$*" "$(nproc)" "$(uname -m)" "$MAX_LEN" "$TIMEOUT" "$RSS_MB"
    printf '| target | seconds | executions | exec/s | new units | corpus files (before → after) | corpus KiB | peak RSS MB | crashes |\n'
    printf '|---|---:|---:|---:|---:|---|---:|---:|---|\n'
} >> "$RESULTS"

for t in "${TARGETS[@]}"; do
    feat="$(features "$t")"
    work="$HERE/work/$t"
    log="$HERE/work/$t.log"
    artifacts="$HERE/artifacts/$t"
    mkdir -p "$work" "$artifacts" "$HERE/corpus/$t"
    before="$(count "$HERE/corpus/$t")"
    marker="$(mktemp)"
    bin="$TD/x86_64-unknown-linux-gnu/release/$t"
    [ "${SKIP_BUILD:-0}" = 1 ] || cargo +nightly fuzz build -O -a $feat --target-dir "$TD" "$t"
    start=$(date +%s)
    # The first corpus directory receives new inputs; the committed corpus and seeds are read.
    "$bin" -max_total_time="$SECONDS_PER_TARGET" -max_len="$MAX_LEN" -timeout="$TIMEOUT" \
        -rss_limit_mb="$RSS_MB" -print_final_stats=1 -artifact_prefix="$artifacts/" \
        "${RUNS_FLAG[@]}" "$work" "$HERE/corpus/$t" "$HERE/seeds/$t" > "$log" 2>&1 || true
    elapsed=$(($(date +%s) - start))
    execs="$(fstat number_of_executed_units "$log")"
    rate="$(fstat average_exec_per_sec "$log")"
    new="$(fstat new_units_added "$log")"
    rss="$(fstat peak_rss_mb "$log")"

    # Each new artifact, minimised, becomes a regression input.
    crashes=()
    while IFS= read -r -d '' crash; do
        name="$(basename "$crash")"
        mkdir -p "$HERE/regressions/$t"
        "$bin" -minimize_crash=1 -runs=2000 -max_len="$MAX_LEN" -timeout="$TIMEOUT" \
            -rss_limit_mb="$RSS_MB" -exact_artifact_path="$HERE/regressions/$t/$name" "$crash" \
            > "$HERE/work/$t.tmin.log" 2>&1 || true
        # A crash that did not minimise is kept as found.
        [ -s "$HERE/regressions/$t/$name" ] || cp "$crash" "$HERE/regressions/$t/$name"
        crashes+=("$name")
    done < <(find "$artifacts" -type f -newer "$marker" -print0)
    rm -f "$marker"

    # The committed corpus, minimised over what it held and what this run found.
    if [ "${SKIP_MERGE:-0}" != 1 ]; then
        merged="$(mktemp -d)"
        "$bin" -merge=1 -max_len="$MAX_LEN" -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" \
            "$merged" "$HERE/corpus/$t" "$work" "$HERE/seeds/$t" > "$HERE/work/$t.merge.log" 2>&1 || true
        trim "$merged" "$t"
        if [ "$(count "$merged")" -gt 0 ]; then
            rm -rf "${HERE:?}/corpus/$t"
            mkdir -p "$HERE/corpus/$t"
            cp "$merged"/* "$HERE/corpus/$t/"
        fi
        rm -rf "$merged"
    fi
    after="$(count "$HERE/corpus/$t")"
    found="${crashes[*]:-none}"
    printf '| `%s` | %s | %s | %s | %s | %s → %s | %s | %s | %s |\n' "$t" "$elapsed" "$execs" \
        "$rate" "$new" "$before" "$after" "$(kib "$HERE/corpus/$t")" "$rss" "$found" >> "$RESULTS"
    printf '%-13s %5ss %10s execs  corpus %s -> %s  crashes: %s\n' "$t" "$elapsed" "$execs" \
        "$before" "$after" "$found"
done
printf '\nResults appended to %s; committed corpus: %s KiB.\n' "$RESULTS" "$(kib "$HERE/corpus")"
