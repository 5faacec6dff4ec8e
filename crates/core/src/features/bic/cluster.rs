//! Agglomerative BIC clustering of speech-unit models: linear (neighbours
//! only) down to a bounded number of seeds, then over all pairs.

use super::gauss::{delta_bic, n_log_det, Stats, D};
use crate::features::speakers::MAX_SPEAKERS;

/// Linear clustering: runs of neighbouring segments merge while delta-BIC
/// says one voice (a turn holds many units). Cheap, and it bounds the
/// agglomerative step: `lambda` grows until at most [`MAX_SEEDS`] remain.
pub(super) fn linear_cluster(
    stats: Vec<Stats>,
    prior: &[f64; D * D],
    tau: f64,
    lambda: f64,
) -> Vec<Stats> {
    let mut lambda = lambda;
    let mut out = stats;
    loop {
        let mut merged: Vec<Stats> = Vec::with_capacity(out.len());
        let mut own_last = 0.0;
        for s in out {
            let own = n_log_det(&s, prior, tau);
            match merged.last_mut() {
                Some(last) if delta_bic(last, &s, (own_last, own), prior, tau, lambda) < 0.0 => {
                    last.add(&s);
                    own_last = n_log_det(last, prior, tau);
                }
                _ => {
                    merged.push(s);
                    own_last = own;
                }
            }
        }
        out = merged;
        if out.len() <= MAX_SEEDS || lambda > 1e3 {
            return out;
        }
        lambda = if lambda < 0.25 { 0.25 } else { lambda * 1.5 };
    }
}

/// Most segments the agglomerative step starts from (its cost is quadratic).
pub(super) const MAX_SEEDS: usize = 160;

/// Agglomerative clustering by delta-BIC; returns the cluster statistics.
pub(super) fn cluster(
    mut stats: Vec<Stats>,
    prior: &[f64; D * D],
    tau: f64,
    lambda: f64,
) -> Vec<Stats> {
    let n = stats.len();
    let mut alive = vec![true; n];
    let mut own: Vec<f64> = stats.iter().map(|s| n_log_det(s, prior, tau)).collect();
    // Full matrix of pair deltas: each merge recomputes one row, O(n) BIC
    // evaluations, and finding the next pair reads the matrix.
    let mut dist = vec![f64::INFINITY; n * n];
    for i in 0..n {
        for j in i + 1..n {
            let d = delta_bic(&stats[i], &stats[j], (own[i], own[j]), prior, tau, lambda);
            dist[i * n + j] = d;
            dist[j * n + i] = d;
        }
    }
    let row_min = |dist: &[f64], alive: &[bool], i: usize| -> (usize, f64) {
        let mut best = (i, f64::INFINITY);
        for j in 0..n {
            if j != i && alive[j] && dist[i * n + j] < best.1 {
                best = (j, dist[i * n + j]);
            }
        }
        best
    };
    let mut nearest: Vec<(usize, f64)> = (0..n).map(|i| row_min(&dist, &alive, i)).collect();
    let mut count = n;
    while count > 1 {
        let Some((i, (j, d))) = (0..n)
            .filter(|&i| alive[i])
            .map(|i| (i, nearest[i]))
            .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
        else {
            break;
        };
        if (d > 0.0 || !d.is_finite()) && count <= MAX_SPEAKERS {
            break;
        }
        let (keep, gone) = (i.min(j), i.max(j));
        let g = std::mem::replace(&mut stats[gone], Stats::zero());
        stats[keep].add(&g);
        alive[gone] = false;
        own[keep] = n_log_det(&stats[keep], prior, tau);
        count -= 1;
        for k in 0..n {
            if alive[k] && k != keep {
                let d = delta_bic(
                    &stats[k],
                    &stats[keep],
                    (own[k], own[keep]),
                    prior,
                    tau,
                    lambda,
                );
                dist[k * n + keep] = d;
                dist[keep * n + k] = d;
            }
        }
        for k in 0..n {
            if !alive[k] {
                continue;
            }
            if k == keep || nearest[k].0 == keep || nearest[k].0 == gone {
                nearest[k] = row_min(&dist, &alive, k);
            } else if dist[k * n + keep] < nearest[k].1 {
                nearest[k] = (keep, dist[k * n + keep]);
            }
        }
    }
    stats
        .into_iter()
        .zip(alive)
        .filter_map(|(s, a)| a.then_some(s))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random frame vectors around `centre`.
    fn seed(centre: f64, salt: u64) -> Stats {
        let mut state = salt
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut s = Stats::zero();
        for _ in 0..30 {
            let mut x = [0.0; D];
            for v in &mut x {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                *v = centre + ((state >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * 4.0;
            }
            s.push(&x);
        }
        s
    }

    #[test]
    fn linear_clustering_of_a_long_file_ends_within_the_seed_cap() {
        // Alternating voices never merge at lambda 0: the lambda must grow
        // (a lambda of 0 once never grew, and a long upload spun forever).
        let seeds: Vec<Stats> = (0..600)
            .map(|k| seed(if k % 2 == 0 { 0.0 } else { 20.0 }, k))
            .collect();
        let mut prior = [0.0; D * D];
        for i in 0..D {
            prior[i * D + i] = 1.0;
        }
        let out = linear_cluster(seeds, &prior, 50.0, 0.0);
        assert!(!out.is_empty() && out.len() <= MAX_SEEDS, "{}", out.len());
        let clusters = cluster(out, &prior, 50.0, 1.0);
        assert!(clusters.len() <= MAX_SPEAKERS);
    }

    #[test]
    fn two_separated_voices_cluster_into_two() {
        let seeds: Vec<Stats> = (0..40)
            .map(|k| seed(if k % 3 == 0 { 0.0 } else { 20.0 }, k))
            .collect();
        let mut prior = [0.0; D * D];
        for i in 0..D {
            prior[i * D + i] = 1.0;
        }
        let clusters = cluster(seeds, &prior, 50.0, 1.0);
        assert_eq!(clusters.len(), 2);
        let mut sizes: Vec<f64> = clusters.iter().map(|c| c.n).collect();
        sizes.sort_by(f64::total_cmp);
        assert_eq!(sizes, vec![14.0 * 30.0, 26.0 * 30.0]);
    }
}
