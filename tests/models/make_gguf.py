"""Writes GGUF test files for the GGUF reader and the llama.cpp comparison tests.

    make_gguf.py minilm MODEL_DIR OUT.gguf --type f32|q8_0|f16
    make_gguf.py blocks OUT.gguf OUT_EXPECTED.bin [--seed N]
    make_gguf.py gemma CORPUS_DIR OUT.gguf --type f32|q8_0 [--size test|full] [--seed N]
    make_gguf.py qwen3-reranker CORPUS_DIR OUT.gguf --type f32|q8_0 [--size test|full] [--seed N]
    make_gguf.py qwen3 CORPUS_DIR OUT.gguf --type f32|q8_0 [--size test|full] [--seed N]
    make_gguf.py dequantize IN.gguf OUT.gguf

`minilm` converts sentence-transformers all-MiniLM-L6-v2 (a Hugging Face
BertModel directory) the way llama.cpp's convert_hf_to_gguf.py does for
BertModel (conversion/base.py ModelBase/TextModel + conversion/bert.py
BertModel): same tensor names and order, same metadata keys and order, same
tensor types per --outtype, same quantizer (gguf.quants). The converter itself
needs torch and transformers; this re-implements its steps with NumPy,
safetensors.numpy and Hugging Face `tokenizers` so that it runs in the test
venv. Every place it mirrors a converter step is marked "converter:".

`blocks` writes one (3 x 512) tensor per type F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q4_K
Q5_K Q6_K named `t.<type>` holding random block bytes (f16 scales kept finite),
plus `test.<type>` metadata of every GGUF value type, and writes gguf-py's
dequantization of each tensor (little-endian f32, in that order) to
OUT_EXPECTED.bin. It prints a JSON summary {"metadata": {key: value},
"tensors": [{name, type, shape}]} on stdout.

`gemma` writes an EmbeddingGemma-architecture model (`gemma-embedding`, the
architecture of qmd's default embedding model) with random weights, as
llama.cpp's converter writes EmbeddingGemma (conversion/gemma.py
EmbeddingGemma with --sentence-transformers-dense-modules): Gemma's
SentencePiece vocabulary layout and flags, norm weights with the +1 folded in,
the sentence-transformers Dense layers as dense_2/dense_3. The vocabulary is a
SentencePiece BPE model trained on the markdown files in CORPUS_DIR (plus a
few lines in other scripts), with byte fallback and user-defined pieces, so
llama.cpp's merge-by-score tokenizer has real work to do. `--size test` keeps
EmbeddingGemma-300M's head layout (3 query heads, 1 key/value head of 256)
in 6 narrow layers (one global, five windowed) for the tests; `--size full` is
the real model's shape (768 wide, 24 layers, FFN 1152, Dense 3072) for the
benchmark, with the small vocabulary.

`qwen3-reranker` writes a Qwen3-Reranker-architecture model (`qwen3` with a
ranking head, the architecture of qmd's default reranker) with random weights,
as llama.cpp's converter writes Qwen3-Reranker (conversion/qwen.py
Qwen3Model with is_rerank): the byte-level BPE vocabulary (`gpt2`, pre-tokenizer
`qwen2`) with Qwen's control tokens and its non-special `<think>` tokens, the
tied token embeddings' rows for "yes" and "no" as `cls.output`, pooling RANK,
the yes/no labels and the rerank chat template. The vocabulary is a byte-level
BPE trained (Hugging Face `tokenizers`) on the markdown files in CORPUS_DIR
with Qwen2's pre-tokenizer expression. `--size test` keeps Qwen3-0.6B's head
layout (head size 128, two query heads per key/value head) in 4 narrow layers;
`--size full` is Qwen3-Reranker-0.6B's shape (1024 wide, 28 layers, 16/8
heads, FFN 3072) with the small vocabulary, for the benchmark.

`qwen3` writes the same architecture as a causal LM, the shape of qmd's
query-expansion model (Qwen3-1.7B): the same vocabulary, an LM head of its
own (untied, so greedy decoding with random weights does not just repeat
the last token) scaled so each step has a clear most probable token, no
pooling, and the ChatML chat template. `--size test` is 4 narrow layers; `--size full` is
Qwen3-1.7B's shape (2048 wide, 28 layers, 16/8 heads, FFN 6144).

`dequantize` rewrites a GGUF file with every tensor as F32 (gguf-py's
dequantization) and the same metadata but the file type: a quantized model's
exact float twin, for comparisons free of activation quantization.

gguf-py comes from llama.cpp's source tree (PYTHONPATH=<llamacpp>/gguf-py; when
it is not importable, $LLAMA_REF_DIR/llamacpp/gguf-py is tried, LLAMA_REF_DIR
being what scripts/llama-ref.sh prints). gguf-py imports PyYAML. Run it with the
test venv's python (scripts/python-env.sh): numpy, safetensors, tokenizers.
"""
import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

try:
    import gguf
