"""The PyTorch fp32 reference for the embedding benchmark (tests/benches/gguf.rs,
`BENCH_PYTORCH=1 scripts/bench-gguf.sh`): sentence-transformers' own path over
the same model folder and texts, on the CPU with every core.

    python torch_bench.py MODEL_DIR [DEVICE] < texts.json
        -> {"texts": n, "seconds": s, "texts_per_s": r, "threads": t,
            "torch": version, "embeddings": [[f...] per text]}

As sentence-transformers runs it: batches of 32 texts sorted by length,
mean pooling and normalisation from the folder's modules; one warm-up call
on the first 16 texts, then the whole set timed once.
"""

import json
import os
import sys
import time

import torch
from sentence_transformers import SentenceTransformer


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: torch_bench.py MODEL_DIR [DEVICE] < texts.json")
    texts = json.load(sys.stdin)
    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    device = sys.argv[2] if len(sys.argv) == 3 else "cpu"
    model = SentenceTransformer(sys.argv[1], device=device)
    with torch.inference_mode():
        model.encode(texts[:16], batch_size=32)
        start = time.perf_counter()
        vectors = model.encode(texts, batch_size=32, normalize_embeddings=True)
        seconds = time.perf_counter() - start
    json.dump(
        {
            "texts": len(texts),
            "seconds": seconds,
            "texts_per_s": len(texts) / seconds,
            "threads": threads,
            "torch": torch.__version__,
            "embeddings": vectors.tolist(),
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
