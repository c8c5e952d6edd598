//! Small bridges between JavaScript values and the engine's types.

use js_sys::{Array, AsyncIterator, Reflect};
use qmd_core::{Error, ErrorKind};
use serde::Serialize;
use wasm_bindgen::{JsCast, JsError, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{FileSystemDirectoryHandle, StorageManager, WorkerGlobalScope};

/// An engine error from a failed browser call, naming what was attempted.
pub fn js_error(context: &str, e: JsValue) -> Error {
    Error::new(ErrorKind::Io, format!("{context}: {}", message_of(&e)))
}

/// What a thrown JavaScript value says: an `Error`'s message, a string.
pub fn message_of(e: &JsValue) -> String {
    Reflect::get(e, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

/// An engine error as a JavaScript `Error` (its message is qmd's wording).
pub fn to_js(e: Error) -> JsError {
    JsError::new(&e.message)
}

/// A result as a plain object: `null` for `None`, objects for maps. Made
/// by `JSON.parse`, not by assigning keys: a map's keys come from files
/// (frontmatter metadata), and `obj["__proto__"] = v` would set the
/// object's prototype where `JSON.parse` makes an own key.
pub fn to_value<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    let converting = |e: &dyn std::fmt::Display| JsError::new(&format!("converting a result for JavaScript: {e}"));
    let json = serde_json::to_string(value).map_err(|e| converting(&e))?;
    js_sys::JSON::parse(&json).map_err(|e| converting(&message_of(&e)))
}

/// A plain object from JavaScript as `T` (`undefined` gives defaults).
pub fn from_value<T: serde::de::DeserializeOwned + Default>(value: JsValue) -> Result<T, JsError> {
    if value.is_undefined() || value.is_null() {
        return Ok(T::default());
    }
    serde_wasm_bindgen::from_value(value).map_err(|e| JsError::new(&format!("bad options: {e}")))
}

/// The `(name, handle)` entries of a directory handle.
pub async fn next_entries(dir: &FileSystemDirectoryHandle) -> Result<Vec<(String, JsValue)>, JsValue> {
    let iterator: AsyncIterator = dir.entries();
    let mut out = Vec::new();
    loop {
        let step = JsFuture::from(iterator.next()?).await?;
        if Reflect::get(&step, &"done".into())?.is_truthy() {
            return Ok(out);
        }
        let pair: Array = Reflect::get(&step, &"value".into())?.unchecked_into();
        if let Some(name) = pair.get(0).as_string() {
            out.push((name, pair.get(1)));
        }
    }
}

/// The origin's OPFS root, from the worker this code runs in.
pub async fn opfs_root() -> Result<FileSystemDirectoryHandle, Error> {
    let scope: WorkerGlobalScope = js_sys::global()
        .dyn_into()
        .map_err(|_| Error::invalid("the qmd index runs in a dedicated Worker (OPFS sync access needs one)"))?;
    let storage: StorageManager = scope.navigator().storage();
    let root = JsFuture::from(storage.get_directory()).await.map_err(|e| js_error("opening OPFS", e))?;
    Ok(root.unchecked_into())
}
