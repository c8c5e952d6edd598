//! Builds a site bundle: pages in, the meta file, term and positions
//! shards and per-page fragments out (named, uncompressed; the host
//! compresses and writes them).

use std::collections::BTreeMap;
use std::rc::Rc;

use serde::Serialize;

use super::format::{FileId, Meta, ShardRef, encode_shard, file_id, id_hex, metadata_name, positions_name, terms_name};
use crate::directory::{Directory, RamDirectory};
use crate::error::{Error, ErrorKind, Result};
use crate::index::segment::{DocInput, SegmentBuilder, SegmentReader};
use crate::metadata::Extraction;

/// A heading with an anchor: where a sub-result links to.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Anchor {
    /// The element id (`url#id`).
    pub id: String,
    pub text: String,
    /// Byte offset in the page text where the section starts.
    pub at: usize,
}

/// One page of the site, as extracted by the host.
#[derive(Clone, Debug, Default)]
pub struct SitePage {
    /// The link a result points to.
    pub url: String,
    /// The path indexed in BM25's path field (without the collection).
    pub path: String,
    pub title: String,
    /// The searchable text (what excerpts are cut from).
    pub text: String,
    pub anchors: Vec<Anchor>,
    /// `key → value` pairs the page can be filtered by (e.g. `lang`).
    pub filters: Vec<(String, String)>,
    /// Its `qmd.metadata` (markdown pages), for metadata filters.
    pub metadata: Extraction,
}

/// What the page fetches for a shown result.
#[derive(Serialize)]
struct Fragment<'a> {
    url: &'a str,
    title: &'a str,
    text: &'a str,
    anchors: &'a [Anchor],
    filters: BTreeMap<&'a str, &'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<serde_json::Value>,
}

/// The bundle's metadata file: each page's `qmd.metadata` by ordinal, and
/// the pages whose frontmatter was invalid (in no filtered result, as in
/// the CLI).
#[derive(Serialize, serde::Deserialize, Default)]
pub struct MetadataFile {
    pub docs: BTreeMap<u32, serde_json::Value>,
    pub invalid: Vec<u32>,
}

/// Build settings.
pub struct SiteOptions {
    /// A shard closes once its terms' postings reach this many bytes
    /// (before compression): smaller shards mean fewer bytes per query,
    /// more entries in the meta.
    pub shard_bytes: usize,
    /// The semantic tier's inputs, when it is built.
    pub semantic: Option<super::semantic::SemanticInput>,
}

impl Default for SiteOptions {
    fn default() -> Self {
        SiteOptions { shard_bytes: 3 * 1024, semantic: None }
    }
}

/// One file of the bundle, relative to the bundle's folder.
pub struct SiteFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// The built bundle: every file, and which one is the meta.
pub struct SiteFiles {
    pub files: Vec<SiteFile>,
    pub meta: String,
    /// The semantic tier's meta file, when built.
    pub semantic: Option<String>,
    /// The site's words the semantic tier reads whole (0 without one).
    pub site_words: usize,
    pub docs: u32,
    pub terms: usize,
    pub shards: usize,
}

/// Name of a page's fragment file.
pub fn fragment_name(set: &FileId, doc: u32) -> String {
    format!("f/{}/{doc}.json", id_hex(set))
}

/// Collects pages, then writes the bundle.
pub struct SiteBuilder {
    collection: String,
    /// Numbered only when the bundle is written: a semantic tier numbers
    /// them cluster by cluster.
    pages: Vec<SitePage>,
}

/// The keyword index, fragments, filters and metadata of pages added in
/// the order they are numbered.
struct NumberedPages {
    segment: SegmentBuilder,
    fragments: Vec<Vec<u8>>,
    filters: BTreeMap<String, BTreeMap<String, Vec<u32>>>,
    metadata: MetadataFile,
}

impl NumberedPages {
    fn add(&mut self, collection: &str, page: &SitePage) -> Result<()> {
        let doc = self.segment.add(&DocInput {
            collection,
            path: &page.path,
            title: &page.title,
            hash: "",
            modified_ms: 0,
            body: &page.text,
            metadata: &page.metadata,
        });
        let metadata = (!page.metadata.metadata.is_empty()).then(|| crate::metadata::to_json(&page.metadata.metadata));
        if let Some(json) = &metadata {
            self.metadata.docs.insert(doc, json.clone());
        }
        if page.metadata.error.is_some() {
            self.metadata.invalid.push(doc);
        }
        for (key, value) in &page.filters {
            let docs = self.filters.entry(key.clone()).or_default().entry(value.clone()).or_default();
            // A page that names the same value twice counts once.
            if docs.last() != Some(&doc) {
                docs.push(doc);
            }
        }
        let fragment = Fragment {
            url: &page.url,
            title: &page.title,
            text: &page.text,
            anchors: &page.anchors,
            filters: page.filters.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
            metadata,
        };
        let json = serde_json::to_vec(&fragment).map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
        self.fragments.push(json);
        Ok(())
    }
}

