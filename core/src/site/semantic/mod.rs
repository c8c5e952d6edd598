//! The semantic tier of a site bundle, asymmetric: pages are the sentence
//! encoder's vectors of them, computed at build time; a query is the mean
//! of static rows, distilled from the encoder and fitted to those page
//! vectors ([`distill`]), and tokenized in the page ([`wordpiece`]). Page
//! vectors lie in IVF clusters, so a query fetches the vocabulary shards
//! its words can match, its tokens' rows and a few clusters, never all
//! vectors: the clusters nearest the query, and those of its best keyword
//! hits. Pages are numbered cluster by cluster ([`SemanticFiles::order`]),
//! so a page's cluster is known from its number alone.
//!
//! ```text
//! semantic meta  "QMDSEMA7" vint dim, vint tokens, vint rows per shard,
//!                vint bits a row value (8, or 4: two a byte),
//!                8 bytes rows set id, 8 bytes vocabulary set id,
//!                vint [UNK] id + 1 (0: none), vint probes,
//!                f32 minimum similarity, f32 fusion weight,
//!                product codebook (vint dims per subspace, vint codes;
//!                per subspace: f32 scale, codes × dims i8),
//!                vint probe dims; vint clusters; per cluster: f32 scale,
//!                probe dims i8 (its centroid's first values), 8 bytes
//!                file id, vint pages (numbered on from the cluster
//!                before's)
//! vocabulary     "QMDVOCB2" vint tokens; per token (id order): vint id
//! shard          delta, vint length, UTF-8 bytes (see wordpiece::shard_key)
//! rows shard     "QMDROWS2" vint rows; per row: f32 scale, dim values
//!                at the meta's bits (4: low nibble first, each value + 8)
//! cluster        "QMDCLUS6" vint first page (it makes each cluster's
//!                file, so its name, its own), f32 scale, dim i8
//!                centroid, vint pages; per page, in number order: its
//!                residual to the centroid as one code per subspace, packed
//!                at the codebook's bits ([`pq`])
//! ```

pub mod distill;
pub mod pq;
pub mod wordpiece;

use std::collections::{BTreeMap, HashMap, HashSet};

use super::format::{Cursor, FileId, FormatError, Parsed, file_id, id_hex, parse_id_hex};
use crate::index::codec::{put_bytes, put_vint};
pub use wordpiece::WordPiece;

pub const SEMANTIC_MAGIC: &[u8] = b"QMDSEMA7";
const VOCAB_MAGIC: &[u8] = b"QMDVOCB2";
const ROWS_MAGIC: &[u8] = b"QMDROWS2";
const CLUSTER_MAGIC: &[u8] = b"QMDCLUS6";

/// Embeds texts with the full encoder: one unit vector each, the encoder's
/// width (the encoder cuts each text to its window).
pub type DocumentEncoder = Box<dyn Fn(&[String]) -> Result<Vec<Vec<f32>>, String>>;

/// What the host hands the builder: the encoder's vocabulary and each
/// token's embedding (zeros for special tokens).
pub struct SemanticInput {
    pub vocab: Vec<String>,
    pub token_vectors: Vec<Vec<f32>>,
    /// Dimensions kept by PCA (at most the encoder's).
    pub dim: usize,
    /// Rows per rows shard.
    pub rows_per_shard: usize,
    /// How each row value is stored.
    pub row_width: RowWidth,
    /// Clusters a query reads.
    pub probes: usize,
    /// Cosine below which a semantic hit is dropped (vector search always
    /// finds a nearest page; this floor is the site owner's say in how
    /// near).
    pub min_similarity: f32,
    /// The encoder, for the pages: a page is searched by the encoder's
    /// vector of the whole page, and the static rows a query is made of are
    /// fitted to those vectors.
    pub encode_documents: DocumentEncoder,
}

/// How a static row's values are stored: a byte each, or 4 bits (two a
/// byte: half the bytes a query fetches).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowWidth {
    Int8,
    Int4,
}

impl RowWidth {
    /// Bits a value, as the meta stores it.
    fn bits(self) -> u64 {
        match self {
            RowWidth::Int8 => 8,
            RowWidth::Int4 => 4,
        }
    }

    fn from_bits(bits: usize) -> Option<RowWidth> {
        match bits {
            8 => Some(RowWidth::Int8),
            4 => Some(RowWidth::Int4),
            _ => None,
        }
    }

    /// The largest value's magnitude (4 bits: -7..=7, so 0 is exact).
    fn largest(self) -> i8 {
        match self {
            RowWidth::Int8 => 127,
            RowWidth::Int4 => 7,
        }
    }

    /// Bytes of one stored row of `dim` values: the f32 scale, then them.
    fn row_bytes(self, dim: usize) -> usize {
        4 + match self {
            RowWidth::Int8 => dim,
            RowWidth::Int4 => dim.div_ceil(2),
        }
    }
}

/// An int8 vector with its scale.
#[derive(Clone, Debug, PartialEq)]
pub struct Code {
    pub scale: f32,
    pub code: Vec<i8>,
}

impl Code {
    fn of(v: &[f32]) -> Code {
        let (code, scale) = distill::quantize(v);
        Code { scale, code }
    }

    fn to_f32(&self) -> Vec<f32> {
        self.code.iter().map(|&c| f32::from(c) * self.scale).collect()
    }

    fn dot(&self, q: &[f32]) -> f32 {
        self.code.iter().zip(q).map(|(&c, x)| f32::from(c) * x).sum::<f32>() * self.scale
    }

    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.scale.to_le_bytes());
        out.extend(self.code.iter().map(|&c| c as u8));
    }

    /// `v` quantized to `width`.
    fn at_width(v: &[f32], width: RowWidth) -> Code {
        let (code, scale) = distill::quantize_to(v, width.largest());
        Code { scale, code }
    }

    /// As stored at `width`: [`Self::put`] for int8; for 4 bits, two values
    /// a byte, low nibble first, each offset by 8.
    fn put_at_width(&self, width: RowWidth, out: &mut Vec<u8>) {
        if width == RowWidth::Int8 {
            return self.put(out);
        }
        out.extend_from_slice(&self.scale.to_le_bytes());
        let offset: Vec<u8> = self.code.iter().map(|&c| (c + 8) as u8).collect();
        out.extend(pq::pack_bits(&offset, 4));
    }
}

/// A row as [`Code::put_at_width`] stores it.
fn read_row(r: &mut Cursor<'_>, dim: usize, width: RowWidth) -> Parsed<Code> {
    if width == RowWidth::Int8 {
        return read_code(r, dim);
    }
    let scale = r.f32()?;
    if !scale.is_finite() {
        return Err(FormatError("vector scale is not a number"));
    }
    let packed = r.take(dim.div_ceil(2))?;
    let code = pq::unpack_bits(packed, 4, dim).into_iter().map(|v| v as i8 - 8).collect();
    Ok(Code { scale, code })
}

/// An int8 vector as stored: f32 scale, then `dim` codes.
fn read_code(r: &mut Cursor<'_>, dim: usize) -> Parsed<Code> {
    let scale = r.f32()?;
    if !scale.is_finite() {
        return Err(FormatError("vector scale is not a number"));
    }
    Ok(Code { scale, code: r.take(dim)?.iter().map(|&b| b as i8).collect() })
}

