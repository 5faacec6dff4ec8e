#!/usr/bin/env bash
# The browser test of the /demo page (demo.test.mjs): installs what it needs, builds the
# server, runs the test. Self-contained, for .ci/run and for a developer:
# - Debian's chromium from apt when /usr/bin/chromium is missing (never a browser download);
# - playwright-core from the npm registry, exactly as package-lock.json pins it (npm ci);
# - the `attune` server and the `video_to_y4m` example (with which the test makes its fake
#   cameras, .y4m files, from the committed face videos) of the README's test build
#   (tests/built.sh), honouring CARGO_TARGET_DIR.
# Screenshots land in target/browser/. Exit status: the test's.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ ! -x /usr/bin/chromium ]]; then
    sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        sudo=(sudo)
    fi
    "${sudo[@]}" apt-get update
    # Recommends stay: they bring the fonts the page is drawn with.
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
fi

(cd tests/browser && npm ci --no-audit --no-fund)

source tests/built.sh attune examples/video_to_y4m
export ATTUNE_BIN="$BUILT/attune"
export VIDEO_TO_Y4M="$BUILT/examples/video_to_y4m"

node tests/browser/demo.test.mjs
node tests/browser/report.test.mjs