except ImportError:
    ref = os.environ.get("LLAMA_REF_DIR")
    if not ref:
        sys.exit("make_gguf.py: cannot import gguf; set PYTHONPATH=<llamacpp>/gguf-py or LLAMA_REF_DIR "
                 "(the directory scripts/llama-ref.sh prints)")
    sys.path.insert(0, os.path.join(ref, "llamacpp", "gguf-py"))
    import gguf  # noqa: E402

from gguf import GGMLQuantizationType as QT  # noqa: E402

# --------------------------------------------------------------------------
# minilm: BertModel conversion
# --------------------------------------------------------------------------

FTYPES = {
    "f32": gguf.LlamaFileType.ALL_F32,
    "f16": gguf.LlamaFileType.MOSTLY_F16,
    "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
}

# converter: TextModel.get_vocab_base_pre's string, hashed over the tokenizer's
# ids (with special tokens). Known answers; the full table is read from the
# converter source next to gguf-py when it is there.
CHKTXT = '\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български \'\'\'\'\'\'```````""""......!!!!!!?????? I\'ve been \'told he\'s there, \'RE you sure? \'M not sure I\'ll make it, \'D you like some tea? We\'Ve a\'lL'
KNOWN_PRE = {
    # ref: https://huggingface.co/BAAI/bge-small-en-v1.5 (bert-base-uncased WordPiece; MiniLM's too)
    "0876d13b50744004aa9aeae05e7b0647eac9d801b5ba4668afc01e709c15e19f": "bert-bge",
}


def pre_tokenizer_table():
    table = dict(KNOWN_PRE)
    source = Path(gguf.__file__).resolve().parents[2] / "conversion" / "base.py"
    if source.is_file():
        text = source.read_text(encoding="utf-8")
        m = re.search(r"^\s*chktxt = (.*)$", text, re.M)
        if m and eval(m.group(1), {}) != CHKTXT:  # a literal from llama.cpp's own source
            raise SystemExit(f"make_gguf.py: chktxt in {source} differs from ours; update CHKTXT")
        for h, name in re.findall(r'chkhsh == "([0-9a-f]{64})":\s*\n(?:\s*#[^\n]*\n)*\s*res = "([^"]+)"', text):
            table.setdefault(h, name)
    return table


def does_token_look_special(token):
    # converter: TextModel.does_token_look_special
    seems = token in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
    seems = seems or (token.startswith("<|") and token.endswith("|>"))
    seems = seems or (token.startswith("<｜") and token.endswith("｜>"))
    seems = seems or (token.startswith("<unused") and token.endswith(">"))
    return seems


