//! The code grammars of `--chunk-strategy auto`, loaded on demand.
//!
//! tree-sitter and its grammars are a module of their own
//! (`web/grammars`), bigger than the engine: the page fetches it only
//! when a run is about to chunk a code file under `auto`. The Worker
//! registers how to load it ([`set_syntax_loader`]); the first run that
//! needs it awaits the loader and installs the module's `declarations`
//! as core's declaration finder for this thread.

use std::cell::RefCell;

use js_sys::{Function, Promise, Uint32Array};
use qmd_core::Error;
use qmd_core::chunk::{ChunkStrategy, Declarations, Language, SyntaxFinder, install_syntax_finder, syntax_available};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, future_to_promise};

use crate::js::{js_error, message_of, to_js, to_value};

thread_local! {
    static LOADER: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// A `chunkStrategy` argument: absent, or qmd's two values.
pub fn strategy_arg(value: Option<&str>) -> Result<Option<ChunkStrategy>, String> {
    value.map(ChunkStrategy::parse).transpose()
}

/// How to load the grammars: `() => Promise<(content, language) =>
/// Uint32Array>`, the grammar module's `declarations` once initialised.
/// Without a loader, code files under `auto` keep the markdown break
/// points and the run reports it, as for a file no grammar can read.
#[wasm_bindgen(js_name = setSyntaxLoader)]
pub fn set_syntax_loader(loader: Function) {
    LOADER.set(Some(loader));
}

/// Loads and installs the grammars unless they already are (or no loader
/// was given). A failed load fails the run that needed it: chunking its
/// code by the markdown rules instead would be recorded as `auto`.
pub async fn ensure_loaded() -> qmd_core::Result<()> {
    if syntax_available() {
        return Ok(());
    }
    let Some(loader) = LOADER.with_borrow(Clone::clone) else {
        return Ok(());
    };
    let failed = |e: JsValue| js_error("loading the code grammars", e);
    let loading = loader.call0(&JsValue::NULL).map_err(failed)?;
    let find: Function = JsFuture::from(Promise::resolve(&loading))
        .await
        .map_err(failed)?
        .dyn_into()
        .map_err(|_| Error::invalid("loading the code grammars: the loader gave no function"))?;
    install_syntax_finder(Some(finder(find)));
    Ok(())
}

/// The grammar module's `declarations(content, language)` as a finder:
/// flat (char position, score) pairs, or the reason it threw.
fn finder(declarations: Function) -> SyntaxFinder {
    Box::new(move |content, language| {
        let answer = declarations
            .call2(&JsValue::NULL, &JsValue::from_str(content), &JsValue::from_str(language.name()))
            .map_err(|e| message_of(&e))?;
        let flat = answer
            .dyn_into::<Uint32Array>()
            .map_err(|_| "the grammar module answered with no Uint32Array".to_string())?
            .to_vec();
        Ok(flat.chunks_exact(2).map(|pair| (pair[0] as usize, pair[1])).collect())
    })
}

#[derive(serde::Serialize)]
struct ChunkedDocument {
    chunks: Vec<DocumentChunk>,
    /// Why a code file kept the markdown break points, when it did.
    fallback: Option<String>,
}

#[derive(serde::Serialize)]
struct DocumentChunk {
    text: String,
    /// Start, in chars.
    pos: usize,
}

/// qmd's `chunkDocumentAsync`: `content` cut with qmd's char sizes (3,600
/// chars, 15% overlap), at a code file's declarations too under `"auto"`
/// (the grammars loaded first); `path` names the language. Resolves to
/// `{chunks: [{text, pos}], fallback}`.
#[wasm_bindgen(js_name = chunkDocument)]
pub fn chunk_document(content: String, path: String, chunk_strategy: Option<String>) -> Promise {
    future_to_promise(async move {
        let strategy = strategy_arg(chunk_strategy.as_deref()).map_err(|e| JsError::new(&e))?.unwrap_or_default();
        if strategy == ChunkStrategy::Auto && Language::of_path(&path).is_some() {
            ensure_loaded().await.map_err(to_js)?;
        }
        let (declarations, fallback) = match Declarations::of(&content, &path, strategy) {
            Ok(found) => (found, None),
            Err(fallback) => (Declarations::default(), Some(fallback.to_string())),
        };
        let chunks = qmd_core::chunk::chunk_document(&content, &declarations)
            .into_iter()
            .map(|chunk| DocumentChunk { text: chunk.text, pos: chunk.pos })
            .collect();
        Ok(to_value(&ChunkedDocument { chunks, fallback })?)
    })
}
