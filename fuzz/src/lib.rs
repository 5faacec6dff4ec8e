//! Shared set-up of the attune-media fuzz targets: which panics count as crashes.
//!
//! libFuzzer-sys installs a panic hook that aborts on every panic, before any `catch_unwind`
//! runs. attune-media deliberately wraps its third-party decoders (Symphonia, opus-pure) in
//! `catch_unwind` and turns a panic there into an "unreadable" error: that is its designed
//! behaviour, not a crash of the service. [`init`] therefore lets a panic raised inside a
//! crates.io dependency unwind to that guard (printing its location once), and still aborts on
//! every other panic: one in attune-media's own code, and one the guard does not catch (which
//! libFuzzer-sys's own `catch_unwind` around the target turns into an abort). Set
//! `ATTUNE_FUZZ_STRICT=1` to abort on third-party panics too, e.g. to collect them for upstream
//! reports.

use std::collections::HashSet;
use std::panic::{self, PanicHookInfo};
use std::sync::Mutex;

/// Locations of third-party panics already reported.
static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Installs the panic policy above; call it from each target's `init`.
pub fn init() {
    if std::env::var_os("ATTUNE_FUZZ_STRICT").is_some_and(|v| v != "0") {
        return;
    }
    let abort_hook = panic::take_hook();
    panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
        match info.location().map(|l| l.file()) {
            Some(file) if is_dependency(file) => {
                let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
                if seen
                    .get_or_insert_with(HashSet::new)
                    .insert(file.to_owned())
                {
                    eprintln!(
                        "attune-fuzz: third-party panic left to attune-media's guard: {info}"
                    );
                }
            }
            _ => abort_hook(info),
        }
    }));
}

/// Whether a panic location lies in a crate downloaded from a registry.
fn is_dependency(file: &str) -> bool {
    file.contains("/registry/src/")
}