def get_vocab_base(model_dir, hparams):
    """converter: TextModel.get_vocab_base (AutoTokenizer -> tokenizers)."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    # transformers' encode() without padding/truncation switches both off
    tok.no_padding()
    tok.no_truncation()
    vocab = tok.get_vocab(with_added_tokens=True)
    vocab_size = hparams.get("vocab_size", len(vocab))
    assert max(vocab.values()) < vocab_size

    chkhsh = hashlib.sha256(str(tok.encode(CHKTXT).ids).encode()).hexdigest()
    tokpre = pre_tokenizer_table().get(chkhsh)
    if tokpre is None:
        raise SystemExit(f"make_gguf.py: pre-tokenizer not recognized (chkhsh {chkhsh}), as the converter would fail")

    tj = json.load(open(model_dir / "tokenizer.json", encoding="utf-8"))
    added = {a["id"]: a for a in tj.get("added_tokens", [])}
    reverse = {i: t for t, i in vocab.items()}
    tokens, toktypes = [], []
    for i in range(vocab_size):
        if i not in reverse:
            tokens.append(f"[PAD{i}]")
            toktypes.append(gguf.TokenType.UNUSED)
            continue
        token = reverse[i]
        if i in added and added[i]["content"] == token:
            if not added[i].get("normalized", True):
                token = tok.decode(tok.encode(token, add_special_tokens=False).ids, skip_special_tokens=False)
            if added[i].get("special", False) or does_token_look_special(token):
                toktypes.append(gguf.TokenType.CONTROL)
            else:
                token = token.replace("\u2581", " ")
                toktypes.append(gguf.TokenType.USER_DEFINED)
        else:
            toktypes.append(gguf.TokenType.NORMAL)
        tokens.append(token)
    return tokens, toktypes, tokpre


def bert_filter(name):
    """converter: BertModel.filter_tensors -> TextModel -> ModelBase."""
    if name.startswith("bert."):
        name = name[5:]
    if name.endswith(".gamma"):
        name = name[:-6] + ".weight"
    if name.endswith(".beta"):
        name = name[:-5] + ".bias"
    if name in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"):
        return None
    if name.startswith(("cls.predictions", "cls.seq_relationship")):
        return None
    if name.startswith(("mlp", "vit.", "vpm.", "siglip2.", "conformer.", "merger.", "resampler.", "sound_encoder.",
                        "sound_projection.", "speech_embeddings.")):
        return None
    if name.endswith("e_score_correction_bias"):
        name = name.replace("e_score_correction_bias", "e_score_correction.bias")
    return name.replace("language_model.", "")


def tensor_qtype(arch, new_name, bid, n_dims, ftype):
    """converter: ModelBase.prepare_tensors' choice of a tensor's type."""
    def match(key):
        if key not in gguf.MODEL_TENSORS[arch]:
            return False
        key_name = gguf.TENSOR_NAMES[key]
        if "{bid}" in key_name:
            if bid is None:
                return False
            key_name = key_name.format(bid=bid)
        elif bid is not None:
            return False
        return new_name == key_name + ".weight"

    qtype = False  # tensor_force_quant: no override for BERT
    # "Most of the codebase that takes in 1D tensors or norms only handles F32 tensors"
    if n_dims <= 1 or new_name.endswith("_norm.weight"):
        qtype = QT.F32
    # "Some tensor types are always in float32" (the ones BERT has: position
    # and token-type embeddings), and anything not named *.weight
    if qtype is False and (any(match(k) for k in (gguf.MODEL_TENSOR.POS_EMBD, gguf.MODEL_TENSOR.TOKEN_TYPES))
                           or new_name[-7:] not in (".weight", ".lora_a", ".lora_b")):
        qtype = QT.F32
    # TOKEN_EMBD/OUTPUT only differ for TQ1_0/TQ2_0, so token_embd follows the file type
    if isinstance(qtype, bool):
        qtype = {gguf.LlamaFileType.ALL_F32: QT.F32, gguf.LlamaFileType.MOSTLY_F16: QT.F16,
                 gguf.LlamaFileType.MOSTLY_Q8_0: QT.Q8_0}[ftype]
    return qtype


def pooling_type(model_dir):
    """converter: TextModel._try_set_pooling_type."""
    modules = model_dir / "modules.json"
    if not modules.is_file():
        return None
    path = next((m["path"] for m in json.load(open(modules, encoding="utf-8")) if m["type"].endswith("Pooling")), None)
    if path is None:
        return None
    pooling = json.load(open(model_dir / path / "config.json", encoding="utf-8"))
    if pooling.get("pooling_mode_mean_tokens"):
        return gguf.PoolingType.MEAN
    if pooling.get("pooling_mode_cls_token"):
        return gguf.PoolingType.CLS
    if pooling.get("pooling_mode_lasttoken"):
        return gguf.PoolingType.LAST
    mode = {"mean": gguf.PoolingType.MEAN, "cls": gguf.PoolingType.CLS, "lasttoken": gguf.PoolingType.LAST}
    if pooling.get("pooling_mode") in mode:
        return mode[pooling["pooling_mode"]]
    raise SystemExit("make_gguf.py: only MEAN, CLS and LAST pooling are supported (as in the converter)")


def find_hparam(hparams, keys):
    return next((hparams[k] for k in keys if k in hparams), None)


def minilm(model_dir, out, type_name):
    from safetensors.numpy import load_file
    model_dir = Path(model_dir)
    ftype = FTYPES[type_name]
    arch = gguf.MODEL_ARCH.BERT
    # converter: load_hparams (AutoConfig.to_dict(); config.json is what it reads)
    hparams = json.load(open(model_dir / "config.json", encoding="utf-8"))
    archs = hparams.get("architectures") or []
    if archs[:1] not in (["BertModel"], ["BertForMaskedLM"]):
        raise SystemExit(f"make_gguf.py: expected a BertModel, config.json says {archs}")
    block_count = find_hparam(hparams, ["n_layers", "num_hidden_layers", "n_layer", "num_layers"])
    tensor_map = gguf.get_tensor_name_map(arch, block_count)
    writer = gguf.GGUFWriter(path=None, arch=gguf.MODEL_ARCH_NAMES[arch])  # writes general.architecture

    # converter: index_tensors (safetensors parts, names sorted) + prepare_tensors
    parts = sorted(f for f in os.listdir(model_dir) if f.startswith("model") and f.endswith(".safetensors"))
    if not parts:
        raise SystemExit(f"make_gguf.py: no model*.safetensors in {model_dir}")
    tensors = {}
    for part in parts:
        for name, data in sorted(load_file(str(model_dir / part)).items()):
            if (new := bert_filter(name)) is not None:
                tensors[new] = data
    report = []
    for name, data in tensors.items():
        if name.endswith((".attention.masked_bias", ".attention.bias", ".rotary_emb.inv_freq")):
            continue
        if data.dtype not in (np.float16, np.float32):
            data = data.astype(np.float32)
        bid = next((int(p) for p in name.split(".") if p.isdecimal()), None)
        new_name = tensor_map.get_name(key=name, try_suffixes=(".weight", ".bias"))
        if new_name is None:
            raise SystemExit(f"make_gguf.py: cannot map tensor {name!r}")
        qtype = tensor_qtype(arch, new_name, bid, len(data.shape), ftype)
        try:
            q = gguf.quants.quantize(data, qtype)
        except gguf.QuantError:
            qtype = QT.F16
            q = gguf.quants.quantize(data, qtype)
        writer.add_tensor(new_name, q, raw_dtype=qtype)
        report.append((new_name, qtype.name, list(reversed(data.shape))))

    # converter: ModelBase.prepare_metadata
    total_params, shared_params, expert_params, expert_count = writer.get_total_parameter_count()
    metadata = gguf.Metadata.load(None, model_dir, None, total_params)
    if metadata.name is None:
        metadata.name = model_dir.name
    if metadata.size_label is None and total_params > 0:
        metadata.size_label = gguf.size_label(total_params, shared_params, expert_params, expert_count)
    writer.add_type(gguf.GGUFType.MODEL)
    metadata.set_gguf_meta_model(writer)

    # converter: TextModel.set_gguf_parameters (the keys BERT's config has)
    writer.add_block_count(block_count)
    if (n := find_hparam(hparams, ["max_position_embeddings", "n_ctx", "n_positions", "max_length",
                                   "max_sequence_length", "model_max_length"])) is not None:
        writer.add_context_length(n)
    if (n := find_hparam(hparams, ["hidden_size", "n_embd", "dim"])) is not None:
        writer.add_embedding_length(n)
    if (n := find_hparam(hparams, ["prefix_dense_intermediate_size", "dense_intermediate_size",
                                   "intermediate_size", "n_inner", "hidden_dim"])) is not None:
        writer.add_feed_forward_length(n)
    if (n := find_hparam(hparams, ["num_attention_heads", "n_head", "n_heads"])) is not None:
        writer.add_head_count(n)
    if (n := find_hparam(hparams, ["num_key_value_heads", "n_kv_heads"])) is not None:
        writer.add_head_count_kv(n)
    if (eps := find_hparam(hparams, ["layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"])) is not None:
        writer.add_layer_norm_eps(eps)
    writer.add_file_type(ftype)
    # converter: BertModel.set_gguf_parameters
    writer.add_causal_attention(False)
    if (pooling := pooling_type(model_dir)) is not None:
        writer.add_pooling_type(pooling)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)

    # converter: BertModel.set_vocab
    tokens, toktypes, tokpre = get_vocab_base(model_dir, hparams)
    writer.add_token_type_count(hparams.get("type_vocab_size", 1))

    def phantom(tok, toktype):
        if toktype == gguf.TokenType.CONTROL:
            return tok
        if tok.startswith("##"):
            return tok[2:]
        return "\u2581" + tok

    tokens = list(map(phantom, tokens, toktypes))
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre(tokpre)
    writer.add_token_list(tokens)
    writer.add_token_types(toktypes)
    gguf.SpecialVocab(model_dir, n_vocab=len(tokens)).add_to_gguf(writer, quiet=True)

    # converter: ModelBase.write
    write(writer, out, report)


def write(writer, out, report):
    """Writes the file, then lists its tensors on stderr."""
    writer.write_header_to_file(path=Path(out))
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    for name, qtype, shape in report:
        print(f"{name:34s} {qtype:5s} {shape}", file=sys.stderr)


# --------------------------------------------------------------------------
# blocks: one tensor per type, random block bytes
# --------------------------------------------------------------------------

BLOCK_TYPES = [QT.F32, QT.F16, QT.BF16, QT.Q8_0, QT.Q4_0, QT.Q4_1, QT.Q4_K, QT.Q5_K, QT.Q6_K]
ROWS, COLS = 3, 512

# byte offsets of the f16 fields in one block, and the range each is drawn from
F16_FIELDS = {
    QT.Q8_0: [(0, -2.0, 2.0)],                   # d, qs[32]
    QT.Q4_0: [(0, -2.0, 2.0)],                   # d, qs[16]
    QT.Q4_1: [(0, -2.0, 2.0), (2, -2.0, 2.0)],   # d, m, qs[16]
    QT.Q4_K: [(0, -2.0, 2.0), (2, 0.0, 1.0)],    # d, dmin, scales[12], qs[128]
    QT.Q5_K: [(0, -2.0, 2.0), (2, 0.0, 1.0)],    # d, dmin, scales[12], qh[32], qs[128]
    QT.Q6_K: [(208, -2.0, 2.0)],                 # ql[128], qh[64], scales[16], d
}


def random_tensor(rng, qtype):
    if qtype == QT.F32:
        return rng.uniform(-4, 4, (ROWS, COLS)).astype("<f4").view(np.uint8)
    if qtype == QT.F16:
        return rng.uniform(-4, 4, (ROWS, COLS)).astype("<f2").view(np.uint8)
    if qtype == QT.BF16:
        f = rng.uniform(-4, 4, (ROWS, COLS)).astype("<f4")
        return (f.view("<u4") >> 16).astype("<u2").view(np.uint8)
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    nblocks = COLS // block_size
    raw = rng.integers(0, 256, (ROWS, nblocks, type_size), dtype=np.uint8)
    for offset, lo, hi in F16_FIELDS[qtype]:
        vals = rng.uniform(lo, hi, (ROWS, nblocks)).astype("<f2")
        raw[:, :, offset:offset + 2] = vals.view(np.uint8).reshape(ROWS, nblocks, 2)
    return raw.reshape(ROWS, nblocks * type_size)


TEST_METADATA = [
    # (key, gguf type name, value, writer call)
    ("test.u8", "u8", 200, lambda w, k, v: w.add_uint8(k, v)),
    ("test.i8", "i8", -100, lambda w, k, v: w.add_int8(k, v)),
    ("test.u16", "u16", 60000, lambda w, k, v: w.add_uint16(k, v)),
    ("test.i16", "i16", -30000, lambda w, k, v: w.add_int16(k, v)),
    ("test.u32", "u32", 4000000000, lambda w, k, v: w.add_uint32(k, v)),
    ("test.i32", "i32", -2000000000, lambda w, k, v: w.add_int32(k, v)),
    ("test.u64", "u64", 18000000000000000000, lambda w, k, v: w.add_uint64(k, v)),
    ("test.i64", "i64", -9000000000000000000, lambda w, k, v: w.add_int64(k, v)),
    ("test.f32", "f32", 3.140625, lambda w, k, v: w.add_float32(k, v)),  # exact in f32
    ("test.f64", "f64", -2.718281828459045, lambda w, k, v: w.add_float64(k, v)),
    ("test.bool", "bool", True, lambda w, k, v: w.add_bool(k, v)),
    ("test.string", "string", "héllo, wörld ✓", lambda w, k, v: w.add_string(k, v)),
    ("test.array_string", "array[string]", ["a", "", "日本語", "\u2581x"],
     lambda w, k, v: w.add_key_value(k, v, gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.STRING)),
    ("test.array_i32", "array[i32]", [1, -2, 2147483647, -2147483648],
     lambda w, k, v: w.add_key_value(k, v, gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.INT32)),
]


def blocks(out, expected_out, seed):
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(path=None, arch="test")
    for key, _, value, add in TEST_METADATA:
        add(writer, key, value)
    expected = []
    summary_tensors = []
    for qtype in BLOCK_TYPES:
        raw = random_tensor(rng, qtype)
        name = f"t.{qtype.name.lower()}"
        writer.add_tensor(name, raw, raw_dtype=qtype)
        values = gguf.quants.dequantize(raw, qtype).astype("<f4").reshape(ROWS, COLS)
        if not np.all(np.isfinite(values)):
            raise SystemExit(f"make_gguf.py: non-finite values in {name}")
        expected.append(values)
        summary_tensors.append({"name": name, "type": qtype.name, "shape": [COLS, ROWS], "nbytes": int(raw.nbytes)})
    writer.write_header_to_file(path=Path(out))
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with open(expected_out, "wb") as f:
        for values in expected:
            f.write(values.astype("<f4").tobytes())
    summary = {
        "metadata": {key: value for key, _, value, _ in TEST_METADATA},
        "metadata_types": {key: t for key, t, _, _ in TEST_METADATA},
        "tensors": summary_tensors,  # shape in GGUF order: [cols (ne0), rows (ne1)]
    }
    json.dump(summary, sys.stdout, ensure_ascii=False, indent=1)
    print()


# --------------------------------------------------------------------------
# Random models: weights, blocks, quantization as the converter does it
# --------------------------------------------------------------------------

class RandomWeights:
    """Normal random matrices scaled so activations keep a unit-ish size
    through the layers, and RMS norm weights near 1."""

    def __init__(self, rng):
        self.rng = rng

    def weight(self, rows, cols, std=None):
        return self.rng.normal(0.0, std if std is not None else cols ** -0.5, (rows, cols)).astype(np.float32)

    def norm(self, n):
        # Gemma3RMSNorm multiplies by (1 + weight), which the converter
        # folds in; Qwen3's norms are plain. Either way: near 1.
        return (1.0 + self.rng.normal(0.0, 0.1, n)).astype(np.float32)


def attention_block(rw, b, dims, post_norms):
    """Block b's tensors in the converter's order: attention with q/k norms,
    then the gated feed-forward; Gemma's post-norms when `post_norms`."""
    w, hd, ffn = dims["width"], dims["head_dim"], dims["ffn"]
    q_width, kv_width = dims["heads"] * hd, dims["kv_heads"] * hd
    tensors = [
        (f"blk.{b}.attn_norm.weight", rw.norm(w)),
        (f"blk.{b}.attn_q.weight", rw.weight(q_width, w)),
        (f"blk.{b}.attn_k.weight", rw.weight(kv_width, w)),
        (f"blk.{b}.attn_v.weight", rw.weight(kv_width, w)),
        (f"blk.{b}.attn_q_norm.weight", rw.norm(hd)),
        (f"blk.{b}.attn_k_norm.weight", rw.norm(hd)),
        (f"blk.{b}.attn_output.weight", rw.weight(w, q_width)),
    ]
    if post_norms:
        tensors.append((f"blk.{b}.post_attention_norm.weight", rw.norm(w)))
    tensors += [
        (f"blk.{b}.ffn_norm.weight", rw.norm(w)),
        (f"blk.{b}.ffn_gate.weight", rw.weight(ffn, w)),
        (f"blk.{b}.ffn_up.weight", rw.weight(ffn, w)),
        (f"blk.{b}.ffn_down.weight", rw.weight(w, ffn)),
    ]
    if post_norms:
        tensors.append((f"blk.{b}.post_ffw_norm.weight", rw.norm(w)))
    return tensors


