#!/usr/bin/env bash
# The README's commands, run as written: the quick start's server and its `curl` upload, the
# command-line example and the output the README shows of it, and the test command (which must be
# the one .ci/run runs); and every local link of the README, CHANGELOG.md and docs/*.md. The
# blocks are read from README.md, each marked by a `<!-- readme-check: NAME -->` line before its
# fence, so an edit to the README is what is tested.
#
# The README says `cargo run --release ...`; here a `cargo` on the PATH runs the same program of
# the test build instead (tests/built.sh: a release build would add about 30 minutes to CI). It
# accepts only `cargo run [--release] [--locked] -p attune-server -- ARGS` and
# `cargo run [--release] [--locked] --example NAME -- ARGS`: any other cargo command in a checked
# block fails the check.
#
# The commands run in a temporary directory holding a link to the repository's tests/, so the
# server's ./attune-data/ store is a fresh one and nothing is left in the checkout. Port 8080 is
# used as the README says when it is free, else a free port is put in its place.
# Exit status: non-zero when a command fails or answers other than the README says.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"

# The quick start's upload is a curl command: install Debian's when it is missing and we can.
if ! command -v curl >/dev/null && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl >/dev/null
fi
command -v curl >/dev/null || { echo "tests/readme/run.sh: curl is needed (the README's upload)" >&2; exit 1; }

source tests/built.sh attune
case "$BUILT" in
    /*) ;;
    *) BUILT="$ROOT/$BUILT" ;;
esac

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then
        kill -TERM -- "-$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    echo "tests/readme/run.sh: $*" >&2
    exit 1
}

# The checked blocks, one file each.
python3 - "$ROOT/README.md" "$WORK" <<'PY'
import re, sys
readme, work = sys.argv[1], sys.argv[2]
text = open(readme, encoding="utf-8").read()
found = re.findall(r"<!-- readme-check: ([a-z-]+) -->\n```[a-z]*\n(.*?)```", text, re.S)
names = [name for name, _ in found]
for needed in ["serve", "upload", "test", "cli", "cli-output"]:
    if names.count(needed) != 1:
        sys.exit(f"README.md: expected one block marked `readme-check: {needed}`, found {names.count(needed)}")
for name, body in found:
    open(f"{work}/{name}", "w", encoding="utf-8").write(body)
PY

# Every local link of the README, the changelog and the manual names a file that exists.
python3 - <<'PY' || fail "a link names a missing file"
import glob, os, re, sys
broken = []
for page in ["README.md", "CHANGELOG.md", *sorted(glob.glob("docs/*.md"))]:
    text = open(page, encoding="utf-8").read()
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not re.match(r"[a-z]+:", target) and not os.path.exists(os.path.join(os.path.dirname(page), target)):
            broken.append(f"{page}: {target}")
if broken:
    sys.exit("\n".join(broken))
PY

# The README's test command is the one CI runs.
test_command="$(grep -v '^\s*$' "$WORK/test")"
grep -qF -- "$test_command" .ci/run || fail "the README's test command \`$test_command\` is not what .ci/run runs"

mkdir "$WORK/bin" "$WORK/run"
ln -s "$ROOT/tests" "$WORK/run/tests"
cat >"$WORK/bin/cargo" <<SHIM
#!/usr/bin/env bash
# cargo as the README's commands call it, on the test build's programs.
set -euo pipefail
unexpected() { echo "readme check: not a command this check runs: cargo \$*" >&2; exit 97; }
[ "\${1:-}" = run ] || unexpected "\$@"
args=("\$@")
shift
program=""
while [ "\$#" -gt 0 ]; do
    case "\$1" in
        --release | --locked) shift ;;
        -p) [ "\${2:-}" = attune-server ] || unexpected "\${args[@]}"; program="$BUILT/attune"; shift 2 ;;
        --example) [ -n "\${2:-}" ] || unexpected "\${args[@]}"; program="$BUILT/examples/\$2"; shift 2 ;;
        --) shift; break ;;
        *) unexpected "\${args[@]}" ;;
    esac
done
[ -n "\$program" ] && [ -x "\$program" ] || unexpected "\${args[@]}"
exec "\$program" "\$@"
SHIM
chmod +x "$WORK/bin/cargo"
export PATH="$WORK/bin:$PATH"

# 8080 as written, unless something here already listens there.
port=8080
if ! python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 8080))' 2>/dev/null; then
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    echo "tests/readme/run.sh: 127.0.0.1:8080 is taken; using $port in its place"
    sed -i "s/127\.0\.0\.1:8080/127.0.0.1:$port/g" "$WORK/upload"
    export ATTUNE_BIND="127.0.0.1:$port"
fi

echo "== quick start: $(cat "$WORK/serve")"
cd "$WORK/run"
setsid bash "$WORK/serve" >"$WORK/serve.log" 2>&1 &
SERVER_PID=$!
KEY=""
for _ in $(seq 1 300); do
    KEY="$(grep -oE 'atk_[0-9a-f]{64}' "$WORK/serve.log" | head -n 1 || true)"
    if [ -n "$KEY" ] && curl -sf "http://127.0.0.1:$port/healthz" >/dev/null; then
        break
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/serve.log" >&2; fail "the server exited"; }
    sleep 0.2
done
[ -n "$KEY" ] || { cat "$WORK/serve.log" >&2; fail "the server printed no development key"; }
export KEY

echo "== quick start upload"
bash "$WORK/upload" >"$WORK/upload.json" || fail "the upload command failed"
python3 - "$WORK/upload.json" <<'PY' || fail "the upload did not answer a completed job"
import json, sys
job = json.load(open(sys.argv[1]))
assert job.get("status") == "completed", job
result = job["result"]
assert result["windows"], job
assert result["conversation_quality"]["overall"]["quality_index"] >= 0, job
print(f"completed: {len(result['windows'])} windows, quality index {result['conversation_quality']['overall']['quality_index']}")
PY

echo "== command line: $(cat "$WORK/cli")"
bash "$WORK/cli" >"$WORK/cli.out" || { cat "$WORK/cli.out" >&2; fail "the command-line example failed"; }
python3 - "$WORK/cli-output" "$WORK/cli.out" <<'PY' || fail "the command-line example printed other than the README shows"
import sys
shown = [l.rstrip() for l in open(sys.argv[1]) if l.strip() and l.strip() != "..."]
printed = [l.rstrip() for l in open(sys.argv[2])]
missing = [l for l in shown if l not in printed]
if missing:
    print("lines the README shows that the command did not print:", *missing, sep="\n  ", file=sys.stderr)
    print("it printed:", *printed, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print(f"all {len(shown)} lines the README shows were printed")
PY
echo "README commands: ok"