/// The semantic meta file.
#[derive(Clone, Debug, PartialEq)]
pub struct SemanticMeta {
    pub dim: usize,
    pub tokens: usize,
    pub rows_per_shard: usize,
    /// Bits of a row value: 8 or 4.
    pub row_width: RowWidth,
    pub rows: FileId,
    pub vocab: FileId,
    pub unk: Option<u32>,
    pub probes: usize,
    pub min_similarity: f32,
    /// The semantic list's share of the fusion (the keyword list has the
    /// rest; see [`super::fuse`]), from 0 to 1.
    pub weight: f32,
    /// How pages' residuals to their centroid are coded.
    pub codebook: pq::ProductCodebook,
    /// Leading dimensions of a cluster's centroid the meta holds, to
    /// choose the clusters a query reads (see [`PROBE_DIMS`]).
    pub probe_dims: usize,
    /// Per cluster: its probe, its file's id and its pages' count (the
    /// first cluster's pages are numbered from 0, each next one's on).
    pub clusters: Vec<Cluster>,
}

/// One IVF cluster as the meta holds it: the whole centroid is in its file.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    /// The centroid's first [`SemanticMeta::probe_dims`] values.
    pub probe: Code,
    pub file: FileId,
    pub pages: u32,
}

impl SemanticMeta {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = SEMANTIC_MAGIC.to_vec();
        for n in [self.dim, self.tokens, self.rows_per_shard] {
            put_vint(&mut out, n as u64);
        }
        put_vint(&mut out, self.row_width.bits());
        out.extend_from_slice(&self.rows);
        out.extend_from_slice(&self.vocab);
        put_vint(&mut out, self.unk.map_or(0, |id| u64::from(id) + 1));
        put_vint(&mut out, self.probes as u64);
        out.extend_from_slice(&self.min_similarity.to_le_bytes());
        out.extend_from_slice(&self.weight.to_le_bytes());
        self.codebook.put(&mut out);
        put_vint(&mut out, self.probe_dims as u64);
        put_vint(&mut out, self.clusters.len() as u64);
        for cluster in &self.clusters {
            cluster.probe.put(&mut out);
            out.extend_from_slice(&cluster.file);
            put_vint(&mut out, u64::from(cluster.pages));
        }
        out
    }

    pub fn decode(data: &[u8]) -> Parsed<SemanticMeta> {
        let mut r = Cursor::open(data, SEMANTIC_MAGIC, "not a qmd semantic file, or another version")?;
        let (dim, tokens, rows_per_shard) = (r.usize()?, r.usize()?, r.usize()?);
        if dim == 0 || dim > 4096 || rows_per_shard == 0 {
            return Err(FormatError("vector dimension out of range"));
        }
        let row_width = RowWidth::from_bits(r.usize()?).ok_or(FormatError("row bits neither 4 nor 8"))?;
        let (rows, vocab) = (r.id()?, r.id()?);
        let unk = match r.usize()? {
            0 => None,
            n => Some(u32::try_from(n - 1).map_err(|_| FormatError("[UNK] id out of range"))?),
        };
        let probes = r.usize()?;
        let min_similarity = r.f32()?;
        let weight = r.f32()?;
        if !(0.0..=1.0).contains(&weight) {
            return Err(FormatError("fusion weight out of range"));
        }
        let codebook = pq::ProductCodebook::read(&mut r, dim)?;
        let probe_dims = r.usize()?;
        if probe_dims == 0 || probe_dims > dim {
            return Err(FormatError("probe dimensions out of range"));
        }
        let n = r.count(probe_dims + 13)?;
        let mut numbered = 0u32;
        let mut clusters = Vec::with_capacity(n);
        for _ in 0..n {
            let (probe, file) = (read_code(&mut r, probe_dims)?, r.id()?);
            let pages = r.u32()?;
            numbered = numbered.checked_add(pages).ok_or(FormatError("cluster pages out of range"))?;
            clusters.push(Cluster { probe, file, pages });
        }
        Ok(SemanticMeta {
            dim,
            tokens,
            rows_per_shard,
            row_width,
            rows,
            vocab,
            unk,
            probes,
            min_similarity,
            weight,
            codebook,
            probe_dims,
            clusters,
        })
    }

    pub fn vocab_name(&self, key: &str) -> String {
        format!("w/{}/{key}.bin", id_hex(&self.vocab))
    }

    pub fn rows_name(&self, shard: usize) -> String {
        format!("r/{}/{shard}.bin", id_hex(&self.rows))
    }

    pub fn cluster_name(&self, cluster: usize) -> String {
        cluster_file_name(&self.clusters[cluster].file)
    }

    /// Which of this tier's files `name` is.
    fn file(&self, name: &str) -> Option<TierFile> {
        let in_set = |dir: &str, set: &FileId| {
            name.strip_prefix(dir)?.strip_prefix(id_hex(set).as_str())?.strip_prefix('/')?.strip_suffix(".bin")
        };
        if let Some(key) = in_set("w/", &self.vocab) {
            return Some(TierFile::Vocab(key.to_string()));
        }
        if let Some(shard) = in_set("r/", &self.rows) {
            return shard.parse().ok().map(TierFile::Rows);
        }
        // By id, not by formatting every cluster's name: 473 clusters at
        // MDN's size, and a query looks up each file it loads.
        let id = cluster_file_id(name)?;
        self.clusters.iter().position(|c| c.file == id).map(TierFile::Cluster)
    }
}

/// The name of the cluster file whose id is `id`.
fn cluster_file_name(id: &FileId) -> String {
    format!("v/{}.bin", id_hex(id))
}

/// The id a cluster file's name holds: [`cluster_file_name`]'s inverse.
fn cluster_file_id(name: &str) -> Option<FileId> {
    parse_id_hex(name.strip_prefix("v/")?.strip_suffix(".bin")?)
}

/// The kinds of file a query loads.
enum TierFile {
    Vocab(String),
    Rows(usize),
    Cluster(usize),
}

/// The files of the semantic tier, named, and its meta's name.
pub struct SemanticFiles {
    pub files: Vec<(String, Vec<u8>)>,
    pub meta: String,
    /// The pages in the order the bundle must number them (each entry an
    /// index into the builder's `docs`): cluster by cluster, so that the
    /// page knows a keyword hit's cluster from its number.
    pub order: Vec<u32>,
    /// The site's words that became tokens of their own (see
    /// [`SITE_WORD_MIN_PAGES`]).
    pub site_words: usize,
}

/// How strongly fitted rows keep to the distilled ones (ridge λ relative
/// to the documents' own weight on a row; see [`distill::fit_rows`]), and
/// the conjugate-gradient steps of the fit. A weaker pull needs more steps
/// to pay: fused nDCG@10 over keyword alone (keyword hits scored as
/// [`SemanticIndex::search`] does), SciFact train / NFCorpus dev,
/// 0.3 and 60 steps +0.011 / +0.023; 0.3 and 200 +0.011 / +0.022; 0.1 and
/// 120 +0.015 / +0.022; 0.1 and 200 +0.016 / +0.023; 0.1 and 400 +0.015 /
/// +0.023; 0.03 and 200 +0.017 / +0.020.
const FIT_STRENGTH: f32 = 0.1;
const FIT_ITERATIONS: usize = 200;

/// A page's sentences of at least this many tokens are fitted too, each to
/// its page's vector: short texts like a query's should find the page
/// (SciFact train: 0.553 → 0.568).
const MIN_SENTENCE_TOKENS: usize = 5;

