"""Independent reference for the models: BERT written out in NumPy from the
architecture (Devlin et al.; Hugging Face's BertModel), reading the same
safetensors weights, tokenised by Hugging Face's Python tokenizers.

    reference.py embed  MODEL_DIR  < texts.json   > vectors.json
    reference.py rerank MODEL_DIR  < {"query", "documents"} > scores.json
    reference.py write-reranker OUT_DIR   (a small random cross-encoder)

Computed in float64, so the comparison measures our error, not NumPy's.
"""
import json
import math
import os
import sys

import numpy as np
from safetensors.numpy import load_file, save_file
from tokenizers import Tokenizer


def load(model_dir):
    config = json.load(open(os.path.join(model_dir, "config.json")))
    weights = {k: v.astype(np.float64) for k, v in load_file(os.path.join(model_dir, "model.safetensors")).items()}
    tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    # tokenizer.json may pad to a fixed length (MiniLM's pads to 128):
    # sentence-transformers masks padding out, so the reference has none.
    tokenizer.no_padding()
    return config, weights, tokenizer


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def bert(config, w, ids, type_ids, prefix=""):
    p = lambda name: w[prefix + name]
    eps = config.get("layer_norm_eps", 1e-12)
    heads = config["num_attention_heads"]
    n = len(ids)
    x = p("embeddings.word_embeddings.weight")[ids] + p("embeddings.position_embeddings.weight")[np.arange(n)] \
        + p("embeddings.token_type_embeddings.weight")[type_ids]
    x = layer_norm(x, p("embeddings.LayerNorm.weight"), p("embeddings.LayerNorm.bias"), eps)
    d = x.shape[1] // heads
    for i in range(config["num_hidden_layers"]):
        l = lambda name: p(f"encoder.layer.{i}.{name}")
        dense = lambda y, name: y @ l(name + ".weight").T + l(name + ".bias")
        q = dense(x, "attention.self.query").reshape(n, heads, d).transpose(1, 0, 2)
        k = dense(x, "attention.self.key").reshape(n, heads, d).transpose(1, 0, 2)
        v = dense(x, "attention.self.value").reshape(n, heads, d).transpose(1, 0, 2)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(n, heads * d)
        x = layer_norm(dense(context, "attention.output.dense") + x,
                       l("attention.output.LayerNorm.weight"), l("attention.output.LayerNorm.bias"), eps)
        inner = gelu(dense(x, "intermediate.dense"))
        x = layer_norm(dense(inner, "output.dense") + x, l("output.LayerNorm.weight"), l("output.LayerNorm.bias"), eps)
    return x


def embed(model_dir, texts):
    config, w, tokenizer = load(model_dir)
    max_len = json.load(open(os.path.join(model_dir, "sentence_bert_config.json")))["max_seq_length"]
    tokenizer.enable_truncation(max_len)
    out = []
    for text in texts:
        enc = tokenizer.encode(text)
        hidden = bert(config, w, np.array(enc.ids), np.array(enc.type_ids))
        pooled = hidden.mean(0)  # all tokens are real: no padding here
        out.append((pooled / np.linalg.norm(pooled)).tolist())
    return out


def rerank(model_dir, query, documents):
    config, w, tokenizer = load(model_dir)
    tokenizer.enable_truncation(config["max_position_embeddings"])
    scores = []
    for doc in documents:
        enc = tokenizer.encode(query, doc)
        hidden = bert(config, w, np.array(enc.ids), np.array(enc.type_ids), prefix="bert.")
        pooled = np.tanh(hidden[0] @ w["bert.pooler.dense.weight"].T + w["bert.pooler.dense.bias"])
        logit = pooled @ w["classifier.weight"][0] + w["classifier.bias"][0]
        scores.append(1.0 / (1.0 + math.exp(-logit)))
    return scores


def write_reranker(out_dir, tokenizer_json):
    """A small BertForSequenceClassification with random weights (seeded),
    in the Hugging Face layout, using a real WordPiece tokenizer."""
    rng = np.random.default_rng(20261121)
    vocab = json.load(open(tokenizer_json))["model"]["vocab"]
    h, inter, layers, heads, positions = 64, 128, 2, 4, 128
    config = {"architectures": ["BertForSequenceClassification"], "model_type": "bert", "hidden_act": "gelu",
              "hidden_size": h, "intermediate_size": inter, "num_hidden_layers": layers,
              "num_attention_heads": heads, "max_position_embeddings": positions, "type_vocab_size": 2,
              "vocab_size": len(vocab), "layer_norm_eps": 1e-12, "id2label": {"0": "LABEL_0"}}
    t = {}
    r = lambda *shape: (rng.standard_normal(shape) * 0.08).astype(np.float32)
    t["bert.embeddings.word_embeddings.weight"] = r(len(vocab), h)
    t["bert.embeddings.position_embeddings.weight"] = r(positions, h)
    t["bert.embeddings.token_type_embeddings.weight"] = r(2, h)
    t["bert.embeddings.LayerNorm.weight"] = 1 + r(h)
    t["bert.embeddings.LayerNorm.bias"] = r(h)
    for i in range(layers):
        pre = f"bert.encoder.layer.{i}."
        for name, (o, n) in {"attention.self.query": (h, h), "attention.self.key": (h, h),
                             "attention.self.value": (h, h), "attention.output.dense": (h, h),
                             "intermediate.dense": (inter, h), "output.dense": (h, inter)}.items():
            t[pre + name + ".weight"] = r(o, n)
            t[pre + name + ".bias"] = r(o)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[pre + norm + ".weight"] = 1 + r(h)
            t[pre + norm + ".bias"] = r(h)
    t["bert.pooler.dense.weight"] = r(h, h)
    t["bert.pooler.dense.bias"] = r(h)
    t["classifier.weight"] = r(1, h) * 25
    t["classifier.bias"] = r(1)
    os.makedirs(out_dir, exist_ok=True)
    save_file(t, os.path.join(out_dir, "model.safetensors"))
    json.dump(config, open(os.path.join(out_dir, "config.json"), "w"), indent=1)
    with open(tokenizer_json, "rb") as src, open(os.path.join(out_dir, "tokenizer.json"), "wb") as dst:
        dst.write(src.read())


if __name__ == "__main__":
    command, target = sys.argv[1], sys.argv[2]
    if command == "embed":
        json.dump(embed(target, json.load(sys.stdin)), sys.stdout)
    elif command == "rerank":
        request = json.load(sys.stdin)
        json.dump(rerank(target, request["query"], request["documents"]), sys.stdout)
    elif command == "write-reranker":
        write_reranker(target, sys.argv[3])
        json.dump(None, sys.stdout)
    else:
        sys.exit(f"unknown command {command}")
