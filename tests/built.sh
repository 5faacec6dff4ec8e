# Sourced by the scripts under tests/ that run a built program (the `attune` server, an example):
# they all use the debug programs of the README's test build, `cargo test --workspace --locked`.
#
# Why one build: cargo resolves features per selection of packages, so `cargo build -p
# attune-server` or `-p attune --example X` after `cargo test --workspace` is not a no-op; each
# recompiled tract, symphonia and OpenH264 (13-16 minutes apiece on CI's two cores, and a release
# build twice that), which put `.ci/run` past its 90 minutes. `cargo test --no-run` with the
# README's flags finds everything already built when CI has just run the tests, and builds the
# same artifacts (the `attune` binary and every example are part of a test build) when a
# developer runs one script alone.
#
# Sets BUILT, the directory with `attune` and `examples/`.
cargo test --workspace --locked --no-run --quiet
BUILT="${CARGO_TARGET_DIR:-target}/debug"
if [[ ! -x "$BUILT/attune" ]]; then
    echo "tests/built.sh: no $BUILT/attune after the test build" >&2
    exit 1
fi