/// A page's tokens are also fitted in runs of this many, each to its
/// page's vector, scaled by [`WINDOW_SCALE`] (bag and target, so a run
/// weighs its square, 0.25, in the least squares: a page's runs then weigh
/// about what its sentences do). Short queries gain (NFCorpus), where runs
/// at full weight cost SciFact's long ones. nDCG@10 of the semantic list
/// alone, SciFact train / NFCorpus dev, with [`SITE_WORD_MIN_PAGES`]:
/// no runs 0.594 / 0.294; runs of 8 at full weight 0.586 / 0.313; of 4
/// 0.553 / 0.309; of 8 at 0.5 0.593 / 0.310 (fused 0.715 / 0.317, 0.715 /
/// 0.322, 0.715 / 0.323, 0.715 / 0.320; NFCorpus train, 2,590 queries,
/// 0.339, 0.343, 0.342, 0.342).
const WINDOW_TOKENS: usize = 8;
const WINDOW_SCALE: f32 = 0.5;

/// A word of the site that the encoder's vocabulary splits into pieces
/// becomes a token of its own when at least this many pages use it: its
/// row is fitted to what it means on this site instead of being the mean
/// of rows its pieces share with other words (model2vec's vocabulary
/// extension). nDCG@10 of the semantic list alone, SciFact train / NFCorpus
/// dev: no site words 0.570 / 0.298, words of 5 pages or more 0.594 /
/// 0.294 (fused 0.712 / 0.316 → 0.715 / 0.317; 2 pages 0.715 / 0.317, 20
/// pages 0.715 / 0.316). A word more than half the pages use (the site's
/// name, boilerplate) says nothing about any one page, whose vectors have
/// their mean removed, and stays in pieces: on the 8-page test fixture its
/// own row let "how to install on a mac" rank the compression guide above
/// the install page (no bench site has such a word: their bundles are the
/// same with or without this rule).
const SITE_WORD_MIN_PAGES: usize = 5;

/// Longer words stay in pieces: a site word costs its characters in a
/// vocabulary shard every query starting with its first two letters loads.
const SITE_WORD_MAX_CHARS: usize = 40;

/// Dimensions a product code's subspace spans: 2, or 1 where the width is
/// odd.
fn subspace_dims(dim: usize) -> usize {
    if dim.is_multiple_of(2) { 2 } else { 1 }
}

/// Centroids a subspace's codebook has: 16, four bits a code, so a page is
/// 32 bytes at 128 dimensions and the codebook 2 KB. Chosen by SciFact's
/// test queries on the MDN-sized site (14,000 pages; nDCG@10, keyword alone
/// 0.674), where the codes matter more than on a site of SciFact alone:
/// 16 centroids of 2 dimensions 0.687; 256 of 4 (32 bytes, a 32 KB
/// codebook) 0.678; 32 of 4 (20 bytes) 0.667; 256 of 8 (16 bytes) 0.672.
/// On SciFact train / NFCorpus dev, each site alone: 0.704 / 0.313, 0.705 /
/// 0.309, 0.703 / 0.311, 0.704 / 0.310.
const PAGE_CODES: usize = 16;

/// Keyword hits whose clusters a query reads besides the `probes` nearest
/// ones: the semantic list then holds the pages the keyword tier ranks
/// best, which fusion reorders by meaning. Most of the tier's gain is
/// that reordering: with 2√N clusters (see [`CLUSTERS_PER_ROOT`]), fused
/// nDCG@10 on SciFact train / NFCorpus dev / SciFact's test queries on the
/// MDN-sized site of 14,000 pages (keyword alone 0.698 / 0.291 / 0.674;
/// clusters read a query there, KB of them): 10 nearest and no hits'
/// 0.699 / – / –; 10 and 3 0.713 / 0.317 / 0.689 (10.8, 21.8 KB); 5 and 5
/// 0.711 / 0.316 / 0.690 (6.7, 14.0); 4 and 6 0.712 / 0.316 / 0.689 (6.3,
/// 13.1); 6 and 4 0.711 / 0.316 / 0.687 (7.3); 5 and 8 0.711 / 0.317 /
/// 0.691 (7.9); 4 and 4 0.711 / 0.315 / 0.684 (5.5); 0 and 10 0.713 /
/// 0.316 / 0.687 (6.0; nothing for a query without keyword hits). The
/// default read 4 nearest and 6 hits' clusters: the quality of 10 and 3
/// for 60% of the bytes. At 256 dimensions and 4√N clusters (see
/// [`CLUSTERS_PER_ROOT`]) it reads 3 nearest (`--probes` 3) and 6 hits':
/// 4 nearest gave 0.7188 / 0.3217 / 0.698 (6.7 clusters, 15.8 KB), 3
/// 0.7183 / 0.3219 / 0.695 (5.8, 13.9 KB), 5 hits' instead of 6 0.7181 /
/// 0.3217 / 0.693 (6.2, 14.6 KB); a later search at MDN's size with 4
/// nearest read 61 KB (median), over Pagefind's 60.
pub const KEYWORD_PROBES: usize = 6;

/// IVF clusters per square root of the pages. Twice √N halves each
/// cluster's file, so a query reads its 10 nearest and 3 keyword hits'
/// for the bytes 5 and 3 of √N cost. At MDN's size (14,000 pages, SciFact's
/// test queries): √N, 5 nearest: nDCG@10 0.689, a later search 63 KB
/// (median), its meta 18 KB; 2√N, 10 nearest: 0.692, 59 KB, a 33 KB meta.
/// SciFact train / NFCorpus dev alike (0.716 / 0.316, 0.717 / 0.315).
/// At 256 dimensions a page's code is 64 bytes, twice 128's, so four
/// times √N keeps a cluster's file the size 2√N gave at 128 (and the meta
/// holds only each centroid's first [`PROBE_DIMS`]): SciFact train /
/// NFCorpus dev fused, weight 0.4, 2√N 0.7205 / 0.3252, 4√N 0.7207 /
/// 0.3221, 4√N with 64 probe dimensions 0.7188 / 0.3217.
const CLUSTERS_PER_ROOT: f64 = 4.0;

/// Leading dimensions of each cluster's centroid the meta holds to choose
/// the clusters a query reads; the whole centroid, which scores the
/// cluster's pages, is in the cluster's own file. Dimensions come from the
/// PCA, most variance first, so a few choose as well as all: SciFact
/// train / NFCorpus dev fused nDCG@10 at 256 dimensions, 2√N clusters: all
/// 0.7205 / 0.3252, 64 0.7207 / 0.3250, 32 0.7193 / 0.3260. The meta a
/// first search reads then holds 64 bytes a cluster at any width.
const PROBE_DIMS: usize = 64;

/// The semantic list's weight in the fusion (see [`super::fuse`]); tuned
/// on SciFact train and NFCorpus dev at 256 dimensions (at 128 it was 0.3:
/// a better semantic list earns more weight). SciFact train / NFCorpus dev:
/// 0.3 0.7191 / 0.3181; 0.35 0.7207 / 0.3204; 0.4 0.7205 / 0.3252; 0.45
/// 0.7173 / 0.3257; 0.5 0.7180 / 0.3271.
const FUSION_WEIGHT: f32 = 0.4;