def add_quantized(writer, arch, tensors, ftype):
    """Adds each tensor as the converter types it for `ftype`; returns the
    report `write` prints."""
    report = []
    for name, data in tensors:
        bid = next((int(p) for p in name.split(".") if p.isdecimal()), None)
        qtype = tensor_qtype(arch, name, bid, len(data.shape), ftype)
        writer.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)
        report.append((name, qtype.name, list(reversed(data.shape))))
    return report


# --------------------------------------------------------------------------
# gemma: an EmbeddingGemma-architecture model with random weights
# --------------------------------------------------------------------------

GEMMA_SIZES = {
    # width, layers, heads, kv heads, head dim, ffn, dense width, window, vocab
    "test": dict(width=256, layers=6, heads=3, kv_heads=1, head_dim=256, ffn=512, dense=1024, window=32, vocab=2000),
    "full": dict(width=768, layers=24, heads=3, kv_heads=1, head_dim=256, ffn=1152, dense=3072, window=512, vocab=2000),
}

# Lines in other scripts, so the vocabulary has pieces for some of them and
# byte fallback for the rest.
EXTRA_TRAINING_TEXT = """Les notes de réunion sont dans le dossier partagé, à côté du budget prévisionnel.
Die Suchergebnisse werden nach Relevanz sortiert; ältere Einträge erscheinen später.
検索エンジンはマークダウンのメモを索引します。日本語の文章も分割されます。
Поиск работает на устройстве, без отправки заметок на сервер.
搜索引擎在本地运行，笔记不会离开你的电脑。
"""

