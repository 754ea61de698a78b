#!/usr/bin/env python3
"""Record llama.cpp's behaviour on a GGUF as test fixtures for tokscope's CPU engine.

Needs llama-cpp-python (it builds llama.cpp; about 10 minutes on 2 cores):
    python3 -m venv /tmp/llamaenv && /tmp/llamaenv/bin/pip install llama-cpp-python==0.3.36 numpy jinja2
    /tmp/llamaenv/bin/python scripts/llamacpp_reference.py public/models/SmolLM2-135M-Instruct.Q4_1.gguf \
        crates/core/tests/fixtures/llamacpp

Gemma 3 270M (cargo xtask fetch-model gemma3-270m) the same way, into its own directory:
    /tmp/llamaenv/bin/python scripts/llamacpp_reference.py public/models/gemma-3-270m-q4_k_m.gguf \
        crates/core/tests/fixtures/llamacpp_gemma3

Also, for a vocabulary without a model worth running (the synthetic SentencePiece one):
    cargo xtask tiny-model --spm /tmp/tiny-spm.gguf
    /tmp/llamaenv/bin/python scripts/llamacpp_reference.py --tokenizer-only /tmp/tiny-spm.gguf \
        crates/core/tests/fixtures/llamacpp/tokenizer_spm.json

Writes:
  tokenizer.json    strings -> llama.cpp ids (special tokens parsed, no BOS) and decoded text
  generations.json  per prompt: prompt ids, 64 greedy steps (token, runner-up, top-2 logit gap);
                    and llama.cpp's own top-1 flips under other numerics ("self_noise")
  logits_<name>.f32 the logits of the first step, little-endian f32: all of them, or every
                    `logit_stride`-th (generations.json's meta) for vocabularies over 65,536
                    (Gemma's 262,144 would be 1 MB a prompt)
Prompts start with BOS where the file's add_bos_token asks for it; a file without a chat
template gets Gemma's turns if its vocabulary has them (as tokscope does), else ChatML.
"""
import json
import sys
from pathlib import Path

import jinja2
import numpy as np
from llama_cpp import Llama, __version__ as llama_cpp_version

STEPS = 64

TOKENIZER_STRINGS = [
    "", " ", "  ", "   ", "\t", "\n", "\n\n\n", " \n \n", "Hello world", " Hello world",
    "Hello  world", "hello   world   ", "HELLO World!", "It's, isn't it? They'll've",
    "1", "12", "123", "1234567890", "3.14159", "1,000,000", "in 2024 and 1999",
    "😀", "👍🏽 thumbs", "🇫🇷 flag", "日本語のテキスト", "中文字符测试", "한국어", "Ελληνικά", "Привет мир",
    "naïve café résumé", "Zürich €12", "def f(x):\n    return x**2\n", "for (int i = 0; i < n; ++i) {}",
    "<html><body>&amp;</body></html>", "a\u00a0b", "tabs\tand\ttabs",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "<|endoftext|>", "text<|im_end|>more",
    "<|im_start|>", "<repo_name>x<file_sep>y", "   leading spaces", "trailing spaces   ",
    "mixed 日本 and English 123", "!!!???...", "$$$ 100% @user #tag",
]

# Gemma's control tokens, for vocabularies that have them.
GEMMA_STRINGS = ["<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", "<bos>", "a<eos>b",
                 "<start_of_turn>", "\n\n\n\n", "    indented", "emoji 🤖🧠 and ☃︎"]

# tokscope's GEMMA_TEMPLATE (crates/core/src/chat.rs), for Gemma files without a template.
GEMMA_TEMPLATE = ("{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set first = messages[0]['content'] + '\n\n' %}"
                  "{% set loop_messages = messages[1:] %}{% else %}{% set first = '' %}{% set loop_messages = messages %}{% endif %}"
                  "{% for message in loop_messages %}{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
                  "{{ '<start_of_turn>' + role + '\n' + (first if loop.first else '') + message['content'] | trim + '<end_of_turn>\n' }}"
                  "{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}")
CHATML_TEMPLATE = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
                   "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")

PROMPTS = [
    ("plain", "The capital of France is", None),
    ("chat", None, "Write a haiku about the sea."),
    ("code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n", None),
    ("digits", "Compute: 1234 + 5678 = 6912. Then 98765 - 43210 =", None),
    ("nonascii", "Voilà une phrase en français : l'été à Zürich coûte 12 €. 日本語も少し。", None),
    ("story", "Once upon a time, in a small village by the mountains, there lived", None),
]


