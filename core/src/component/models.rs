//! The host's `inference` import as the engine's [`Inference`], and the
//! exports that need it (`embed`, `vsearch`, the HTTP API). Only in the
//! `engine` world: plugin hosts offer no models, and `query` there runs
//! keyword-only.

use super::qmd::engine::inference as host;
use super::{R, hit, options, typed_search_in, wit};
use crate::error::{Error, ErrorKind, Result};
use crate::inference::{EmbedderInfo, Embedding, Inference};
use crate::wasi::engine;

pub struct HostModels;

fn model_error(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

impl Inference for HostModels {
    fn embedder(&self) -> Result<EmbedderInfo> {
        let info = host::embedder().map_err(model_error)?;
        Ok(EmbedderInfo {
            model: info.model,
            dimension: info.dimension as usize,
            max_tokens: info.max_tokens as usize,
            query_prompt: info.query_prompt,
            document_prompt: info.document_prompt,
            weights: info.weights,
        })
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        let out = host::embed(texts).map_err(model_error)?;
        Ok(out.into_iter().map(|e| Embedding { vector: e.vector, tokens: e.tokens }).collect())
    }

    fn reranker(&self) -> Option<String> {
        host::reranker()
    }

    fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<f32>> {
        host::rerank(query, documents).map_err(model_error)
    }

    fn generator(&self) -> Option<String> {
        host::generator()
    }

    fn expand(&self, query: &str) -> Result<Vec<crate::TypedSearch>> {
        Ok(host::expand(query).map_err(model_error)?.into_iter().map(typed_search_in).collect())
    }

    fn forget_expansion(&self, query: &str) {
        host::forget_expansion(query)
    }
}

impl super::exports::qmd::engine::vectors::Guest for super::Component {
    fn embed(options: wit::EmbedOptions) -> R<wit::EmbedReport> {
        embed(options)
    }

    fn vsearch(query: String, o: wit::SearchOptions) -> R<Vec<wit::SearchHit>> {
        Ok(engine().vsearch_with(&query, &options(o)?, &HostModels)?.into_iter().map(hit).collect())
    }

    fn sample_vectors(count: u32) -> R<wit::VectorSample> {
        let s = engine().vector_sample(&HostModels, count as usize)?;
        Ok(wit::VectorSample {
            fingerprint: s.fingerprint,
            stored_fingerprint: s.stored_fingerprint,
            stored_model: s.stored_model,
            eligible: s.eligible,
            checked: s.checked.into_iter().map(|c| wit::SampleCheck { file: c.file, distance: c.distance }).collect(),
        })
    }
}

impl super::exports::qmd::engine::http_api::Guest for super::Component {
    fn handle(method: String, path: String, body: Vec<u8>) -> super::exports::qmd::engine::http_api::HttpResponse {
        let request = crate::serve::HttpRequest { method: &method, path: &path, body: &body };
        let response = crate::serve::handle(&engine(), Some(&HostModels), &request);
        super::exports::qmd::engine::http_api::HttpResponse {
            status: response.status,
            content_type: response.content_type.to_string(),
            body: response.body,
            allow: response.allow.map(str::to_string),
        }
    }
}

fn embed(o: wit::EmbedOptions) -> R<wit::EmbedReport> {
    let options = crate::EmbedOptions {
        force: o.force,
        collection: o.collection,
        max_docs_per_batch: o.max_docs_per_batch as usize,
        max_batch_bytes: o.max_batch_bytes,
        // The host runs passes side by side on its cores (or on a GPU):
        // give it a batch's chunks in one call.
        texts_per_call: 256,
        chunk_strategy: o.chunk_strategy.map(super::chunk_strategy_in),
    };
    let mut progress = |phase: &str, done: u64, total: u64| super::qmd::engine::host::progress(phase, done, total);
    let started = std::time::Instant::now();
    let limit = o.max_duration_ms.map(std::time::Duration::from_millis);
    let mut go_on = || limit.is_none_or(|limit| started.elapsed() < limit);
    let r = engine().embed_until(&HostModels, &options, &mut progress, &mut go_on)?;
    Ok(wit::EmbedReport {
        pending: r.pending,
        docs: r.docs,
        chunks: r.chunks,
        resplit: r.resplit,
        bytes: r.bytes,
        total_bytes: r.total_bytes,
        cleared: r.cleared,
        stopped: r.stopped,
        rechunked: r.rechunked,
        fallbacks: r.fallbacks,
    })
}
