//! Product quantization of page vectors, so that a query's probed clusters
//! cost a few bytes a page: each page's residual to its cluster's centroid
//! is cut into subspaces of a few dimensions, and each piece stored as the
//! index of its nearest of up to 256 centroids learned for that subspace.
//! A query then scores a page as `q · centroid + Σ table[piece][code]`,
//! the table holding `q`'s dot product with every piece centroid (the
//! "asymmetric distance" of Jégou et al., 2011). A page's codes are packed
//! at the bits the codebook's size needs (6 for 64 centroids), so a smaller
//! codebook shrinks every probed cluster too.

use super::distill;
use super::{Code, read_code};
use crate::site::format::{Cursor, FormatError, Parsed};

/// Most centroids a subspace may have: a code fits a byte.
pub const CODES: usize = 256;

/// Lloyd iterations of each subspace's k-means.
const ITERATIONS: usize = 12;

/// Each subspace's centroids (`codes × sub` values), as stored: int8 with
/// one scale per subspace.
#[derive(Clone, Debug, PartialEq)]
pub struct ProductCodebook {
    /// Dimensions per subspace.
    pub sub: usize,
    /// Centroids per subspace (at most [`CODES`]).
    pub codes: usize,
    /// Per subspace, `codes × sub` values.
    centroids: Vec<Vec<f32>>,
}

impl ProductCodebook {
    /// Learns `dim / sub` subspaces' centroids from `vectors` (`dim` wide,
    /// `sub` dividing it), at most `codes` a subspace.
    pub fn train(vectors: &[Vec<f32>], dim: usize, sub: usize, codes: usize) -> ProductCodebook {
        assert!(sub > 0 && dim.is_multiple_of(sub), "subspaces of {sub} do not tile {dim} dimensions");
        let codes = vectors.len().min(codes).clamp(1, CODES);
        let centroids = (0..dim / sub)
            .map(|s| {
                let pieces: Vec<&[f32]> = vectors.iter().map(|v| &v[s * sub..(s + 1) * sub]).collect();
                // Stored as int8, so pieces are encoded against what the
                // page will read.
                let (code, scale) = distill::quantize(&kmeans(&pieces, sub, codes));
                code.iter().map(|&c| f32::from(c) * scale).collect()
            })
            .collect();
        ProductCodebook { sub, codes, centroids }
    }

    /// Each subspace's nearest centroid to `v`'s piece.
    pub fn encode(&self, v: &[f32]) -> Vec<u8> {
        self.centroids
            .iter()
            .zip(v.chunks_exact(self.sub))
            .map(|(centroids, piece)| nearest(centroids, self.sub, piece) as u8)
            .collect()
    }

    /// `q`'s dot product with every centroid of every subspace.
    pub fn table(&self, q: &[f32]) -> Vec<f32> {
        self.centroids
            .iter()
            .zip(q.chunks_exact(self.sub))
            .flat_map(|(centroids, piece)| {
                centroids.chunks_exact(self.sub).map(move |c| c.iter().zip(piece).map(|(a, b)| a * b).sum::<f32>())
            })
            .collect()
    }

    /// A page's residual score from its codes: `Σ table[piece][code]`.
    pub fn score(&self, table: &[f32], codes: &[u8]) -> f32 {
        codes.iter().enumerate().map(|(s, &c)| table[s * self.codes + usize::from(c)]).sum()
    }

    /// Subspaces.
    pub fn pieces(&self) -> usize {
        self.centroids.len()
    }

    /// Bits of one packed code: enough to name every centroid.
    pub fn bits(&self) -> usize {
        (usize::BITS - (self.codes - 1).leading_zeros()).max(1) as usize
    }

    /// Bytes of one page's packed codes.
    pub fn packed_len(&self) -> usize {
        (self.pieces() * self.bits()).div_ceil(8)
    }

    /// A page's codes (from [`Self::encode`]) packed at [`Self::bits`] each.
    pub fn pack(&self, codes: &[u8]) -> Vec<u8> {
        pack_bits(codes, self.bits())
    }

    /// One code a subspace from a page's packed bytes ([`Self::packed_len`]
    /// of them); `None` when a code names a centroid the codebook lacks.
    pub fn unpack(&self, packed: &[u8]) -> Option<Vec<u8>> {
        let codes = unpack_bits(packed, self.bits(), self.pieces());
        codes.iter().all(|&c| usize::from(c) < self.codes).then_some(codes)
    }

    pub(crate) fn put(&self, out: &mut Vec<u8>) {
        crate::index::codec::put_vint(out, self.sub as u64);
        crate::index::codec::put_vint(out, self.codes as u64);
        for centroids in &self.centroids {
            // Already int8 values: quantizing them again gives their codes.
            Code::of(centroids).put(out);
        }
    }

    /// Reads a codebook of `dim` dimensions.
    pub(crate) fn read(r: &mut Cursor<'_>, dim: usize) -> Parsed<ProductCodebook> {
        let (sub, codes) = (r.usize()?, r.usize()?);
        if sub == 0 || !dim.is_multiple_of(sub) || codes == 0 || codes > CODES {
            return Err(FormatError("product codebook shape out of range"));
        }
        let centroids = (0..dim / sub).map(|_| Ok(read_code(r, codes * sub)?.to_f32())).collect::<Parsed<Vec<_>>>()?;
        Ok(ProductCodebook { sub, codes, centroids })
    }
}

/// `values` at their low `bits` each, low bits first: packed page codes
/// and 4-bit rows share this layout.
pub(crate) fn pack_bits(values: &[u8], bits: usize) -> Vec<u8> {
    let mut out = vec![0u8; (values.len() * bits).div_ceil(8)];
    for (i, &v) in values.iter().enumerate() {
        for b in 0..bits {
            let at = i * bits + b;
            out[at / 8] |= ((v >> b) & 1) << (at % 8);
        }
    }
    out
}