def tokenizer_rows(llm, strings):
    rows = []
    for s in strings:
        ids = llm.tokenize(s.encode("utf-8"), add_bos=False, special=True)
        text = llm.detokenize(ids, special=True).decode("utf-8", errors="replace")
        with_bos = llm.tokenize(s.encode("utf-8"), add_bos=True, special=True)
        rows.append({"text": s, "ids": ids, "decoded": text, "ids_with_bos": with_bos})
    return rows


def tokenizer_only(model_path, out_file):
    llm = Llama(model_path=model_path, n_ctx=64, vocab_only=True, verbose=False)
    strings = TOKENIZER_STRINGS + ["the cat sat on the mat", "The cat", "<s>the</s>", "thethe", "a  b"]
    Path(out_file).write_text(json.dumps(tokenizer_rows(llm, strings), ensure_ascii=False, indent=1))


def main(model_path, out_dir):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    llm = Llama(model_path=model_path, n_ctx=512, n_threads=2, n_batch=512, verbose=False)
    n_vocab = llm.n_vocab()
    stride = 1 if n_vocab <= 65536 else n_vocab // 16384
    gemma = b"<start_of_turn>" in llm.detokenize(llm.tokenize(b"<start_of_turn>", add_bos=False, special=True),
                                                 special=True)
    add_bos = llm.metadata.get("tokenizer.ggml.add_bos_token", "false") == "true"

    strings = TOKENIZER_STRINGS + (GEMMA_STRINGS if gemma else [])
    tok_rows = tokenizer_rows(llm, strings)
    (out / "tokenizer.json").write_text(json.dumps(tok_rows, ensure_ascii=False, indent=1))

    source = llm.metadata.get("tokenizer.chat_template") or (GEMMA_TEMPLATE if gemma else CHATML_TEMPLATE)
    template = jinja2.Environment().from_string(source)
    gens = []
    for name, text, chat_user in PROMPTS:
        if chat_user is not None:
            text = template.render(messages=[{"role": "user", "content": chat_user}],
                                   add_generation_prompt=True, bos_token="", eos_token="")
        prompt = llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)
        llm.reset()
        llm.eval(prompt)
        steps = []
        for step in range(STEPS):
            logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,)).copy()
            if step == 0:
                logits[::stride].astype("<f4").tofile(out / f"logits_{name}.f32")
            order = np.argsort(-logits, kind="stable")
            top1, top2 = int(order[0]), int(order[1])
            steps.append({"token": top1, "runner_up": top2,
                          "gap": float(logits[top1] - logits[top2])})
            llm.eval([top1])
        gens.append({"name": name, "text": text, "chat_user": chat_user,
                     "prompt_ids": prompt, "steps": steps,
                     "continuation": llm.detokenize([s["token"] for s in steps], special=True)
                     .decode("utf-8", errors="replace")})
        print(name, repr(gens[-1]["continuation"][:80]), file=sys.stderr)
    # llama.cpp against itself: the same continuations teacher-forced under other numerics
    # (f32 KV cache; flash attention). Where even these flip the top-1, the gap is noise.
    noise = []
    for label, kw in [("f32 KV cache", dict(type_k=0, type_v=0)), ("flash attention", dict(flash_attn=True))]:
        other = Llama(model_path=model_path, n_ctx=512, n_threads=2, n_batch=512, verbose=False, **kw)
        flips, confident, first = [], 0, {}
        for g in gens:
            other.reset()
            other.eval(g["prompt_ids"])
            for i, s in enumerate(g["steps"]):
                logits = np.ctypeslib.as_array(other._ctx.get_logits(), shape=(n_vocab,))
                if i == 0:
                    sub = logits[::stride]
                    ref = np.fromfile(out / f"logits_{g['name']}.f32", dtype="<f4")
                    first[g["name"]] = {"rms": float(np.sqrt(np.mean((sub - ref) ** 2))),
                                        "max_abs": float(np.abs(sub - ref).max())}
                if s["gap"] >= 0.1:
                    confident += 1
                    if int(np.argmax(logits)) != s["token"]:
                        flips.append({"prompt": g["name"], "step": i, "gap": s["gap"]})
                other.eval([s["token"]])
        noise.append({"variant": label, "confident_steps": confident, "flips": flips,
                      "first_step_logits": first})
        print(label, len(flips), "flips of", confident, file=sys.stderr)
    meta = {"llama_cpp_python": llama_cpp_version, "model": Path(model_path).name,
            "n_ctx": 512, "n_threads": 2, "steps": STEPS, "logit_stride": stride, "add_bos": add_bos}
    (out / "generations.json").write_text(
        json.dumps({"meta": meta, "self_noise": noise, "prompts": gens}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    if sys.argv[1] == "--tokenizer-only":
        tokenizer_only(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1], sys.argv[2])