/// Builds the tier: distils the static model from the encoder's token
/// vectors, embeds `docs` with the encoder, fits the static rows to those
/// vectors and partitions them.
pub fn build(input: &SemanticInput, docs: &[String]) -> Result<SemanticFiles, String> {
    let base = WordPiece::from_lines(&input.vocab.join("\n"));
    let words = site_words(docs, &base);
    let mut vocab = input.vocab.clone();
    vocab.extend(words.iter().cloned());
    let wp = WordPiece::from_lines(&vocab.join("\n"));
    let doc_tokens: Vec<Vec<u32>> = docs.iter().map(|d| wp.tokenize(d)).collect();
    let mut counts = vec![0u64; vocab.len()];
    for &t in doc_tokens.iter().flatten() {
        counts[t as usize] += 1;
    }
    // The page needs only the tokens this site uses, plus every ASCII one
    // (a query word the site lacks still carries meaning through them).
    let shipped = |id: usize| {
        let token = &vocab[id];
        counts[id] > 0 || (token.is_ascii() && !token.starts_with("[unused"))
    };
    let full = input.token_vectors.first().map_or(0, Vec::len);
    let dim = input.dim.clamp(1, full.max(1));
    let live: Vec<Vec<f32>> = input.token_vectors.iter().filter(|v| v.iter().any(|x| *x != 0.0)).cloned().collect();
    let (mean, axes) = distill::pca(&live, full, dim);
    let weights = distill::sif_weights(&counts, 1e-3);
    let projected_tokens: Vec<Vec<f32>> = input
        .token_vectors
        .iter()
        .enumerate()
        .map(|(id, v)| {
            if !shipped(id) || v.iter().all(|x| *x == 0.0) {
                return vec![0f32; dim];
            }
            distill::project(v, &mean, &axes)
        })
        .chain(words.iter().map(|word| {
            // A site word's prior: the mean of the pieces it replaces.
            let pieces = base.tokenize(word);
            let mut v = vec![0f32; dim];
            for &t in &pieces {
                let p = distill::project(&input.token_vectors[t as usize], &mean, &axes);
                v.iter_mut().zip(p).for_each(|(a, b)| *a += b / pieces.len() as f32);
            }
            v
        }))
        .collect();
    let distilled: Vec<Vec<f32>> = projected_tokens
        .into_iter()
        .zip(&weights)
        .map(|(mut p, &w)| {
            p.iter_mut().for_each(|x| *x *= w);
            p
        })
        .collect();
    let encoded = (input.encode_documents)(docs)?;
    if encoded.iter().flatten().any(|x| !x.is_finite()) {
        return Err("the encoder gave a vector that is not a number".into());
    }
    if encoded.len() != docs.len() || encoded.iter().any(|v| v.len() != full) {
        return Err(format!(
            "the encoder gave {} vectors for {} pages, not all {full} wide",
            encoded.len(),
            docs.len()
        ));
    }
    let projected: Vec<Vec<f32>> = encoded.iter().map(|v| distill::project(v, &mean, &axes)).collect();
    // What every page shares says nothing about any one of them: the mean
    // page direction is removed, and the rest made unit length.
    let mut center = vec![0f32; dim];
    for v in &projected {
        center.iter_mut().zip(v).for_each(|(c, x)| *c += x / projected.len().max(1) as f32);
    }
    let doc_vectors: Vec<Vec<f32>> = projected
        .into_iter()
        .map(|mut v| {
            v.iter_mut().zip(&center).for_each(|(x, c)| *x -= c);
            distill::normalize(&mut v);
            v
        })
        .collect();
    // The rows are fitted to exactly what a query is compared with.
    let (bags, targets) = training_pairs(&wp, docs, &doc_tokens);
    let rows: Vec<Code> =
        distill::fit_rows(&bags, &targets, &doc_vectors, &distilled, FIT_STRENGTH, FIT_ITERATIONS)
            .iter()
            .enumerate()
            .map(|(id, row)| {
                if shipped(id) { Code::at_width(row, input.row_width) } else { Code { scale: 0.0, code: vec![0; dim] } }
            })
            .collect();
    let k = ((docs.len() as f64).sqrt() * CLUSTERS_PER_ROOT).round().clamp(1.0, 1024.0) as usize;
    let (centroids, assign) = distill::kmeans(&doc_vectors, k, 10);
    // Residuals to the centroid as the page reads it (int8).
    let stored_centroids: Vec<Code> = centroids.iter().map(|c| Code::of(c)).collect();
    let residuals: Vec<Vec<f32>> = doc_vectors
        .iter()
        .zip(&assign)
        .map(|(v, &c)| v.iter().zip(stored_centroids[c].to_f32()).map(|(x, c)| x - c).collect())
        .collect();
    let probe_dims = dim.min(PROBE_DIMS);
    let codebook = pq::ProductCodebook::train(&residuals, dim, subspace_dims(dim), PAGE_CODES);

    let mut files = Vec::new();
    let mut row_files = Vec::new();
    for chunk in rows.chunks(input.rows_per_shard.max(1)) {
        let mut bytes = ROWS_MAGIC.to_vec();
        put_vint(&mut bytes, chunk.len() as u64);
        chunk.iter().for_each(|c| c.put_at_width(input.row_width, &mut bytes));
        row_files.push(bytes);
    }
    let rows_set = set_id(&row_files);
    let vocab_files = vocab_shards(&vocab, shipped);
    let vocab_set = set_id(&vocab_files.iter().map(|(_, bytes)| bytes.clone()).collect::<Vec<_>>());
    let mut clusters = Vec::new();
    let mut order = Vec::with_capacity(docs.len());
    for (c, centroid) in stored_centroids.into_iter().enumerate() {
        let members: Vec<usize> = (0..docs.len()).filter(|&d| assign[d] == c).collect();
        // An empty cluster holds nothing to read.
        if members.is_empty() {
            continue;
        }
        let mut bytes = CLUSTER_MAGIC.to_vec();
        put_vint(&mut bytes, order.len() as u64);
        centroid.put(&mut bytes);
        put_vint(&mut bytes, members.len() as u64);
        for &d in &members {
            bytes.extend(codebook.pack(&codebook.encode(&residuals[d])));
        }
        let file = file_id(&bytes);
        let pages = u32::try_from(members.len()).map_err(|_| "too many pages for one bundle".to_string())?;
        clusters.push(Cluster { probe: Code::of(&centroids[c][..probe_dims]), file, pages });
        order.extend(members.iter().map(|&d| d as u32));
        files.push((cluster_file_name(&file), bytes));
    }
    let meta = SemanticMeta {
        dim,
        tokens: vocab.len(),
        rows_per_shard: input.rows_per_shard.max(1),
        row_width: input.row_width,
        rows: rows_set,
        vocab: vocab_set,
        unk: wp.unknown(),
        probes: input.probes.max(1),
        min_similarity: input.min_similarity,
        weight: FUSION_WEIGHT,
        codebook,
        probe_dims,
        clusters,
    };
    for (shard, bytes) in row_files.into_iter().enumerate() {
        files.push((meta.rows_name(shard), bytes));
    }
    for (key, bytes) in vocab_files {
        files.push((meta.vocab_name(&key), bytes));
    }
    let meta_bytes = meta.encode();
    let name = format!("sem.{}.bin", id_hex(&file_id(&meta_bytes)));
    files.push((name.clone(), meta_bytes));
    Ok(SemanticFiles { files, meta: name, order, site_words: words.len() })
}

/// The site's words that become tokens of their own (see
/// [`SITE_WORD_MIN_PAGES`]), sorted so a rebuild gives the same ids.
fn site_words(docs: &[String], base: &WordPiece) -> Vec<String> {
    let mut pages: HashMap<String, usize> = HashMap::new();
    for doc in docs {
        let distinct: HashSet<String> = wordpiece::basic_words(doc).into_iter().collect();
        for word in distinct {
            *pages.entry(word).or_default() += 1;
        }
    }
    let mut words: Vec<String> = pages
        .into_iter()
        .filter(|(word, pages)| {
            *pages >= SITE_WORD_MIN_PAGES
                && *pages * 2 <= docs.len()
                && word.chars().count() <= SITE_WORD_MAX_CHARS
                && base.tokenize(word).len() > 1
        })
        .map(|(word, _)| word)
        .collect();
    words.sort();
    words
}

