#!/usr/bin/env bash
# The AsyncAPI check: installs @asyncapi/parser from the npm registry exactly as
# package-lock.json pins it (npm ci) and validates crates/server/asyncapi.json with it.
# Self-contained, for .ci/run and for a developer. Exit status: the check's.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
node validate.mjs