# Pieces the vocabulary keeps whole (SentencePiece user_defined_symbols;
# Gemma's tokenizer_config lists such tokens as non-special added tokens,
# which the converter types USER_DEFINED).
USER_DEFINED = ["<mark>", "</mark>", "\t\t", "[[", "]]"]


def train_vocabulary(corpus_dir, vocab_size, work):
    import sentencepiece as spm
    corpus = work / "corpus.txt"
    paths = sorted(Path(corpus_dir).rglob("*.md"))
    if not paths:
        raise SystemExit(f"make_gguf.py: no .md files in {corpus_dir}")
    with open(corpus, "w", encoding="utf-8") as f:
        for p in paths:
            f.write(p.read_text(encoding="utf-8") + "\n")
        f.write(EXTRA_TRAINING_TEXT)
    prefix = work / "vocab"
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(prefix), vocab_size=vocab_size, model_type="bpe",
        byte_fallback=True, character_coverage=0.9995, split_digits=True, allow_whitespace_only_pieces=True,
        remove_extra_whitespaces=False, add_dummy_prefix=False, normalization_rule_name="identity",
        pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>",
        unk_piece="<unk>", user_defined_symbols=USER_DEFINED, num_threads=1, minloglevel=2,
    )
    return spm.SentencePieceProcessor(model_file=str(prefix) + ".model")


