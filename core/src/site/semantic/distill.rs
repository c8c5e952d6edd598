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

/// A document as the static model sees it: its distinct tokens (indices
/// into the rows being fitted) with each one's share of its tokens.
pub type BagOfTokens = Vec<(u32, f32)>;

/// What a bag's mean row should be: one of the vectors handed to
/// [`fit_rows`], scaled (a bag weighs `scale²` in the least squares when
/// its shares are scaled alike). An index, not a copy: a site's sentences
/// and runs of tokens all point at their page's vector.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    pub vector: u32,
    pub scale: f32,
}

impl Target {
    fn row(self, vectors: &[Vec<f32>]) -> impl Iterator<Item = f32> + '_ {
        vectors[self.vector as usize].iter().map(move |x| x * self.scale)
    }
}

/// Rows fitted so that a document's mean row approaches its target (the
/// encoder's vector of the whole document), pulled toward `prior` where the
/// documents say little: ridge regression, `min ‖A X − Y‖² + λ‖X − P‖²`,
/// solved by conjugate gradients on the normal equations, all columns at
/// once (tokenlearn's idea, on the site's own pages). `strength` sets λ
/// relative to the mean diagonal of `AᵀA`, so it means the same for any
/// corpus size. `prior` is first mapped by the one linear map that best
/// takes its document means onto the targets, so a row no document uses
/// (a query word the site lacks) lands in the targets' space too.
pub fn fit_rows(
    docs: &[BagOfTokens],
    targets: &[Target],
    vectors: &[Vec<f32>],
    prior: &[Vec<f32>],
    strength: f32,
    iterations: usize,
) -> Vec<Vec<f32>> {
    let dim = vectors.first().map_or(0, Vec::len);
    let rows = prior.len();
    if dim == 0 || docs.is_empty() {
        return prior.to_vec();
    }
    let flat = |m: &[Vec<f32>]| m.iter().flat_map(|r| r.iter().copied()).collect::<Vec<f32>>();
    let mut p = flat(prior);
    // A·X (documents × dim) and Aᵀ·D (rows × dim).
    let times = |x: &[f32]| {
        let mut out = vec![0f32; docs.len() * dim];
        for (doc, o) in docs.iter().zip(out.chunks_exact_mut(dim)) {
            for &(t, a) in doc {
                o.iter_mut().zip(&x[t as usize * dim..][..dim]).for_each(|(o, x)| *o += a * x);
            }
        }
        out
    };
    let times_t = |d: &[f32]| {
        let mut out = vec![0f32; rows * dim];
        for (doc, v) in docs.iter().zip(d.chunks_exact(dim)) {
            for &(t, a) in doc {
                out[t as usize * dim..][..dim].iter_mut().zip(v).for_each(|(o, v)| *o += a * v);
            }
        }
        out
    };
    let map = least_squares_map(&times(&p), targets.iter().map(|t| t.row(vectors).collect::<Vec<f32>>()), dim);
    p = p.chunks_exact(dim).flat_map(|row| apply_map(row, &map)).collect();
    let means = times(&p);
    let mut diagonal = vec![0f64; rows];
    for doc in docs {
        for &(t, a) in doc {
            diagonal[t as usize] += f64::from(a * a);
        }
    }
    let used = diagonal.iter().filter(|d| **d > 0.0).count().max(1);
    let lambda = strength * (diagonal.iter().sum::<f64>() / used as f64) as f32;
    let apply = |x: &[f32]| {
        let mut out = times_t(&times(x));
        out.iter_mut().zip(x).for_each(|(o, x)| *o += lambda * x);
        out
    };
    // Solved for the change from the prior: (AᵀA + λI) Δ = Aᵀ(Y − A P).
    let residual_y: Vec<f32> = targets.iter().flat_map(|t| t.row(vectors)).zip(&means).map(|(y, m)| y - m).collect();
    let mut r = times_t(&residual_y);
    let mut delta = vec![0f32; rows * dim];
    let mut dir = r.clone();
    let mut rr = column_dots(&r, &r, dim);
    for _ in 0..iterations {
        let q = apply(&dir);
        let steps: Vec<f32> = rr
            .iter()
            .zip(column_dots(&dir, &q, dim))
            .map(|(rr, denominator)| if denominator > 0.0 { (rr / denominator) as f32 } else { 0.0 })
            .collect();
        for i in 0..rows * dim {
            delta[i] += steps[i % dim] * dir[i];
            r[i] -= steps[i % dim] * q[i];
        }
        let fresh = column_dots(&r, &r, dim);
        for i in 0..rows * dim {
            let c = i % dim;
            let beta = if rr[c] > 0.0 { (fresh[c] / rr[c]) as f32 } else { 0.0 };
            dir[i] = r[i] + beta * dir[i];
        }
        rr = fresh;
    }
    p.iter().zip(&delta).map(|(p, d)| p + d).collect::<Vec<f32>>().chunks(dim.max(1)).map(<[f32]>::to_vec).collect()
}