impl SiteBuilder {
    /// `collection` prefixes every path in the path field, as a collection's
    /// name does in the CLI's index (so the two rank alike).
    pub fn new(collection: &str) -> Self {
        SiteBuilder { collection: collection.to_string(), pages: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    pub fn add(&mut self, page: SitePage) {
        self.pages.push(page);
    }

    pub fn finish(self, options: &SiteOptions) -> Result<SiteFiles> {
        // The semantic tier comes first: it decides the pages' numbers.
        let semantic = match &options.semantic {
            Some(input) => {
                let texts: Vec<String> = self.pages.iter().map(|p| format!("{}\n{}", p.title, p.text)).collect();
                Some(super::semantic::build(input, &texts).map_err(|e| Error::new(ErrorKind::Internal, e))?)
            }
            None => None,
        };
        let mut numbered = NumberedPages {
            segment: SegmentBuilder::new(),
            fragments: Vec::new(),
            filters: BTreeMap::new(),
            metadata: MetadataFile::default(),
        };
        match &semantic {
            Some(built) => {
                for &page in &built.order {
                    numbered.add(&self.collection, &self.pages[page as usize])?;
                }
            }
            None => {
                for page in &self.pages {
                    numbered.add(&self.collection, page)?;
                }
            }
        }
        let NumberedPages { segment, fragments: page_fragments, filters, metadata: page_metadata } = numbered;
        let (bytes, seg_meta) = segment.finish("site.seg")?;
        let dir = RamDirectory::new();
        dir.write("site.seg", &bytes)?;
        let reader = SegmentReader::open(Rc::new(dir), seg_meta.clone());

        let mut files = Vec::new();
        let mut shards = Vec::new();
        let mut shard_files = Vec::new();
        let mut pending: Vec<PendingTerm> = Vec::new();
        let mut pending_bytes = 0;
        let all_terms = reader.terms_with_prefix("")?;
        let term_count = all_terms.len();
        for (term, info) in all_terms {
            let (postings, positions) = reader.raw_term(&info)?;
            pending_bytes += term.len() + postings.len();
            pending.push((term, info.df, postings, positions));
            if pending_bytes >= options.shard_bytes {
                flush_shard(&mut pending, &mut shards, &mut shard_files);
                pending_bytes = 0;
            }
        }
        if !pending.is_empty() || shards.is_empty() {
            flush_shard(&mut pending, &mut shards, &mut shard_files);
        }
        let shard_set =
            file_id(&shard_files.iter().flat_map(|(t, p)| [file_id(t), file_id(p)]).flatten().collect::<Vec<u8>>());
        for (i, (terms, positions)) in shard_files.into_iter().enumerate() {
            files.push(SiteFile { name: terms_name(&shard_set, i), bytes: terms });
            files.push(SiteFile { name: positions_name(&shard_set, i), bytes: positions });
        }

        let doc_lens = (0..seg_meta.docs).map(|d| reader.doc_len(d)).collect::<Result<Vec<_>>>()?;
        let mut set = Vec::new();
        for fragment in &page_fragments {
            set.extend_from_slice(&file_id(fragment));
        }
        let fragments = file_id(&set);
        for (doc, bytes) in page_fragments.into_iter().enumerate() {
            files.push(SiteFile { name: fragment_name(&fragments, doc as u32), bytes });
        }
        let site_words = semantic.as_ref().map_or(0, |built| built.site_words);
        let semantic = semantic.map(|built| {
            files.extend(built.files.into_iter().map(|(name, bytes)| SiteFile { name, bytes }));
            built.meta
        });
        let metadata = match page_metadata.docs.is_empty() && page_metadata.invalid.is_empty() {
            true => None,
            false => {
                let bytes =
                    serde_json::to_vec(&page_metadata).map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
                let id = file_id(&bytes);
                files.push(SiteFile { name: metadata_name(&id), bytes });
                Some(id)
            }
        };
        let shard_count = shards.len();
        let meta = Meta {
            docs: seg_meta.docs,
            tokens: seg_meta.tokens,
            fragments,
            doc_lens,
            shard_set,
            shards,
            filters,
            metadata,
        };
        let meta_bytes = meta.encode();
        let meta_name = format!("meta.{}.bin", id_hex(&file_id(&meta_bytes)));
        files.push(SiteFile { name: meta_name.clone(), bytes: meta_bytes });
        Ok(SiteFiles {
            files,
            meta: meta_name,
            semantic,
            site_words,
            docs: seg_meta.docs,
            terms: term_count,
            shards: shard_count,
        })
    }
}

/// A term waiting for its shard: term, df, postings, positions.
type PendingTerm = (String, u32, Vec<u8>, Vec<u8>);

/// Closes the shard of the `pending` terms.
/// Closes a shard: its terms and positions files, named once every shard
/// is written (by the set's id).
fn flush_shard(pending: &mut Vec<PendingTerm>, shards: &mut Vec<ShardRef>, files: &mut Vec<(Vec<u8>, Vec<u8>)>) {
    files.push(encode_shard(pending));
    // The first shard starts at "", so every term has a shard.
    let first = if shards.is_empty() { String::new() } else { pending.first().map_or(String::new(), |t| t.0.clone()) };
    shards.push(ShardRef { first });
    pending.clear();
}
