//! qmd's query expansion in the page: the model's generation a token at a
//! time, with the Worker's event loop let in between (about every 50 ms)
//! so progress reaches the page and a cancel message is seen; expansions
//! cached for the page's life, keyed as qmd keys them (query and model).

use std::cell::RefCell;
use std::collections::HashMap;

use js_sys::{Function, Promise};
use qmd_core::query::expansion::{cache_key, parse_expansion};
use qmd_core::{Result, TypedSearch};
use wasm_bindgen::{JsCast, JsError, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::WorkerGlobalScope;

use crate::models::BrowserGenerator;

/// How long the model may hold the Worker before the page hears from it.
const YIELD_EVERY_MS: f64 = 50.0;

/// The message a cancelled query rejects with.
pub const CANCELLED: &str = "query cancelled";

/// The hooks a caller gives an expansion: progress `(text so far, tokens,
/// most tokens)` and `cancelled() -> bool`.
pub struct Hooks<'a> {
    pub on_progress: Option<&'a Function>,
    pub cancelled: Option<&'a Function>,
}

impl Hooks<'_> {
    fn report(&self, text: &str, tokens: usize) {
        if let Some(f) = self.on_progress {
            let max = qmd_core::generate::expander::MAX_EXPANSION_TOKENS;
            let _ = f.call3(&JsValue::NULL, &text.into(), &(tokens as f64).into(), &(max as f64).into());
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.is_some_and(|f| f.call0(&JsValue::NULL).is_ok_and(|v| v.is_truthy()))
    }
}

/// Expansions made in this page, by [`cache_key`].
#[derive(Default)]
pub struct ExpansionCache(RefCell<HashMap<String, Vec<TypedSearch>>>);

impl ExpansionCache {
    /// `query`'s expansion by `generator`: from the cache, or generated
    /// (an empty list when nothing valid came out, which is not cached).
    /// The outer error is a cancel (the query stops); the inner one a
    /// failed generation (qmd then searches the query alone).
    pub async fn expand(
        &self,
        generator: &BrowserGenerator,
        query: &str,
        hooks: &Hooks<'_>,
    ) -> std::result::Result<Result<Vec<TypedSearch>>, JsError> {
        let key = cache_key(query, &generator.model);
        if let Some(hit) = self.0.borrow().get(&key) {
            return Ok(Ok(hit.clone()));
        }
        hooks.report("", 0);
        next_macrotask().await;
        if hooks.is_cancelled() {
            return Err(JsError::new(CANCELLED));
        }
        let mut run = match generator.expander.start_async(query).await {
            Ok(run) => run,
            Err(e) => return Ok(Err(e)),
        };
        let mut last_yield = js_sys::Date::now();
        loop {
            match run.step_async().await {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => return Ok(Err(e)),
            }
            if js_sys::Date::now() - last_yield >= YIELD_EVERY_MS {
                hooks.report(&run.text(), run.tokens());
                next_macrotask().await;
                if hooks.is_cancelled() {
                    return Err(JsError::new(CANCELLED));
                }
                last_yield = js_sys::Date::now();
            }
        }
        let text = run.text();
        hooks.report(&text, run.tokens());
        let searches = parse_expansion(&text, query, true);
        if !searches.is_empty() {
            self.0.borrow_mut().insert(key, searches.clone());
        }
        Ok(Ok(searches))
    }

    /// Drops `query`'s expansion by `model` (qmd's rule for one whose
    /// searches all came back empty).
    pub fn forget(&self, query: &str, model: &str) {
        self.0.borrow_mut().remove(&cache_key(query, model));
    }
}

/// Resolves after the Worker's pending messages had their turn: a
/// `setTimeout(0)` macrotask (a resolved Promise would run before them).
async fn next_macrotask() {
    let promise = Promise::new(&mut |resolve: Function, _| {
        let scheduled = js_sys::global()
            .dyn_into::<WorkerGlobalScope>()
            .ok()
            .and_then(|scope| scope.set_timeout_with_callback(&resolve).ok());
        if scheduled.is_none() {
            let _ = resolve.call0(&JsValue::NULL);
        }
    });
    let _ = JsFuture::from(promise).await;
}