/// The `dim × dim` map `W` minimising `‖X W − Y‖²` (rows of `x` and `y`
/// flat, `dim` wide), with a touch of ridge so a rank-deficient `X` (a
/// site of few pages) still has one; solved by Cholesky in f64.
#[allow(clippy::needless_range_loop)] // matrix code reads as the math does
fn least_squares_map<R: AsRef<[f32]>>(x: &[f32], y: impl IntoIterator<Item = R>, dim: usize) -> Vec<Vec<f64>> {
    let mut gram = vec![vec![0f64; dim]; dim];
    let mut cross = vec![vec![0f64; dim]; dim];
    for (rx, ry) in x.chunks_exact(dim).zip(y) {
        let ry = ry.as_ref();
        for i in 0..dim {
            let xi = f64::from(rx[i]);
            for j in 0..dim {
                gram[i][j] += xi * f64::from(rx[j]);
                cross[i][j] += xi * f64::from(ry[j]);
            }
        }
    }
    let trace = (0..dim).map(|i| gram[i][i]).sum::<f64>() / dim as f64;
    for i in 0..dim {
        gram[i][i] += 1e-3 * trace.max(f64::MIN_POSITIVE);
    }
    // gram = L Lᵀ
    let mut l = vec![vec![0f64; dim]; dim];
    for i in 0..dim {
        for j in 0..=i {
            let sum: f64 = gram[i][j] - (0..j).map(|k| l[i][k] * l[j][k]).sum::<f64>();
            l[i][j] = if i == j { sum.max(f64::MIN_POSITIVE).sqrt() } else { sum / l[j][j] };
        }
    }
    // Each column of W: L z = c, then Lᵀ w = z.
    let mut map = vec![vec![0f64; dim]; dim];
    for c in 0..dim {
        let mut z = vec![0f64; dim];
        for i in 0..dim {
            z[i] = (cross[i][c] - (0..i).map(|k| l[i][k] * z[k]).sum::<f64>()) / l[i][i];
        }
        for i in (0..dim).rev() {
            map[i][c] = (z[i] - (i + 1..dim).map(|k| l[k][i] * map[k][c]).sum::<f64>()) / l[i][i];
        }
    }
    map
}

/// `row · W`.
fn apply_map(row: &[f32], map: &[Vec<f64>]) -> Vec<f32> {
    let mut out = vec![0f64; map.first().map_or(0, Vec::len)];
    for (&x, w) in row.iter().zip(map) {
        out.iter_mut().zip(w).for_each(|(o, w)| *o += f64::from(x) * w);
    }
    out.into_iter().map(|x| x as f32).collect()
}

/// The dot product of each column of two row-major matrices `dim` wide.
fn column_dots(a: &[f32], b: &[f32], dim: usize) -> Vec<f64> {
    let mut out = vec![0f64; dim];
    for (ra, rb) in a.chunks_exact(dim).zip(b.chunks_exact(dim)) {
        out.iter_mut().zip(ra.iter().zip(rb)).for_each(|(o, (x, y))| *o += f64::from(*x) * f64::from(*y));
    }
    out
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
    quantize_to(v, 127)
}

/// As [`quantize`], to integers in `-limit..=limit`.
pub fn quantize_to(v: &[f32], limit: i8) -> (Vec<i8>, f32) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (vec![0; v.len()], 0.0);
    }
    let limit = f32::from(limit);
    let scale = max / limit;
    (v.iter().map(|x| (x / scale).round().clamp(-limit, limit) as i8).collect(), scale)
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
    fn fitted_rows_reproduce_the_targets_and_keep_to_the_prior_elsewhere() {
        // Rows 0..3 appear in documents whose targets come from known rows;
        // row 3 appears in none.
        let truth = [vec![1.0, 0.0], vec![0.0, 1.0], vec![-1.0, 0.5]];
        let docs: Vec<BagOfTokens> =
            vec![vec![(0, 0.5), (1, 0.5)], vec![(1, 0.25), (2, 0.75)], vec![(0, 1.0)], vec![(2, 0.5), (0, 0.5)]];
        let targets: Vec<Vec<f32>> = docs
            .iter()
            .map(|bag| (0..2).map(|c| bag.iter().map(|&(t, a)| a * truth[t as usize][c]).sum()).collect())
            .collect();
        let prior = vec![vec![0.5, 0.5], vec![0.5, 0.5], vec![0.5, 0.5], vec![0.2, -0.4]];
        let to: Vec<Target> = (0..docs.len() as u32).map(|vector| Target { vector, scale: 1.0 }).collect();
        let fitted = fit_rows(&docs, &to, &targets, &prior, 1e-6, 20);
        for (row, want) in fitted.iter().zip(&truth) {
            assert!(row.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-3), "{row:?} vs {want:?}");
        }
        // A row no document uses is the prior through the same linear map
        // however strongly the others keep to it; a strong prior keeps
        // every row there.
        let stiff = fit_rows(&docs, &to, &targets, &prior, 1e6, 20);
        assert!(fitted[3].iter().zip(&stiff[3]).all(|(a, b)| (a - b).abs() < 1e-4), "{:?} {:?}", fitted[3], stiff[3]);
        let means: Vec<f32> = docs
            .iter()
            .flat_map(|bag| (0..2).map(|c| bag.iter().map(|&(t, a)| a * prior[t as usize][c]).sum::<f32>()))
            .collect();
        let map = least_squares_map(&means, &targets, 2);
        for (row, p) in stiff.iter().zip(&prior) {
            let mapped = apply_map(p, &map);
            assert!(row.iter().zip(&mapped).all(|(a, b)| (a - b).abs() < 1e-3), "{row:?} vs {mapped:?}");
        }
        assert_eq!(fit_rows(&[], &[], &targets, &prior, 1.0, 5), prior, "no documents: the prior");
    }

    #[test]
    fn the_least_squares_map_recovers_a_linear_map() {
        let w = [[2.0f32, -1.0], [0.5, 3.0]];
        let x = [1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0, -2.0, 0.5];
        let y: Vec<f32> = x.chunks(2).flat_map(|r| (0..2).map(move |c| r[0] * w[0][c] + r[1] * w[1][c])).collect();
        let map = least_squares_map(&x, y.chunks(2), 2);
        for i in 0..2 {
            for j in 0..2 {
                assert!((map[i][j] - f64::from(w[i][j])).abs() < 1e-2, "{map:?}");
            }
        }
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