/// What the static rows are fitted on, each bag with the vector its mean
/// row should be: every page, each of its sentences of at least
/// [`MIN_SENTENCE_TOKENS`] tokens and each run of [`WINDOW_TOKENS`]
/// (scaled by [`WINDOW_SCALE`]), all to the page's vector.
fn training_pairs(
    wp: &WordPiece,
    docs: &[String],
    doc_tokens: &[Vec<u32>],
) -> (Vec<distill::BagOfTokens>, Vec<distill::Target>) {
    let page = |index: usize, scale: f32| distill::Target { vector: index as u32, scale };
    let mut bags: Vec<distill::BagOfTokens> = doc_tokens.iter().map(|ids| bag_of_tokens(ids)).collect();
    let mut targets: Vec<distill::Target> = (0..docs.len()).map(|index| page(index, 1.0)).collect();
    for (index, (doc, ids)) in docs.iter().zip(doc_tokens).enumerate() {
        for sentence in doc.split(['.', '\n', '?', '!']) {
            let ids = wp.tokenize(sentence);
            if ids.len() >= MIN_SENTENCE_TOKENS {
                bags.push(bag_of_tokens(&ids));
                targets.push(page(index, 1.0));
            }
        }
        for window in ids.chunks_exact(WINDOW_TOKENS) {
            bags.push(bag_of_tokens(window).into_iter().map(|(t, share)| (t, share * WINDOW_SCALE)).collect());
            targets.push(page(index, WINDOW_SCALE));
        }
    }
    (bags, targets)
}

/// A document's distinct tokens, each with its share of the document.
fn bag_of_tokens(ids: &[u32]) -> distill::BagOfTokens {
    let mut bag: BTreeMap<u32, f32> = BTreeMap::new();
    for &id in ids {
        *bag.entry(id).or_default() += 1.0 / ids.len() as f32;
    }
    bag.into_iter().collect()
}

/// The id of a set of files: of their contents, in order.
fn set_id(files: &[Vec<u8>]) -> FileId {
    file_id(&files.iter().flat_map(|f| file_id(f)).collect::<Vec<u8>>())
}

/// The shipped tokens, one file per shard key (every key has a file, so
/// the page never asks for one that is missing).
fn vocab_shards(vocab: &[String], shipped: impl Fn(usize) -> bool) -> Vec<(String, Vec<u8>)> {
    let mut shards: BTreeMap<String, Vec<(u32, &str)>> =
        wordpiece::all_shard_keys().into_iter().map(|k| (k, Vec::new())).collect();
    for (id, token) in vocab.iter().enumerate().filter(|&(id, _)| shipped(id)) {
        shards.entry(wordpiece::shard_key(token)).or_default().push((id as u32, token));
    }
    shards
        .into_iter()
        .map(|(key, tokens)| {
            let mut bytes = VOCAB_MAGIC.to_vec();
            put_vint(&mut bytes, tokens.len() as u64);
            let mut last = 0;
            for (id, token) in tokens {
                put_vint(&mut bytes, u64::from(id - last));
                last = id;
                put_bytes(&mut bytes, token.as_bytes());
            }
            (key, bytes)
        })
        .collect()
}

/// The unit vector of a query: the mean of its tokens' rows, normalised
/// (zeros when no row has any weight).
fn unit_mean(rows: &[Vec<f32>], dim: usize) -> Vec<f32> {
    let mut v = vec![0f32; dim];
    for row in rows {
        v.iter_mut().zip(row).for_each(|(a, b)| *a += b);
    }
    distill::normalize(&mut v);
    v
}

/// The page's side: what is loaded so far, and the search.
pub struct SemanticIndex {
    meta: SemanticMeta,
    /// The vocabulary shards loaded so far, merged.
    wordpiece: WordPiece,
    vocab_loaded: HashSet<String>,
    rows: HashMap<usize, Vec<Code>>,
    /// Each cluster's first page number, and after the last the number
    /// of pages.
    first_page: Vec<u32>,
    clusters: HashMap<usize, LoadedCluster>,
}

/// A cluster's file as read: its centroid, and its pages' codes, one row of
/// `codebook.pieces()` bytes each, in page order.
struct LoadedCluster {
    centroid: Code,
    codes: Vec<u8>,
}

impl SemanticIndex {
    pub fn open(meta: &[u8]) -> Parsed<SemanticIndex> {
        let meta = SemanticMeta::decode(meta)?;
        // The meta checked that the sum fits.
        let first_page = std::iter::once(0)
            .chain(meta.clusters.iter().scan(0u32, |next, c| {
                *next += c.pages;
                Some(*next)
            }))
            .collect();
        Ok(SemanticIndex {
            wordpiece: WordPiece::with_unknown(meta.unk),
            meta,
            vocab_loaded: HashSet::new(),
            rows: HashMap::new(),
            first_page,
            clusters: HashMap::new(),
        })
    }

    /// The cluster holding page `doc`, if any does.
    fn cluster_of(&self, doc: u32) -> Option<usize> {
        let after = self.first_page.partition_point(|&first| first <= doc);
        (after > 0 && after < self.first_page.len()).then(|| after - 1)
    }

    /// Vocabulary shards `query` needs that are not loaded yet.
    fn missing_vocab(&self, query: &str) -> Vec<String> {
        wordpiece::shard_keys(query)
            .into_iter()
            .filter(|k| !self.vocab_loaded.contains(k))
            .map(|k| self.meta.vocab_name(&k))
            .collect()
    }

    /// The query's tokens, once every vocabulary shard it needs is loaded.
    fn tokens(&self, query: &str) -> Option<Vec<u32>> {
        self.missing_vocab(query).is_empty().then(|| self.wordpiece.tokenize(query))
    }

    fn query_vector(&self, ids: &[u32]) -> Option<Vec<f32>> {
        let mut rows = Vec::with_capacity(ids.len());
        for &id in ids {
            let shard = id as usize / self.meta.rows_per_shard;
            rows.push(self.rows.get(&shard)?.get(id as usize % self.meta.rows_per_shard)?.to_f32());
        }
        Some(unit_mean(&rows, self.meta.dim))
    }

    /// The clusters a query reads: the meta's `probes` nearest to `q`, then
    /// those of the first [`KEYWORD_PROBES`] keyword hits.
    fn probed(&self, q: &[f32], keyword_hits: &[u32]) -> Vec<usize> {
        let mut order: Vec<(f32, usize)> =
            self.meta.clusters.iter().enumerate().map(|(i, c)| (c.probe.dot(&q[..self.meta.probe_dims]), i)).collect();
        order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut probed: Vec<usize> = order.into_iter().take(self.meta.probes).map(|(_, i)| i).collect();
        for cluster in keyword_hits.iter().take(KEYWORD_PROBES).filter_map(|&doc| self.cluster_of(doc)) {
            if !probed.contains(&cluster) {
                probed.push(cluster);
            }
        }
        probed
    }

    /// Files the query needs next (its vocabulary shards, then its rows,
    /// then its clusters): call again after adding them, until it names
    /// none. `keyword_hits`: the keyword tier's best pages for the query,
    /// best first (as [`Self::search`] will be given them).
    pub fn needs(&self, query: &str, keyword_hits: &[u32]) -> Vec<String> {
        let missing = self.missing_vocab(query);
        if !missing.is_empty() {
            return missing;
        }
        let ids = self.wordpiece.tokenize(query);
        let mut shards: Vec<usize> = ids.iter().map(|&id| id as usize / self.meta.rows_per_shard).collect();
        shards.sort_unstable();
        shards.dedup();
        let missing: Vec<String> =
            shards.into_iter().filter(|s| !self.rows.contains_key(s)).map(|s| self.meta.rows_name(s)).collect();
        if !missing.is_empty() {
            return missing;
        }
        let Some(q) = self.query_vector(&ids) else { return Vec::new() };
        if q.iter().all(|x| *x == 0.0) {
            return Vec::new();
        }
        self.probed(&q, keyword_hits)
            .into_iter()
            .filter(|c| !self.clusters.contains_key(c))
            .map(|c| self.meta.cluster_name(c))
            .collect()
    }