def sentencepiece_vocab(sp):
    """converter: TextModel._create_vocab_sentencepiece (types from the
    SentencePiece model; user-defined pieces as Gemma's added tokens)."""
    tokens, scores, toktypes = [], [], []
    for i in range(sp.vocab_size()):
        piece = sp.id_to_piece(i)
        toktype = gguf.TokenType.NORMAL
        if sp.is_unknown(i):
            toktype = gguf.TokenType.UNKNOWN
        elif sp.is_control(i):
            toktype = gguf.TokenType.CONTROL
        elif sp.is_unused(i):
            toktype = gguf.TokenType.UNUSED
        elif sp.is_byte(i):
            toktype = gguf.TokenType.BYTE
        if piece in USER_DEFINED:
            toktype = gguf.TokenType.USER_DEFINED
        tokens.append(piece.encode("utf-8"))
        scores.append(sp.get_score(i))
        toktypes.append(toktype)
    return tokens, scores, toktypes


def gemma(corpus_dir, out, type_name, size, seed):
    import tempfile
    dims = GEMMA_SIZES[size]
    rng = np.random.default_rng(seed)
    ftype = FTYPES[type_name]
    arch = gguf.MODEL_ARCH.GEMMA_EMBEDDING
    name = gguf.MODEL_ARCH_NAMES[arch]
    with tempfile.TemporaryDirectory() as work:
        sp = train_vocabulary(corpus_dir, dims["vocab"], Path(work))
    tokens, scores, toktypes = sentencepiece_vocab(sp)
    w, hd, ffn = dims["width"], dims["head_dim"], dims["ffn"]
    writer = gguf.GGUFWriter(path=None, arch=name)
    rw = RandomWeights(rng)
    tensors = [("token_embd.weight", rw.weight(len(tokens), w, 1.0)),
               ("output_norm.weight", rw.norm(w))]
    for b in range(dims["layers"]):
        tensors += attention_block(rw, b, dims, post_norms=True)
    tensors += [("dense_2.weight", rw.weight(dims["dense"], w)), ("dense_3.weight", rw.weight(w, dims["dense"]))]
    report = add_quantized(writer, arch, tensors, ftype)

    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_name(f"embeddinggemma-shaped-{size}-random")
    # converter: Gemma3Model / EmbeddingGemma.set_gguf_parameters
    writer.add_context_length(2048)
    writer.add_embedding_length(w)
    writer.add_block_count(dims["layers"])
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(dims["heads"])
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_key_length(hd)
    writer.add_value_length(hd)
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_rope_freq_base_swa(10_000.0)
    writer.add_sliding_window(dims["window"])
    writer.add_head_count_kv(dims["kv_heads"])
    writer.add_dense_features_dims("dense_2", w, dims["dense"])
    writer.add_dense_features_dims("dense_3", dims["dense"], w)
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_file_type(ftype)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    # converter: _set_vocab_sentencepiece + Gemma3Model.set_vocab
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(toktypes)
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_unk_token_id(3)
    writer.add_pad_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(True)
    writer.add_add_space_prefix(False)
    write(writer, out, report)


