//! The JSON of the OpenAI-compatible endpoints: requests as clients send
//! them, answers as they expect them, errors in OpenAI's `{"error": …}`.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Most inputs in one embeddings request (OpenAI's own limit).
pub const MAX_INPUTS: usize = 2048;
/// Most documents in one rerank request.
pub const MAX_DOCUMENTS: usize = 1000;

/// A refused request: HTTP status and OpenAI's error object.
#[derive(Debug, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    pub kind: &'static str,
    pub param: Option<&'static str>,
    pub code: Option<&'static str>,
}

impl ApiError {
    pub fn invalid(param: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status: 400, message: message.into(), kind: "invalid_request_error", param: Some(param), code: None }
    }

    pub fn body(&self) -> Value {
        json!({"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}})
    }
}

/// `input` of `/v1/embeddings`: one text or several (token-id arrays, which
/// OpenAI also takes, mean another tokenizer's ids and are refused).
#[derive(Deserialize)]
#[serde(untagged)]
enum Input {
    One(String),
    Many(Vec<Value>),
}

#[derive(Deserialize)]
struct RawEmbeddingsRequest {
    input: Option<Input>,
    model: Option<String>,
    encoding_format: Option<String>,
    dimensions: Option<u64>,
}

/// How vectors are sent: JSON numbers, or base64 of little-endian f32s
/// (what the official Python client asks for by default).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Encoding {
    Float,
    Base64,
}

#[derive(Debug, PartialEq)]
pub struct EmbeddingsRequest {
    pub input: Vec<String>,
    pub model: Option<String>,
    pub encoding: Encoding,
    pub dimensions: Option<u64>,
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid("body", format!("The body is not valid JSON for this endpoint: {e}")))
}

pub fn embeddings_request(body: &[u8]) -> Result<EmbeddingsRequest, ApiError> {
    let raw: RawEmbeddingsRequest = parse(body)?;
    let input = match raw.input {
        None => return Err(ApiError::invalid("input", "'input' is required: a string or an array of strings")),
        Some(Input::One(text)) => vec![text],
        Some(Input::Many(items)) => items
            .into_iter()
            .map(|item| match item {
                Value::String(text) => Ok(text),
                _ => Err(ApiError::invalid(
                    "input",
                    "'input' must be a string or an array of strings (token ids are not taken: send the text)",
                )),
            })
            .collect::<Result<_, _>>()?,
    };
    if input.is_empty() {
        return Err(ApiError::invalid("input", "'input' is an empty array"));
    }
    if input.len() > MAX_INPUTS {
        return Err(ApiError::invalid(
            "input",
            format!("'input' has {} items; at most {MAX_INPUTS} per request", input.len()),
        ));
    }
    let encoding = match raw.encoding_format.as_deref() {
        None | Some("float") => Encoding::Float,
        Some("base64") => Encoding::Base64,
        Some(other) => {
            return Err(ApiError::invalid(
                "encoding_format",
                format!("'encoding_format' must be \"float\" or \"base64\" (got \"{other}\")"),
            ));
        }
    };
    Ok(EmbeddingsRequest { input, model: raw.model, encoding, dimensions: raw.dimensions })
}

/// A rerank document: text, or `{"text": …}` (Cohere's and Jina's objects).
#[derive(Deserialize)]
#[serde(untagged)]
enum Document {
    Text(String),
    Object { text: String },
}

#[derive(Deserialize)]
struct RawRerankRequest {
    query: Option<String>,
    documents: Option<Vec<Document>>,
    model: Option<String>,
    top_n: Option<usize>,
    #[serde(default)]
    return_documents: bool,
}

#[derive(Debug, PartialEq)]
pub struct RerankRequest {
    pub query: String,
    pub documents: Vec<String>,
    pub model: Option<String>,
    pub top_n: Option<usize>,
    pub return_documents: bool,
}