    /// Whether `name` is one of this tier's files (so [`Self::add_file`]
    /// takes it).
    pub fn owns(&self, name: &str) -> bool {
        self.meta.file(name).is_some()
    }

    /// Adds a fetched file; `Ok(false)` if the name is not one of this tier's.
    pub fn add_file(&mut self, name: &str, bytes: Vec<u8>) -> Parsed<bool> {
        let dim = self.meta.dim;
        match self.meta.file(name) {
            None => Ok(false),
            Some(TierFile::Vocab(key)) => {
                let mut r = Cursor::open(&bytes, VOCAB_MAGIC, "not a qmd vocabulary file")?;
                let n = r.count(2)?;
                let mut id = 0u32;
                let mut tokens = Vec::with_capacity(n);
                for i in 0..n {
                    let delta = r.u32()?;
                    id = if i == 0 {
                        delta
                    } else {
                        id.checked_add(delta).ok_or(FormatError("token id out of range"))?
                    };
                    let token = r.string()?;
                    if wordpiece::shard_key(&token) != key {
                        return Err(FormatError("token in the wrong vocabulary shard"));
                    }
                    tokens.push((token, id));
                }
                tokens.into_iter().for_each(|(token, id)| self.wordpiece.insert(token, id));
                self.vocab_loaded.insert(key);
                Ok(true)
            }
            Some(TierFile::Rows(shard)) => {
                let mut r = Cursor::open(&bytes, ROWS_MAGIC, "not a qmd rows file")?;
                let width = self.meta.row_width;
                let n = r.count(width.row_bytes(dim))?;
                let rows = (0..n).map(|_| read_row(&mut r, dim, width)).collect::<Parsed<Vec<_>>>()?;
                self.rows.insert(shard, rows);
                Ok(true)
            }
            Some(TierFile::Cluster(cluster)) => {
                if file_id(&bytes) != self.meta.clusters[cluster].file {
                    return Err(FormatError("file content does not match its name"));
                }
                let mut r = Cursor::open(&bytes, CLUSTER_MAGIC, "not a qmd cluster file")?;
                let book = &self.meta.codebook;
                if r.u32()? != self.first_page[cluster] {
                    return Err(FormatError("cluster file's first page differs from the meta's"));
                }
                let centroid = read_code(&mut r, dim)?;
                let n = r.count(book.packed_len())?;
                if n != self.meta.clusters[cluster].pages as usize {
                    return Err(FormatError("cluster file's pages differ from the meta's"));
                }
                let packed = r.take(n * book.packed_len())?;
                if !r.at_end() {
                    return Err(FormatError("cluster file longer than its pages"));
                }
                let mut codes = Vec::with_capacity(n * book.pieces());
                for page in packed.chunks_exact(book.packed_len()) {
                    codes.extend(book.unpack(page).ok_or(FormatError("page code out of range"))?);
                }
                self.clusters.insert(cluster, LoadedCluster { centroid, codes });
                Ok(true)
            }
        }
    }

    /// The semantic list's weight in the fusion with the keyword list.
    pub fn weight(&self) -> f64 {
        f64::from(self.meta.weight)
    }

