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
# Usage: `source tests/built.sh program...`, each program a path under BUILT that the caller
# runs, e.g. `source tests/built.sh attune examples/video_to_y4m`: a missing one fails here, by
# name, not later with a bare "not found". (With no names it checks `attune`; callers name theirs,
# since a bare `source` hands on the caller's own arguments.)
# Sets BUILT, the directory with `attune` and `examples/`.
cargo test --workspace --locked --no-run --quiet
BUILT="${CARGO_TARGET_DIR:-target}/debug"
for program in "${@:-attune}"; do
    if [[ ! -x "$BUILT/$program" ]]; then
        echo "tests/built.sh: no $BUILT/$program after the test build" >&2
        exit 1
    fi
done
