#!/usr/bin/env bash
# Runs schemathesis against a live `attune serve`: the server's own
# /openapi.json drives generated requests to every operation, and the run
# fails on any 5xx, any response the document does not describe (status,
# headers, content type, body schema), or any invalid request accepted.
#
# Self-contained: creates a virtualenv under target/, installs a pinned
# schemathesis from PyPI, builds the server, starts it on a free loopback
# port with a fresh temporary store and a known key, runs, stops the server.
# Exit status: schemathesis's (non-zero on any failure), or non-zero when the
# server cannot be built, started or stopped cleanly.
#
# Bounded run time: at most EXAMPLES generated cases per operation and phase
# (default 100), and the whole schemathesis run is stopped (and fails) after
# TIME_LIMIT seconds (default 600).
set -euo pipefail
cd "$(dirname "$0")/../.."

SCHEMATHESIS_VERSION=4.32.5
EXAMPLES=${EXAMPLES:-100}
TIME_LIMIT=${TIME_LIMIT:-600}
SEED=${SEED:-20261122}
VENV="${CARGO_TARGET_DIR:-target}/schemathesis-venv"

if ! "$VENV/bin/schemathesis" --version 2>/dev/null | grep -qF "$SCHEMATHESIS_VERSION"; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "schemathesis==$SCHEMATHESIS_VERSION"
fi

source tests/built.sh attune
attune="$BUILT/attune"

work=$(mktemp -d)
server_pid=
cleanup() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# No ATTUNE_* setting of the calling environment leaks into the server.
unset $(env | grep -o '^ATTUNE_[A-Z_]*' || true)
export ATTUNE_STORE_PATH="$work/attune.sqlite3"
export ATTUNE_LOG=info

key=$("$attune" keys create --account schemathesis \
    --scopes service.upload,service.upload.inter-2,service.upload.inter-2-audio,service.stream,service.stream.inter-2,service.stream.inter-2-audio)
# Generated traffic is far above the default 600 requests a minute; the rate
# limiter is tested elsewhere.
"$attune" accounts set --account schemathesis --requests-per-minute 1000000 \
    --concurrent-requests 64 >/dev/null

"$attune" serve --bind 127.0.0.1:0 2>"$work/server.log" >/dev/null &
server_pid=$!
addr=
for _ in $(seq 1 300); do
    addr=$(sed -n 's/.*listening addr=\([^ ]*\).*/\1/p' "$work/server.log" | head -n 1)
    [[ -n "$addr" ]] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.1
done
if [[ -z "$addr" ]]; then
    echo "attune serve did not start listening" >&2
    cat "$work/server.log" >&2
    exit 1
fi
echo "attune serve listening on $addr"

status=0
timeout "$TIME_LIMIT" "$VENV/bin/schemathesis" \
    --config-file tests/schemathesis/schemathesis.toml \
    run "http://$addr/openapi.json" \
    --header "Authorization: Bearer $key" \
    --checks all \
    --max-examples "$EXAMPLES" \
    --seed "$SEED" \
    --workers 1 \
    --request-timeout 30 \
    --suppress-health-check all \
    --report junit --report-dir target/schemathesis-report || status=$?

kill -TERM "$server_pid"
if ! wait "$server_pid"; then
    echo "attune serve did not shut down cleanly" >&2
    status=1
fi
server_pid=
if grep -q "panicked" "$work/server.log"; then
    echo "attune serve panicked:" >&2
    grep -A5 "panicked" "$work/server.log" >&2
    status=1
fi
exit "$status"
