# Shared by the benchmark scripts (sourced, not run): a clean environment,
# a bench account whose limits do not turn load into refusals, and starting
# and stopping `attune serve` on a free loopback port. The scripts set
# `attune` (the binary) and `work` (a temporary directory) first.

# Unsets every ATTUNE_* variable except ATTUNE_TEST_PG_URL, so the server runs
# on its defaults plus what the script exports.
bench_clean_env() {
    # shellcheck disable=SC2046
    unset $(env | grep -o '^ATTUNE_[A-Z_]*' | grep -v '^ATTUNE_TEST_PG_URL$' || true)
}

# Prints a new API key of account $1 with scopes $2, and lifts the account's
# limits (the default 600 requests a minute, 8 at once, would turn the load
# into refusals; a benchmark measures serving, not refusing).
bench_key() {
    local account=$1 scopes=$2 key
    key=$("$attune" keys create --account "$account" --scopes "$scopes" 2>/dev/null) || return 1
    "$attune" accounts set --account "$account" --requests-per-minute 1000000000 \
        --concurrent-requests 100000 >/dev/null || return 1
    echo "$key"
}

# Starts `attune serve` on 127.0.0.1, any free port, logging to $1; sets
# server_pid and server_addr (host:port) once it listens. Exits the script if
# it does not within 30 s.
bench_serve() {
    local log=$1
    "$attune" serve --bind 127.0.0.1:0 2>"$log" >/dev/null &
    server_pid=$!
    server_addr=
    for _ in $(seq 1 300); do
        server_addr=$(sed -n 's/.*listening addr=\([^ ]*\).*/\1/p' "$log" | head -n 1)
        [[ -n "$server_addr" ]] && return 0
        sleep 0.1
    done
    echo "attune serve did not start" >&2
    cat "$log" >&2
    exit 1
}

# Stops the server $1 (if still running) with signal $2 (default TERM) and
# waits for it.
bench_stop() {
    local pid=$1 signal=${2:-TERM}
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        kill "-$signal" "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
}
