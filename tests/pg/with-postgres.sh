#!/usr/bin/env bash
# Runs a command beside a throwaway PostgreSQL cluster:
#   tests/pg/with-postgres.sh cargo test -p attune-server --test store_contract
# The cluster lives in a temporary directory, listens on a free loopback port
# (its unix socket in the same directory), runs as an unprivileged user, and
# is stopped and deleted when the command ends. The command sees
# ATTUNE_TEST_PG_URL, a superuser URL of the cluster's `postgres` database.
# Installs Debian's `postgresql` when no server binaries are found.
set -euo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi

find_bin() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

bin="$(find_bin)"
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    echo "with-postgres: installing Debian's postgresql" >&2
    if [ "$(id -u)" -ne 0 ]; then
        echo "with-postgres: not root; install postgresql first" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # The package's own cluster is not used; stop it from starting one.
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
    bin="$(find_bin)"
fi

# PostgreSQL refuses to run as root: use a dedicated unprivileged user.
run_as=()
if [ "$(id -u)" -eq 0 ]; then
    if ! id attune-ci >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin attune-ci
    fi
    run_as=(runuser -u attune-ci --)
fi

dir="$(mktemp -d /tmp/attune-pg.XXXXXX)"
chmod 755 "$dir"
if [ "${#run_as[@]}" -gt 0 ]; then
    chown attune-ci "$dir"
fi

free_port() {
    # Bind port 0 and read back what the kernel chose.
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
        || echo $((20000 + RANDOM % 20000))
}
port="$(free_port)"

stop() {
    "${run_as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap stop EXIT

# Trust on loopback and the private socket only: a test cluster, gone when
# the command ends.
"${run_as[@]}" "$bin/initdb" -D "$dir/data" -U attune --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
"${run_as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
    start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }

export ATTUNE_TEST_PG_URL="postgres://attune@127.0.0.1:$port/postgres"
echo "with-postgres: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2
set +e
"$@"
status=$?
set -e
exit "$status"
