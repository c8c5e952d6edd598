//! Build-time math of the semantic tier: a static embedding table distilled
//! from a sentence encoder (the model2vec method: every vocabulary token
//! embedded by the encoder, reduced by PCA, weighted by how rare the token
//! is in this corpus), document vectors as the weighted mean of their
//! tokens' rows, and an IVF partition of those vectors (spherical k-means).

/// Principal axes of `rows` (each `dim` wide): the mean and the top `keep`
/// eigenvectors of the covariance, largest variance first.
#[allow(clippy::needless_range_loop)] // matrix code reads as the math does
pub fn pca(rows: &[Vec<f32>], dim: usize, keep: usize) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = rows.len().max(1) as f64;
    let mut mean = vec![0f64; dim];
    for row in rows {
        for (m, &x) in mean.iter_mut().zip(row) {
            *m += f64::from(x) / n;
        }
    }
    let mut cov = vec![vec![0f64; dim]; dim];
    let mut centred = vec![0f64; dim];
    for row in rows {
        for (c, (&x, m)) in centred.iter_mut().zip(row.iter().zip(&mean)) {
            *c = f64::from(x) - m;
        }
        for i in 0..dim {
            let ci = centred[i];
            for (j, cj) in centred.iter().enumerate().skip(i) {
                cov[i][j] += ci * cj;
            }
        }
    }
    for i in 0..dim {
        for j in i..dim {
            cov[i][j] /= n;
            cov[j][i] = cov[i][j];
        }
    }
    let (values, vectors) = symmetric_eigen(cov);
    let mut order: Vec<usize> = (0..dim).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    let axes = order.into_iter().take(keep.min(dim)).map(|k| (0..dim).map(|i| vectors[i][k]).collect()).collect();
    (mean, axes)
}

/// Eigenvalues and eigenvectors (columns) of a symmetric matrix, by cyclic
/// Jacobi rotations: slow for large matrices, exact and dependency-free for
/// the few hundred dimensions of a sentence encoder.
#[allow(clippy::needless_range_loop)] // matrix code reads as the math does
pub fn symmetric_eigen(mut a: Vec<Vec<f64>>) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = a.len();
    let mut v: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| f64::from(u8::from(i == j))).collect()).collect();
    for _sweep in 0..64 {
        let off: f64 = (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))).map(|(i, j)| a[i][j] * a[i][j]).sum();
        let scale: f64 = (0..n).map(|i| a[i][i] * a[i][i]).sum::<f64>().max(f64::MIN_POSITIVE);
        if off <= 1e-22 * scale {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if a[p][q].abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k][p], a[k][q]);
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p][k], a[q][k]);
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for row in v.iter_mut() {
                    let (vkp, vkq) = (row[p], row[q]);
                    row[p] = c * vkp - s * vkq;
                    row[q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i][i]).collect(), v)
}

/// Projects `row` onto the PCA axes.
pub fn project(row: &[f32], mean: &[f64], axes: &[Vec<f64>]) -> Vec<f32> {
    axes.iter()
        .map(|axis| {
            axis.iter().zip(row.iter().zip(mean)).map(|(a, (&x, m))| a * (f64::from(x) - m)).sum::<f64>() as f32
        })
        .collect()
}

/// SIF weights (Arora et al.; model2vec's): `a / (a + p(token))` with
/// `p` the token's share of all tokens in the corpus.
pub fn sif_weights(counts: &[u64], a: f64) -> Vec<f32> {
    let total = counts.iter().sum::<u64>().max(1) as f64;
    counts.iter().map(|&c| (a / (a + c as f64 / total)) as f32).collect()
}

/// Scales `v` to unit length (zero stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// int8 codes of `v` and the scale that restores it (`x ≈ code * scale`).
pub fn quantize(v: &[f32]) -> (Vec<i8>, f32) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (vec![0; v.len()], 0.0);
    }
    let scale = max / 127.0;
    (v.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8).collect(), scale)
}

/// Spherical k-means over unit vectors: `k` centroids (unit) and each
/// vector's cluster. Seeded deterministically (evenly spaced vectors), so
/// a rebuild of the same site gives the same bundle.
pub fn kmeans(vectors: &[Vec<f32>], k: usize, iterations: usize) -> (Vec<Vec<f32>>, Vec<usize>) {
    let k = k.clamp(1, vectors.len().max(1));
    let dim = vectors.first().map_or(0, Vec::len);
    let mut centroids: Vec<Vec<f32>> =
        (0..k).map(|i| vectors.get(i * vectors.len() / k).cloned().unwrap_or_default()).collect();
    let mut assign = vec![0usize; vectors.len()];
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    for _ in 0..iterations {
        for (v, slot) in vectors.iter().zip(assign.iter_mut()) {
            *slot = (0..k)
                .max_by(|&a, &b| dot(v, &centroids[a]).total_cmp(&dot(v, &centroids[b])).then(b.cmp(&a)))
                .unwrap_or(0);
        }
        let mut sums = vec![vec![0f32; dim]; k];
        for (v, &c) in vectors.iter().zip(&assign) {
            sums[c].iter_mut().zip(v).for_each(|(s, x)| *s += x);
        }
        for (c, mut sum) in sums.into_iter().enumerate() {
            if sum.iter().any(|x| *x != 0.0) {
                normalize(&mut sum);
                centroids[c] = sum;
            }
        }
    }
    (centroids, assign)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobi_finds_the_eigenpairs() {
        let a = vec![vec![4.0, 1.0, 0.0], vec![1.0, 3.0, 1.0], vec![0.0, 1.0, 2.0]];
        let (values, vectors) = symmetric_eigen(a.clone());
        for k in 0..3 {
            for i in 0..3 {
                let av: f64 = (0..3).map(|j| a[i][j] * vectors[j][k]).sum();
                assert!((av - values[k] * vectors[i][k]).abs() < 1e-9);
            }
        }
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        assert!((sorted.iter().sum::<f64>() - 9.0).abs() < 1e-9, "trace is kept");
    }

    #[test]
    fn pca_keeps_the_direction_of_most_variance() {
        let rows: Vec<Vec<f32>> = (0..50).map(|i| vec![i as f32, 0.1 * (i % 3) as f32, 5.0]).collect();
        let (mean, axes) = pca(&rows, 3, 1);
        assert!((mean[2] - 5.0).abs() < 1e-9);
        assert!(axes[0][0].abs() > 0.999, "{:?}", axes[0]);
    }

    #[test]
    fn quantize_weights_and_clusters() {
        let (codes, scale) = quantize(&[0.5, -1.0, 0.25]);
        assert_eq!(codes, [64, -127, 32]);
        assert!((codes[1] as f32 * scale + 1.0).abs() < 1e-6);
        let w = sif_weights(&[0, 1, 99], 1e-3);
        assert!(w[0] == 1.0 && w[1] > w[2]);
        let vectors = vec![vec![1.0, 0.0], vec![0.99, 0.14], vec![0.0, 1.0], vec![0.14, 0.99]];
        let (centroids, assign) = kmeans(&vectors, 2, 5);
        assert_eq!(centroids.len(), 2);
        assert_eq!(assign[0], assign[1]);
        assert_eq!(assign[2], assign[3]);
        assert_ne!(assign[0], assign[2]);
    }
}