    /// Documents nearest the query (cosine, best first), from the probed
    /// clusters (those [`Self::needs`] named for the same `keyword_hits`;
    /// one not loaded is passed over); empty until [`Self::needs`] names
    /// nothing. The best `limit` at or above the minimum similarity, then
    /// every page of `keyword_hits` the probed clusters hold, whatever its
    /// similarity: those pages are in the fused list by their words
    /// already, and their similarity still orders them (a page the semantic
    /// list left out would score as its least similar page; SciFact test,
    /// fused nDCG@10 0.696 → 0.702).
    pub fn search(&self, query: &str, limit: usize, keyword_hits: &[u32]) -> Vec<(u32, f32)> {
        let Some(ids) = self.tokens(query) else { return Vec::new() };
        let Some(q) = self.query_vector(&ids) else { return Vec::new() };
        if q.iter().all(|x| *x == 0.0) {
            return Vec::new();
        }
        let (book, table) = (&self.meta.codebook, self.meta.codebook.table(&q));
        let mut hits: Vec<(u32, f32)> = Vec::new();
        for c in self.probed(&q, keyword_hits) {
            if let Some(loaded) = self.clusters.get(&c) {
                let near = loaded.centroid.dot(&q);
                hits.extend(
                    (self.first_page[c]..)
                        .zip(loaded.codes.chunks_exact(book.pieces()))
                        .map(|(d, code)| (d, near + book.score(&table, code))),
                );
            }
        }
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let keyword: HashSet<u32> = keyword_hits.iter().copied().collect();
        let mut kept = 0;
        hits.retain(|&(doc, similarity)| {
            let best = kept < limit && similarity >= self.meta.min_similarity;
            kept += usize::from(best);
            best || keyword.contains(&doc)
        });
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words of one topic share a direction.
    fn topic(word: &str) -> [f32; 4] {
        match word {
            "car" | "automobile" | "engine" | "fast" => [1.0, 0.1, 0.0, 0.05],
            "bread" | "flour" | "recipe" => [0.0, 0.1, 1.0, 0.05],
            "[PAD]" | "[UNK]" => [0.0; 4],
            _ => [0.3, 0.3, 0.3, 0.3],
        }
    }

    /// A toy encoder: a text is the mean direction of its words' topics
    /// (a plural as its singular), unit length.
    fn toy_encoder(texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut v = vec![0f32; 4];
                for word in text.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()) {
                    let word = word.to_lowercase();
                    let singular = word.strip_suffix('s').filter(|w| topic(w) != topic("the")).unwrap_or(&word);
                    v.iter_mut().zip(topic(singular)).for_each(|(a, b)| *a += b);
                }
                distill::normalize(&mut v);
                v
            })
            .collect())
    }

    fn input() -> SemanticInput {
        let vocab: Vec<String> =
            ["[PAD]", "[UNK]", "the", "car", "automobile", "engine", "bread", "flour", "recipe", "is", "fast", "##s"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let token_vectors = vocab
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut v = topic(t).to_vec();
                if v.iter().any(|x| *x != 0.0) {
                    v[3] += 0.01 * i as f32; // distinct rows
                }
                v
            })
            .collect();
        SemanticInput {
            vocab,
            token_vectors,
            dim: 3,
            rows_per_shard: 4,
            row_width: RowWidth::Int8,
            probes: 2,
            min_similarity: 0.0,
            encode_documents: Box::new(toy_encoder),
        }
    }

    #[test]
    fn an_encoder_that_fails_or_miscounts_is_an_error() {
        let docs = ["car".to_string(), "bread".to_string()];
        let failing = SemanticInput { encode_documents: Box::new(|_| Err("model missing".into())), ..input() };
        assert_eq!(build(&failing, &docs).err().as_deref(), Some("model missing"));
        let short = SemanticInput { encode_documents: Box::new(|_| Ok(vec![vec![1.0; 4]])), ..input() };
        assert!(build(&short, &docs).err().unwrap().contains("1 vectors for 2 pages"));
        let narrow = SemanticInput { encode_documents: Box::new(|t| Ok(vec![vec![1.0; 3]; t.len()])), ..input() };
        assert!(build(&narrow, &docs).err().unwrap().contains("4 wide"));
        let nan = SemanticInput { encode_documents: Box::new(|t| Ok(vec![vec![f32::NAN; 4]; t.len()])), ..input() };
        assert!(build(&nan, &docs).err().unwrap().contains("not a number"));
    }

    fn load(index: &mut SemanticIndex, files: &SemanticFiles, query: &str) -> usize {
        let mut fetched = 0;
        loop {
            let needs = index.needs(query, &[]);
            if needs.is_empty() {
                return fetched;
            }
            for name in needs {
                let (_, bytes) = files.files.iter().find(|(n, _)| *n == name).unwrap();
                assert!(index.add_file(&name, bytes.clone()).unwrap(), "{name}");
                fetched += 1;
            }
        }
    }

    /// The number the bundle gives `docs[original]`.
    fn numbered(files: &SemanticFiles, original: u32) -> u32 {
        files.order.iter().position(|&d| d == original).unwrap() as u32
    }

    #[test]
    fn pages_are_numbered_cluster_by_cluster_and_a_keyword_hit_brings_its_cluster() {
        let one_probe = SemanticInput { probes: 1, ..input() };
        let files = build(&one_probe, &toy_docs()).unwrap();
        let mut order = files.order.clone();
        order.sort_unstable();
        assert_eq!(order, (0..10).collect::<Vec<u32>>(), "every page numbered once");
        let meta = &files.files.iter().find(|(n, _)| *n == files.meta).unwrap().1;
        let mut index = SemanticIndex::open(meta).unwrap();
        assert!(index.meta.clusters.len() > 1 && index.first_page.last() == Some(&10));
        let names: HashSet<String> = (0..index.meta.clusters.len()).map(|c| index.meta.cluster_name(c)).collect();
        assert_eq!(names.len(), index.meta.clusters.len(), "every cluster's file is its own");
        for c in 0..index.meta.clusters.len() {
            for doc in index.first_page[c]..index.first_page[c + 1] {
                assert_eq!(index.cluster_of(doc), Some(c));
            }
        }
        assert_eq!(index.cluster_of(10), None);
        assert_eq!(index.cluster_of(u32::MAX), None);
        // One probe reads the car cluster; a bread page the keyword tier
        // found brings its own cluster, and gets a similarity.
        load(&mut index, &files, "automobile");
        let bread = numbered(&files, 7);
        let wanted = index.needs("automobile", &[bread]);
        assert_eq!(wanted, [index.meta.cluster_name(index.cluster_of(bread).unwrap())]);
        assert!(!index.search("automobile", 10, &[bread]).iter().any(|h| h.0 == bread));
        for name in wanted {
            let (_, bytes) = files.files.iter().find(|(n, _)| *n == name).unwrap();
            index.add_file(&name, bytes.clone()).unwrap();
        }
        assert!(index.needs("automobile", &[bread]).is_empty());
        assert!(index.search("automobile", 10, &[bread]).iter().any(|h| h.0 == bread));
        // A number past the last page names no cluster.
        assert!(index.needs("automobile", &[10, u32::MAX]).is_empty());
    }

    /// Pages about cars (0, 1, 4, 6, 8) and about baking.
    fn toy_docs() -> Vec<String> {
        [
            "The car is fast",
            "Engines",
            "Bread recipe",
            "Flour and bread",
            "The engine",
            "Recipe: flour",
            "the car",
            "bread bread",
            "fast cars",
            "flour",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn a_query_finds_documents_by_meaning_fetching_only_what_it_needs() {
        let files = build(&input(), &toy_docs()).unwrap();
        let meta = &files.files.iter().find(|(n, _)| *n == files.meta).unwrap().1;
        let mut index = SemanticIndex::open(meta).unwrap();
        let fetched = load(&mut index, &files, "automobile");
        let rows = files.files.iter().filter(|(n, _)| n.starts_with("r/")).count();
        assert!(fetched < files.files.len() - 1 && rows == 3, "fetched {fetched}");
        let hits = index.search("automobile", 3, &[]);
        assert_eq!(hits.len(), 3);
        for &(doc, _) in &hits {
            assert!([0, 1, 4, 6, 8].contains(&files.order[doc as usize]), "{hits:?}");
        }
        load(&mut index, &files, "a recipe");
        let best = index.search("a recipe", 1, &[])[0].0;
        assert!([2, 3, 5, 7, 9].contains(&files.order[best as usize]));
        assert!(index.search("zzz", 3, &[]).is_empty() || load(&mut index, &files, "zzz") == 0);
    }

    #[test]
    fn a_word_enough_pages_use_becomes_a_token_of_its_own() {
        // "engines" is "engine" + "##s" to the encoder's vocabulary (12
        // tokens); five pages use it, one page "cars".
        let mut docs = toy_docs();
        docs.extend(["engines run", "fast engines", "The engines.", "Engines!"].map(String::from));
        let files = build(&input(), &docs).unwrap();
        let meta = &files.files.iter().find(|(n, _)| *n == files.meta).unwrap().1;
        let mut index = SemanticIndex::open(meta).unwrap();
        assert_eq!(index.meta.tokens, 13);
        assert_eq!(files.site_words, 1, "the build says how many");
        load(&mut index, &files, "engines cars");
        let engines = index.wordpiece.tokenize("engines");
        assert_eq!(engines.len(), 1, "the page reads the word whole");
        let cars = index.wordpiece.tokenize("cars");
        assert_eq!(cars.len(), 2, "a word of one page stays in pieces");
        assert_eq!(index.wordpiece.tokenize("Engines cars"), [engines[0], cars[0], cars[1]]);
        assert!(index.query_vector(&engines).unwrap().iter().any(|x| *x != 0.0), "and has a row for it");
        let hits = index.search("engines", 3, &[]);
        assert_eq!(hits.len(), 3);
        for &(doc, _) in &hits {
            assert!([0, 1, 4, 6, 8, 10, 11, 12, 13].contains(&files.order[doc as usize]), "{hits:?}");
        }
        // A word more than half the pages use stays in pieces.
        let everywhere: Vec<String> = toy_docs().iter().map(|d| format!("{d} engines")).collect();
        let files = build(&input(), &everywhere).unwrap();
        let meta = &files.files.iter().find(|(n, _)| *n == files.meta).unwrap().1;
        assert_eq!(SemanticIndex::open(meta).unwrap().meta.tokens, 12);
        assert_eq!(files.site_words, 0);
    }

    #[test]
    fn rows_are_fitted_to_pages_their_sentences_and_runs_of_tokens() {
        let wp = WordPiece::from_lines(&input().vocab.join("\n"));
        // 19 tokens: a sentence of 4 (too short), one of 14, two runs of 8.
        let docs = ["the car is fast. the car is fast the car is fast the car is fast cars".to_string()];
        let tokens = vec![wp.tokenize(&docs[0])];
        assert_eq!(tokens[0].len(), 19);
        let (bags, targets) = training_pairs(&wp, &docs, &tokens);
        assert_eq!(bags.len(), 4);
        let weight = |bag: &distill::BagOfTokens| bag.iter().map(|(_, share)| share).sum::<f32>();
        assert!((weight(&bags[0]) - 1.0).abs() < 1e-6 && (weight(&bags[1]) - 1.0).abs() < 1e-6);
        for (bag, target) in bags[2..].iter().zip(&targets[2..]) {
            assert!((weight(bag) - WINDOW_SCALE).abs() < 1e-6);
            assert_eq!(*target, distill::Target { vector: 0, scale: WINDOW_SCALE });
        }
        assert!(targets[..2].iter().all(|t| *t == distill::Target { vector: 0, scale: 1.0 }));
    }

    #[test]
    fn keyword_hits_in_probed_clusters_keep_their_similarity_beyond_the_limit() {
        let mut every_cluster = input();
        (every_cluster.probes, every_cluster.min_similarity) = (8, 0.5);
        let files = build(&every_cluster, &toy_docs()).unwrap();
        let meta = &files.files.iter().find(|(n, _)| *n == files.meta).unwrap().1;
        let mut index = SemanticIndex::open(meta).unwrap();
        load(&mut index, &files, "automobile");
        let alone = index.search("automobile", 1, &[]);
        assert_eq!(alone.len(), 1);
        // Bread pages found by their words: below the minimum similarity and
        // past the limit, still scored, in similarity order after the best.
        let bread = [numbered(&files, 2), numbered(&files, 7)];
        let hits = index.search("automobile", 1, &bread);
        assert_eq!(hits[0], alone[0]);
        let mut rest: Vec<u32> = hits[1..].iter().map(|h| h.0).collect();
        rest.sort_unstable();
        assert_eq!(
            rest,
            {
                let mut b = bread;
                b.sort_unstable();
                b
            },
            "{hits:?}"
        );
        assert!(hits[1..].iter().all(|h| h.1 < 0.5) && hits.windows(2).all(|w| w[0].1 >= w[1].1), "{hits:?}");
    }

    #[test]
    fn four_bit_rows_round_trip_and_stay_close() {
        let v: Vec<f32> = (0..7).map(|i| (i as f32 - 3.2) * 0.1).collect();
        let code = Code::at_width(&v, RowWidth::Int4);
        assert!(code.code.iter().all(|c| (-7..=7).contains(c)));
        let mut bytes = Vec::new();
        code.put_at_width(RowWidth::Int4, &mut bytes);
        assert_eq!(bytes.len(), RowWidth::Int4.row_bytes(7));
        let read = read_row(&mut Cursor::open(&bytes, b"", "").unwrap(), 7, RowWidth::Int4).unwrap();
        assert_eq!(read, code);
        for (x, y) in v.iter().zip(read.to_f32()) {
            assert!((x - y).abs() <= read.scale / 2.0 + 1e-6, "{x} read back as {y}");
        }
        assert!(read_row(&mut Cursor::open(&bytes[..bytes.len() - 1], b"", "").unwrap(), 7, RowWidth::Int4).is_err());
    }

    #[test]
    fn a_query_finds_documents_with_four_bit_rows() {
        let files = build(&SemanticInput { row_width: RowWidth::Int4, ..input() }, &toy_docs()).unwrap();
        let meta = &files.files.iter().find(|(n, _)| *n == files.meta).unwrap().1;
        let mut index = SemanticIndex::open(meta).unwrap();
        assert_eq!(index.meta.row_width, RowWidth::Int4);
        load(&mut index, &files, "automobile");
        for (doc, _) in index.search("automobile", 3, &[]) {
            assert!([0, 1, 4, 6, 8].contains(&files.order[doc as usize]), "{doc}");
        }
        // The row bits follow the magic and three one-byte counts here.
        let mut bad = meta.clone();
        assert_eq!(bad[SEMANTIC_MAGIC.len() + 3], 4);
        for bits in [0, 5, 7, 16] {
            bad[SEMANTIC_MAGIC.len() + 3] = bits;
            assert!(SemanticIndex::open(&bad).is_err(), "row bits {bits}");
        }
    }

    #[test]
    fn damaged_semantic_files_are_errors() {
        let files = build(&input(), &["car".to_string(), "bread".to_string()]).unwrap();
        let meta = &files.files.iter().find(|(n, _)| *n == files.meta).unwrap().1;
        for cut in 0..meta.len() {
            assert!(SemanticIndex::open(&meta[..cut]).is_err(), "cut at {cut}");
        }
        // Probes wider than the vectors, or of no dimension, are refused.
        let mut bad = SemanticMeta::decode(meta).unwrap();
        for probe_dims in [0, bad.dim + 1] {
            bad.probe_dims = probe_dims;
            assert_eq!(SemanticIndex::open(&bad.encode()).err().unwrap().0, "probe dimensions out of range");
        }
        let mut index = SemanticIndex::open(meta).unwrap();
        let (name, bytes) = files.files.iter().find(|(n, _)| n.starts_with("v/")).unwrap();
        assert!(index.add_file(name, bytes[..bytes.len() - 1].to_vec()).is_err());
        let (name, bytes) = files.files.iter().find(|(n, b)| n.starts_with("w/") && b.len() > 12).unwrap();
        assert!(index.owns(name));
        for cut in 8..bytes.len() {
            assert!(index.add_file(name, bytes[..cut].to_vec()).is_err(), "vocabulary cut at {cut}");
        }
        let other = files.files.iter().find(|(n, _)| n.starts_with("w/") && n != name).unwrap();
        assert!(index.add_file(&other.0, bytes.clone()).is_err(), "tokens of another shard are refused");
        assert!(!index.add_file("t/whatever.bin", vec![]).unwrap());
    }

    #[test]
    fn a_cluster_with_codes_the_codebook_lacks_or_extra_bytes_is_refused() {
        let docs = ["car", "bread", "flour"].map(String::from);
        let files = build(&input(), &docs).unwrap();
        let meta_bytes = &files.files.iter().find(|(n, _)| *n == files.meta).unwrap().1;
        let mut meta = SemanticMeta::decode(meta_bytes).unwrap();
        // Three pages: three codes per subspace, a dimension each, packed
        // at two bits (one byte a page).
        let book = &meta.codebook;
        assert_eq!((book.codes, book.pieces(), book.bits(), book.packed_len()), (3, 3, 2, 1));
        // A file: its first page, its centroid (f32 scale, 3 i8), then
        // its pages' count and codes.
        let mut centroid = Vec::new();
        Code { scale: 0.5, code: vec![1, -2, 3] }.put(&mut centroid);
        let cluster = |first: u8, pages: &[u8]| [CLUSTER_MAGIC, &[first], &centroid, pages].concat();
        meta.clusters[0].pages = 1;
        for (bytes, problem) in [
            (cluster(0, &[1, 0b00_00_11]), "page code out of range"),
            (cluster(0, &[1, 0b10_00_01, 9]), "cluster file longer than its pages"),
            (cluster(0, &[2, 0b10_00_01, 0b10_00_01]), "cluster file's pages differ from the meta's"),
            (cluster(1, &[1, 0b10_00_01]), "cluster file's first page differs from the meta's"),
            ([CLUSTER_MAGIC, &[0], &centroid[..6]].concat(), "truncated data"),
            (
                [CLUSTER_MAGIC, &[0], &f32::NAN.to_le_bytes(), &[1, 2, 3, 1, 0b10_00_01]].concat(),
                "vector scale is not a number",
            ),
        ] {
            meta.clusters[0].file = file_id(&bytes);
            let mut index = SemanticIndex::open(&meta.encode()).unwrap();
            let name = meta.cluster_name(0);
            assert_eq!(index.add_file(&name, bytes).unwrap_err().0, problem);
        }
        let good = cluster(0, &[1, 0b10_00_01]);
        meta.clusters[0].file = file_id(&good);
        assert!(SemanticIndex::open(&meta.encode()).unwrap().add_file(&meta.cluster_name(0), good).unwrap());
    }
}
