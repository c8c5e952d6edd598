//! The code grammars of `--chunk-strategy auto` in the browser.
//!
//! tree-sitter and its grammars are about 4.7 MB of wasm (470 KB
//! gzipped), more than the engine itself, and only a code collection
//! under `auto` needs them: so they are a module of their own, which the
//! engine's Worker loads the first time a run chunks a code file, and
//! installs as the engine's declaration finder. The queries and scores are
//! core's, so the page cuts code where the CLI and qmd do.

use qmd_core::chunk::{Declarations, Language};
use wasm_bindgen::prelude::*;

/// The declarations of `content` read as `language` (a name such as
/// `"typescript"`), as (char position, score) pairs flattened into one
/// array; throws with the reason when the file cannot be read that way.
#[wasm_bindgen]
pub fn declarations(content: &str, language: &str) -> Result<Vec<u32>, JsError> {
    let language = Language::named(language).ok_or_else(|| JsError::new(&format!("no grammar named {language:?}")))?;
    let found = Declarations::parse(content, language).map_err(|reason| JsError::new(&reason))?;
    Ok(found.pairs().flat_map(|(pos, score)| [pos as u32, score]).collect())
}