# --------------------------------------------------------------------------
# qwen3-reranker: a Qwen3-Reranker-architecture model with random weights
# --------------------------------------------------------------------------

QWEN3_SIZES = {
    # width, layers, heads, kv heads, head dim, ffn, vocab (before Qwen's added tokens)
    "test": dict(width=256, layers=4, heads=4, kv_heads=2, head_dim=128, ffn=768, vocab=3000),
    "full": dict(width=1024, layers=28, heads=16, kv_heads=8, head_dim=128, ffn=3072, vocab=3000),
}

# Qwen2's pre-tokenizer (tokenizer.json's Split pattern), which llama.cpp
# runs for tokenizer.ggml.pre = qwen2.
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")
# Qwen3's added tokens after the BPE vocabulary: special ones (CONTROL) and
# the reasoning markers, which are not special (USER_DEFINED).
QWEN_CONTROL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>"]
QWEN_USER_DEFINED = ["<think>", "</think>"]
# converter: Qwen3Model.set_gguf_parameters (is_rerank)
QWEN3_RERANK_TEMPLATE = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n"
    "<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n"
    "<Query>: {query}\n<Document>: {document}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n")


def train_bpe_vocabulary(corpus_dir, vocab_size):
    """A byte-level BPE with Qwen2's pre-tokenizer; returns (tokens, toktypes,
    merges, ids of the added tokens) as the converter's get_vocab_base and
    SpecialVocab(load_merges=True) would write them."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers
    paths = sorted(Path(corpus_dir).rglob("*.md"))
    if not paths:
        raise SystemExit(f"make_gguf.py: no .md files in {corpus_dir}")
    texts = [p.read_text(encoding="utf-8") for p in paths] + [EXTRA_TRAINING_TEXT, "yes no Yes No yes\nno\n"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    model = json.loads(tok.to_str())["model"]
    vocab = model["vocab"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    tokens = [None] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    toktypes = [gguf.TokenType.NORMAL] * len(tokens)
    for t in QWEN_CONTROL:
        tokens.append(t)
        toktypes.append(gguf.TokenType.CONTROL)
    for t in QWEN_USER_DEFINED:
        tokens.append(t)
        toktypes.append(gguf.TokenType.USER_DEFINED)
    # converter: ids up to the config's vocab_size without a token are [PAD<id>]
    while len(tokens) % 64:
        tokens.append(f"[PAD{len(tokens)}]")
        toktypes.append(gguf.TokenType.UNUSED)
    for word in ("yes", "no"):
        if word not in tokens:
            raise SystemExit(f"make_gguf.py: the trained vocabulary has no token {word!r}")
    return tokens, toktypes, merges


# qwen3: qmd's query-expansion model's architecture (Qwen3-1.7B: 28 layers,
# 16 heads, 8 KV heads, head dim 128, FFN 6144), with random weights, a
# causal LM with Qwen3's chat markers.
QWEN3_LM_SIZES = {
    "test": dict(width=256, layers=4, heads=4, kv_heads=2, head_dim=128, ffn=768, vocab=3000),
    "full": dict(width=2048, layers=28, heads=16, kv_heads=8, head_dim=128, ffn=6144, vocab=3000),
}
# The ChatML form Qwen3's own template renders for one user turn.
QWEN3_CHAT_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def qwen3_model(corpus_dir, out, type_name, size, seed, rerank):
    """A Qwen3-architecture model with random weights: the reranker (a
    ranking head on yes/no) or the causal LM qmd expands queries with."""
    dims = (QWEN3_SIZES if rerank else QWEN3_LM_SIZES)[size]
    rng = np.random.default_rng(seed)
    ftype = FTYPES[type_name]
    arch = gguf.MODEL_ARCH.QWEN3
    tokens, toktypes, merges = train_bpe_vocabulary(corpus_dir, dims["vocab"])
    w, hd, ffn = dims["width"], dims["head_dim"], dims["ffn"]
    writer = gguf.GGUFWriter(path=None, arch=gguf.MODEL_ARCH_NAMES[arch])
    rw = RandomWeights(rng)
    if rerank:
        # Qwen3-Reranker-0.6B ties its LM head to the token embeddings, so the
        # converter writes the embeddings' rows for "yes" and "no" as
        # cls.output. Small enough that P(yes) spreads over (0, 1) instead of
        # saturating.
        embeddings = rw.weight(len(tokens), w, 0.05)
        yes, no = tokens.index("yes"), tokens.index("no")
        tensors = [("cls.output.weight", np.stack([embeddings[yes], embeddings[no]])),
                   ("token_embd.weight", embeddings)]
    else:
        # Untied here (Qwen3-1.7B ties it): with random weights a tied head
        # scores the last token's own embedding highest, and greedy decoding
        # repeats one token. A separate head, large enough that each step
        # has a clear most probable token, makes greedy runs that vary.
        tensors = [("token_embd.weight", rw.weight(len(tokens), w)), ("output.weight", rw.weight(len(tokens), w, 0.25))]
    for b in range(dims["layers"]):
        tensors += attention_block(rw, b, dims, post_norms=False)
    tensors.append(("output_norm.weight", rw.norm(w)))
    report = add_quantized(writer, arch, tensors, ftype)

    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_name(f"qwen3-{'reranker' if rerank else 'lm'}-shaped-{size}-random")
    # converter: TextModel.set_gguf_parameters (Qwen3's config keys)
    writer.add_block_count(dims["layers"])
    writer.add_context_length(40960)
    writer.add_embedding_length(w)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(dims["heads"])
    writer.add_head_count_kv(dims["kv_heads"])
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_key_length(hd)
    writer.add_value_length(hd)
    writer.add_file_type(ftype)
    if rerank:
        # converter: Qwen3Model.set_gguf_parameters (is_rerank)
        writer.add_pooling_type(gguf.PoolingType.RANK)
        writer.add_classifier_output_labels(["yes", "no"])
        writer.add_chat_template([{"name": "rerank", "template": QWEN3_RERANK_TEMPLATE}])
    else:
        writer.add_chat_template(QWEN3_CHAT_TEMPLATE)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    # converter: _set_vocab_gpt2 + SpecialVocab(load_merges=True): Qwen3's
    # config names <|endoftext|> as BOS, <|im_end|> as EOS and padding.
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(toktypes)
    writer.add_token_merges(merges)
    writer.add_eos_token_id(tokens.index("<|im_end|>"))
    writer.add_pad_token_id(tokens.index("<|endoftext|>"))
    writer.add_bos_token_id(tokens.index("<|endoftext|>"))
    writer.add_add_bos_token(False)
    write(writer, out, report)


# --------------------------------------------------------------------------
# dequantize: a GGUF file's F32 twin
# --------------------------------------------------------------------------

def dequantize(src, out):
    reader = gguf.GGUFReader(src)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(path=None, arch=arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        kind = field.types[0]
        if name == "general.file_type":
            writer.add_uint32(name, int(gguf.LlamaFileType.ALL_F32))
        elif kind == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(name, field.contents(), kind, sub_type=field.types[-1])
        else:
            writer.add_key_value(name, field.contents(), kind)
    report = []
    for t in reader.tensors:
        shape = [int(d) for d in reversed(t.shape)]
        data = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)
        writer.add_tensor(t.name, data, raw_dtype=QT.F32)
        report.append((t.name, "F32", list(reversed(shape))))
    write(writer, out, report)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("minilm")
    m.add_argument("model_dir")
    m.add_argument("out")
    m.add_argument("--type", choices=sorted(FTYPES), default="f32")
    b = sub.add_parser("blocks")
    b.add_argument("out")
    b.add_argument("expected")
    b.add_argument("--seed", type=int, default=0)
    for name, sizes in (("gemma", GEMMA_SIZES), ("qwen3-reranker", QWEN3_SIZES), ("qwen3", QWEN3_LM_SIZES)):
        r = sub.add_parser(name)
        r.add_argument("corpus_dir")
        r.add_argument("out")
        r.add_argument("--type", choices=["f32", "q8_0"], default="f32")
        r.add_argument("--size", choices=sorted(sizes), default="test")
        r.add_argument("--seed", type=int, default=0)
    d = sub.add_parser("dequantize")
    d.add_argument("src")
    d.add_argument("out")
    args = ap.parse_args()
    if args.command == "dequantize":
        dequantize(args.src, args.out)
    elif args.command in ("qwen3-reranker", "qwen3"):
        qwen3_model(args.corpus_dir, args.out, args.type, args.size, args.seed, rerank=args.command != "qwen3")
    elif args.command == "minilm":
        minilm(args.model_dir, args.out, args.type)
    elif args.command == "gemma":
        gemma(args.corpus_dir, args.out, args.type, args.size, args.seed)
    else:
        blocks(args.out, args.expected, args.seed)


if __name__ == "__main__":
    main()