/// The first `n` values of [`pack_bits`]' output (`packed` holds at least
/// `n × bits` bits).
pub(crate) fn unpack_bits(packed: &[u8], bits: usize, n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| {
            (0..bits).fold(0u8, |v, b| {
                let at = i * bits + b;
                v | ((packed[at / 8] >> (at % 8)) & 1) << b
            })
        })
        .collect()
}

/// The index of the centroid nearest `piece` (squared distance; the lower
/// index on a tie).
fn nearest(centroids: &[f32], sub: usize, piece: &[f32]) -> usize {
    let distance = |c: &[f32]| c.iter().zip(piece).map(|(a, b)| (a - b) * (a - b)).sum::<f32>();
    centroids
        .chunks_exact(sub)
        .enumerate()
        .min_by(|(i, a), (j, b)| distance(a).total_cmp(&distance(b)).then(i.cmp(j)))
        .map_or(0, |(i, _)| i)
}

/// `k` centroids of `pieces` (each `sub` wide) by Lloyd's algorithm from
/// evenly spaced pieces, flattened; a centroid that loses every piece
/// keeps its place.
fn kmeans(pieces: &[&[f32]], sub: usize, k: usize) -> Vec<f32> {
    let mut centroids: Vec<f32> =
        (0..k).flat_map(|i| pieces.get(i * pieces.len() / k).map_or(vec![0.0; sub], |p| p.to_vec())).collect();
    let mut assign = vec![0usize; pieces.len()];
    for _ in 0..ITERATIONS {
        for (piece, slot) in pieces.iter().zip(assign.iter_mut()) {
            *slot = nearest(&centroids, sub, piece);
        }
        let mut sums = vec![0f64; k * sub];
        let mut counts = vec![0usize; k];
        for (piece, &c) in pieces.iter().zip(&assign) {
            counts[c] += 1;
            sums[c * sub..][..sub].iter_mut().zip(*piece).for_each(|(s, &x)| *s += f64::from(x));
        }
        for (c, &count) in counts.iter().enumerate().filter(|&(_, &count)| count > 0) {
            for (value, sum) in centroids[c * sub..][..sub].iter_mut().zip(&sums[c * sub..][..sub]) {
                *value = (sum / count as f64) as f32;
            }
        }
    }
    centroids
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform(mut seed: u32) -> impl FnMut() -> f32 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            (seed as f32 / u32::MAX as f32) * 2.0 - 1.0
        }
    }

    #[test]
    fn codes_score_close_to_the_true_dot_product() {
        let mut next = uniform(7);
        let vectors: Vec<Vec<f32>> = (0..600).map(|_| (0..16).map(|_| next() * 0.3).collect()).collect();
        let book = ProductCodebook::train(&vectors, 16, 4, CODES);
        assert_eq!((book.pieces(), book.codes, book.packed_len()), (4, CODES, 4));
        let q: Vec<f32> = (0..16).map(|_| next()).collect();
        let table = book.table(&q);
        let (mut error, mut spread) = (0f32, 0f32);
        for v in &vectors {
            let exact: f32 = v.iter().zip(&q).map(|(a, b)| a * b).sum();
            error += (book.score(&table, &book.encode(v)) - exact).powi(2);
            spread += exact.powi(2);
        }
        // 256 centroids for 600 pieces of 4 values: most pieces are close.
        assert!(error < 0.05 * spread, "error {error} against {spread}");
    }

    #[test]
    fn few_vectors_get_as_many_codes_and_round_trip() {
        let vectors = vec![vec![1.0, 0.0, 0.5, -0.5], vec![0.0, 1.0, -0.5, 0.5], vec![0.2, 0.2, 0.2, 0.2]];
        let book = ProductCodebook::train(&vectors, 4, 2, CODES);
        assert_eq!((book.codes, book.bits(), book.packed_len()), (3, 2, 1));
        for (i, v) in vectors.iter().enumerate() {
            assert!(book.encode(v).iter().all(|&c| usize::from(c) == i), "each vector its own code");
        }
        let mut bytes = Vec::new();
        book.put(&mut bytes);
        let read = ProductCodebook::read(&mut Cursor::open(&bytes, b"", "").unwrap(), 4).unwrap();
        assert_eq!(read, book, "stored as int8 already");
        for cut in 0..bytes.len() {
            assert!(
                ProductCodebook::read(&mut Cursor::open(&bytes[..cut], b"", "").unwrap(), 4).is_err(),
                "cut at {cut}"
            );
        }
        assert!(
            ProductCodebook::read(&mut Cursor::open(&bytes, b"", "").unwrap(), 6).is_err(),
            "a third subspace is missing"
        );
    }

    #[test]
    fn packed_codes_round_trip_at_every_width_and_unknown_codes_are_refused() {
        let mut next = uniform(3);
        let vectors: Vec<Vec<f32>> = (0..300).map(|_| (0..12).map(|_| next()).collect()).collect();
        for (codes, bits, packed) in [(2, 1, 2), (16, 4, 6), (64, 6, 9), (100, 7, 11), (256, 8, 12)] {
            let book = ProductCodebook::train(&vectors, 12, 1, codes);
            assert_eq!((book.bits(), book.packed_len()), (bits, packed), "{codes} codes");
            for v in &vectors[..20] {
                let code = book.encode(v);
                assert_eq!(book.unpack(&book.pack(&code)).as_ref(), Some(&code));
            }
        }
        // 100 centroids in 7 bits: 127 names none of them.
        let book = ProductCodebook::train(&vectors, 12, 1, 100);
        assert_eq!(book.unpack(&[0xff; 11]), None);
    }
}