pub fn rerank_request(body: &[u8]) -> Result<RerankRequest, ApiError> {
    let raw: RawRerankRequest = parse(body)?;
    let query = raw.query.ok_or_else(|| ApiError::invalid("query", "'query' is required"))?;
    let documents: Vec<String> = raw
        .documents
        .ok_or_else(|| {
            ApiError::invalid("documents", "'documents' is required: an array of strings or {\"text\"} objects")
        })?
        .into_iter()
        .map(|d| match d {
            Document::Text(text) | Document::Object { text } => text,
        })
        .collect();
    if documents.len() > MAX_DOCUMENTS {
        return Err(ApiError::invalid(
            "documents",
            format!("'documents' has {} items; at most {MAX_DOCUMENTS} per request", documents.len()),
        ));
    }
    Ok(RerankRequest { query, documents, model: raw.model, top_n: raw.top_n, return_documents: raw.return_documents })
}

/// The model a request names must be the one served: a vector from
/// another model is never handed out under its name. Its full id or its
/// last path segment (`all-MiniLM-L6-v2`) will do; none at all takes the
/// served one.
pub fn check_model(asked: Option<&str>, served: &str) -> Result<(), ApiError> {
    let Some(asked) = asked else { return Ok(()) };
    let short = served.trim_end_matches('/').rsplit('/').next().unwrap_or(served);
    if asked == served || asked == short {
        return Ok(());
    }
    Err(ApiError {
        status: 404,
        message: format!("The model '{asked}' is not served here; this server embeds with '{served}'"),
        kind: "invalid_request_error",
        param: Some("model"),
        code: Some("model_not_found"),
    })
}

#[derive(Serialize)]
pub struct EmbeddingItem {
    pub object: &'static str,
    pub index: usize,
    pub embedding: Value,
}

/// A vector as the request asked for it.
pub fn encode_vector(vector: &[f32], encoding: Encoding) -> Value {
    match encoding {
        Encoding::Float => Value::Array(vector.iter().map(|&x| json!(x)).collect()),
        Encoding::Base64 => {
            use base64::Engine as _;
            let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings_requests_as_clients_send_them() {
        let one = embeddings_request(br#"{"input":"hello","model":"m"}"#).unwrap();
        assert_eq!((one.input, one.encoding), (vec!["hello".to_string()], Encoding::Float));
        let many = embeddings_request(br#"{"input":["a","b"],"encoding_format":"base64"}"#).unwrap();
        assert_eq!((many.input.len(), many.encoding), (2, Encoding::Base64));
        for (body, param) in [
            (&br#"{"model":"m"}"#[..], "input"),
            (br#"{"input":[]}"#, "input"),
            (br#"{"input":[[1,2,3]]}"#, "input"),
            (br#"{"input":"a","encoding_format":"int8"}"#, "encoding_format"),
            (br#"[1]"#, "body"),
        ] {
            assert_eq!(embeddings_request(body).unwrap_err().param, Some(param), "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn rerank_requests_in_each_shape() {
        let r = rerank_request(br#"{"query":"q","documents":["a",{"text":"b"}],"top_n":1,"return_documents":true}"#)
            .unwrap();
        assert_eq!((r.documents, r.top_n, r.return_documents), (vec!["a".to_string(), "b".to_string()], Some(1), true));
        assert_eq!(rerank_request(br#"{"documents":["a"]}"#).unwrap_err().param, Some("query"));
        assert_eq!(rerank_request(br#"{"query":"q"}"#).unwrap_err().param, Some("documents"));
    }

    #[test]
    fn models_by_full_or_short_name_only() {
        let served = "sentence-transformers/all-MiniLM-L6-v2";
        assert!(check_model(None, served).is_ok());
        assert!(check_model(Some(served), served).is_ok());
        assert!(check_model(Some("all-MiniLM-L6-v2"), served).is_ok());
        assert_eq!(check_model(Some("text-embedding-3-small"), served).unwrap_err().status, 404);
    }

    #[test]
    fn base64_is_little_endian_f32() {
        let Value::String(text) = encode_vector(&[1.0, -0.5], Encoding::Base64) else { panic!() };
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD.decode(text).unwrap();
        assert_eq!(bytes, [1.0f32.to_le_bytes(), (-0.5f32).to_le_bytes()].concat());
    }
}
