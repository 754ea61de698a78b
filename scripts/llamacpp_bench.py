#!/usr/bin/env python3
"""llama.cpp's decode and prefill speed on a GGUF, measured like `tokscope bench`:
16-token prompt, then N greedy decode steps, median of R runs; prefill of a 128-token prompt.
Prints one JSON line. Usage: llamacpp_bench.py MODEL [THREADS] [TOKENS] [RUNS]"""
import json
import statistics
import sys
import time

import numpy as np
from llama_cpp import Llama

TEXT = ("The quick brown fox jumps over the lazy dog while the river runs past the old mill, and the "
        "miller counts the sacks of flour one by one before the evening bell. ") * 20


def main(model, threads=2, tokens=128, runs=5):
    llm = Llama(model_path=model, n_ctx=512, n_threads=threads, n_threads_batch=threads,
                n_batch=512, verbose=False)
    ids = llm.tokenize(TEXT.encode(), add_bos=False, special=True)
    n_vocab = llm.n_vocab()
    logits = lambda: np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,))
    llm.reset(); llm.eval(ids[:16])
    for _ in range(8):
        llm.eval([0])
    decode = []
    for _ in range(runs):
        llm.reset(); llm.eval(ids[:16])
        nxt = int(np.argmax(logits()))
        t = time.perf_counter()
        for _ in range(tokens):
            llm.eval([nxt])
            nxt = int(np.argmax(logits()))
        decode.append(tokens / (time.perf_counter() - t))
    prefill = []
    for _ in range(runs):
        llm.reset()
        t = time.perf_counter()
        llm.eval(ids[:128])
        prefill.append(128 / (time.perf_counter() - t))
    print(json.dumps({"backend": "llama.cpp", "threads": threads,
                      "decode_tok_s": statistics.median(decode), "decode_tok_s_runs": decode,
                      "prefill_tok_s": statistics.median(prefill)}))


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], *(int(x) for x in a[1:]))
