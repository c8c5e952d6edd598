"""Quantizes a GGUF file with llama.cpp's own quantizer, the function its
`llama-quantize` tool calls (`llama_model_quantize`), from the libllama that
node-llama-cpp ships in qmd's peer install ($LLAMA_REF_DIR, made by
scripts/llama-ref.sh): same type choices per tensor (Q4_K_M keeps attn_v and
half the ffn_down as Q6_K, token embeddings as Q6_K), same block quantizers.

    quantize.py IN.gguf OUT.gguf q4_k_m|q5_k_m|q6_k|q4_0|q4_1|q8_0

Exits non-zero, naming the problem, when the library is missing or
llama.cpp refuses the file.
"""

import ctypes
import glob
import os
import sys

# llama.h (b10361): enum llama_ftype.
FTYPES = {"q8_0": 7, "q4_0": 2, "q4_1": 3, "q4_k_m": 15, "q5_k_m": 17, "q6_k": 18}


class QuantizeParams(ctypes.Structure):
    """llama.h (b10361): struct llama_model_quantize_params, field for field."""
    _fields_ = [
        ("nthread", ctypes.c_int32),
        ("ftype", ctypes.c_int),
        ("output_tensor_type", ctypes.c_int),
        ("token_embedding_type", ctypes.c_int),
        ("allow_requantize", ctypes.c_bool),
        ("quantize_output_tensor", ctypes.c_bool),
        ("only_copy", ctypes.c_bool),
        ("pure", ctypes.c_bool),
        ("keep_split", ctypes.c_bool),
        ("dry_run", ctypes.c_bool),
        ("imatrix", ctypes.c_void_p),
        ("kv_overrides", ctypes.c_void_p),
        ("tt_overrides", ctypes.c_void_p),
        ("prune_layers", ctypes.c_void_p),
    ]


def libllama():
    ref = os.environ.get("LLAMA_REF_DIR")
    if not ref:
        sys.exit("quantize.py: set LLAMA_REF_DIR (scripts/llama-ref.sh prints it)")
    pattern = os.path.join(ref, "node_modules", "@node-llama-cpp", "*", "bins", "*", "libllama*")
    for path in sorted(glob.glob(pattern)):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue  # another platform's build
    sys.exit(f"quantize.py: no loadable libllama under {pattern}")


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in FTYPES:
        sys.exit(__doc__)
    source, out, ftype = sys.argv[1:]
    llama = libllama()
    llama.llama_model_quantize_default_params.restype = QuantizeParams
    llama.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(QuantizeParams)]
    llama.llama_model_quantize.restype = ctypes.c_uint32
    llama.llama_backend_init()
    params = llama.llama_model_quantize_default_params()
    params.ftype = FTYPES[ftype]
    params.nthread = os.cpu_count() or 1
    if llama.llama_model_quantize(source.encode(), out.encode(), ctypes.byref(params)) != 0:
        sys.exit(f"quantize.py: llama.cpp could not quantize {source} to {ftype}")


if __name__ == "__main__":
    main()
