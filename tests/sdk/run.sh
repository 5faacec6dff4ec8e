#!/usr/bin/env bash
# Runs the interface's official Python client (`interhumanai`, pinned in
# requirements.txt) against a live `attune serve` (the debug build of
# the README's test command, tests/built.sh): tests/sdk/test_sdk.py
# drives uploads, jobs, every HTTP error the client can provoke, client tokens,
# v1/v2 streams and a realtime session through the client's own API, and
# asserts on its typed objects.
#
# Self-contained: creates a fresh virtualenv under the cargo target directory,
# installs the pinned client, builds the server (tests/built.sh), starts it on a free
# loopback port with a temporary store, creates its API keys with the CLI,
# runs the tests, checks the `/metrics` scrape they leave with the Prometheus
# project's OpenMetrics parser (check_metrics.py) and always stops the server.
# Exit status: non-zero when any test fails, or when the server cannot be
# built, started or stopped cleanly, or panicked.
#
# ONLY=name1,name2 runs just those tests (names as test_sdk.py prints them).
set -euo pipefail
cd "$(dirname "$0")/../.."

CLIENT_VERSION=1.3.4
target="${CARGO_TARGET_DIR:-target}"
VENV="$target/sdk-venv"

# A fresh environment every run: what CI sees on a new machine is what is
# tested here, with nothing left over from an earlier install.
python3 -m venv --clear "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/sdk/requirements.txt
installed=$("$VENV/bin/python" -c 'import interhumanai; print(interhumanai.__version__)')
if [[ "$installed" != "$CLIENT_VERSION" ]]; then
    echo "expected interhumanai $CLIENT_VERSION, the virtualenv has $installed" >&2
    exit 1
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

all_scopes=service.upload,service.upload.inter-2,service.upload.inter-2-audio,service.stream,service.stream.inter-2,service.stream.inter-2-audio
SDK_KEY=$("$attune" keys create --account sdk --scopes "$all_scopes" 2>/dev/null)
SDK_OTHER_KEY=$("$attune" keys create --account sdk-other --scopes "$all_scopes" 2>/dev/null)
SDK_STREAM_ONLY_KEY=$("$attune" keys create --account sdk --scopes service.stream 2>/dev/null)
# The suite sends a few hundred requests, some of them at once; the limiter is
# tested elsewhere.
"$attune" accounts set --account sdk --requests-per-minute 100000 --concurrent-requests 32 >/dev/null
export SDK_KEY SDK_OTHER_KEY SDK_STREAM_ONLY_KEY
export SDK_ATTUNE_BIN="$attune"

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
echo "attune serve listening on $addr; interhumanai $installed"
export SDK_BASE_URL="http://$addr"

status=0
"$VENV/bin/python" tests/sdk/test_sdk.py || status=$?
# The scrape after all that traffic, through the Prometheus project's parser.
"$VENV/bin/python" tests/sdk/check_metrics.py "$SDK_BASE_URL" || status=$?

kill -TERM "$server_pid"
if ! wait "$server_pid"; then
    echo "attune serve did not shut down cleanly" >&2
    status=1
fi
server_pid=
# The client announces itself with `X-Interhuman-SDK`; the server records it
# as it records the interface's `X-Service-SDK`.
if ! grep -qF "sdk=\"python/$CLIENT_VERSION\"" "$work/server.log"; then
    echo "the server log never names the client (sdk=python/$CLIENT_VERSION)" >&2
    status=1
fi
if grep -q "panicked" "$work/server.log"; then
    echo "attune serve panicked:" >&2
    grep -A5 "panicked" "$work/server.log" >&2
    status=1
fi
if [[ "$status" != 0 ]]; then
    echo "--- last 40 lines of the server log" >&2
    tail -n 40 "$work/server.log" >&2
fi
exit "$status"
