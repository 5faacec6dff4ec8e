//! Where the transcriber's arithmetic runs: on one thread, the caller's share of the machine.
//!
//! candle splits a matrix product over rayon's current pool, which is otherwise the whole
//! machine's, and splits its 8-bit products over a pool of its own, sized once per process from
//! `CANDLE_NUM_THREADS` (else `RAYON_NUM_THREADS`, else the physical cores) whose threads spin
//! while they wait. Both cost more CPU than they save: a whole upload with words on one core
//! spent 56 s of CPU with them and 30 s without (`BENCHMARKS.md`, "Words"), and concurrent
//! transcriptions queue behind the 8-bit pool's one lock. So every product of a transcription
//! runs inside [`on_one_thread`], and a process that transcribes should set
//! `CANDLE_NUM_THREADS=1` and `RAYON_NUM_THREADS=1` before its first transcription
//! ([`one_candle_thread_unless_set`], which the `attune` binary calls); several recordings are
//! then transcribed at once by running them on several threads.

use std::cell::OnceCell;

thread_local! {
    /// This thread's one-thread rayon pool, made on first use.
    static ONE: OnceCell<Option<rayon::ThreadPool>> = const { OnceCell::new() };
}

/// Sets `CANDLE_NUM_THREADS=1` and `RAYON_NUM_THREADS=1`, each unless the environment already
/// sets it. Call it first thing in `main`, before any thread exists: changing the environment
/// races with threads reading it.
///
/// - `CANDLE_NUM_THREADS=1`: candle's 8-bit pool has no threads of its own.
/// - `RAYON_NUM_THREADS=1`: candle asks for the thread count before every float product, and
///   without this variable the answer comes from parsing `/proc/cpuinfo` (`num_cpus`), about
///   3 % of a transcription's CPU (BENCHMARKS.md, "Words", 2026-12-06); with it the products
///   also skip gemm's splitting into parallel tasks, which a one-thread pool runs one after
///   another anyway. It also sizes rayon's global pool to one thread; nothing in Attune runs on
///   that pool (transcriptions run on [`on_one_thread`]'s pools).
pub fn one_candle_thread_unless_set() {
    for name in ["CANDLE_NUM_THREADS", "RAYON_NUM_THREADS"] {
        if std::env::var_os(name).is_none() {
            std::env::set_var(name, "1");
        }
    }
}

/// Runs `f` with rayon's current pool one thread wide: inline when the calling thread already
/// is the only thread of its pool, else on a one-thread pool of the calling thread's own (so
/// it holds one core, whatever the machine has).
pub fn on_one_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if rayon::current_thread_index().is_some() && rayon::current_num_threads() == 1 {
        return f();
    }
    ONE.with(|cell| {
        let pool = cell.get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "attune-words".to_owned())
                .build()
                .ok()
        });
        match pool {
            Some(pool) => pool.install(f),
            None => f(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_inside_sees_a_one_thread_pool_and_nesting_stays_on_it() {
        let (outer, inner) = on_one_thread(|| {
            let outer = (rayon::current_num_threads(), rayon::current_thread_index());
            let inner =
                on_one_thread(|| (rayon::current_num_threads(), std::thread::current().id()));
            (outer, (inner, std::thread::current().id()))
        });
        assert_eq!(outer, (1, Some(0)));
        let ((threads, nested_thread), thread) = inner;
        assert_eq!(threads, 1);
        assert_eq!(
            nested_thread, thread,
            "a nested call runs inline, not on yet another pool"
        );
    }
}
