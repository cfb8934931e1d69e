"""Makes the tiny, randomly initialised Llama that scripts/real-vllm.sh serves with vLLM.

No hub download: the config, the weights (seeded, so every machine gets the same model) and a
byte-level BPE tokenizer trained on a generated corpus are all made here. The metrics, the
scheduler, the profiler and the traces that vLLM produces for it are vLLM's own, whatever the
weights say.

usage: python real-vllm-model.py OUT_DIR
"""

import json
import os
import sys

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

VOCAB = 512
MAX_POS = 4096


def corpus():
    words = ["alpha", "beta", "gamma", "delta", "kv", "cache", "prefill", "decode", "queue",
             "token", "latency", "request", "batch", "engine", "model", "server", "metric"]
    for i in range(2000):
        yield " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(12)) + f" {i}."


def make_tokenizer(out):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<s>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", model_max_length=MAX_POS)
    fast.save_pretrained(out)
    return fast


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    fast = make_tokenizer(out)
    torch.manual_seed(19)
    cfg = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=MAX_POS,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        torch_dtype="float32",
    )
    # float32: for bfloat16 the CPU backend picks its AMX attention kernel, whose worker died with
    # SIGILL (illegal instruction) on the 2-core development VM; float32 takes the AVX-512 kernel.
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(out, safe_serialization=True)
    with open(os.path.join(out, "made-by.json"), "w") as f:
        json.dump({"by": "scripts/real-vllm-model.py", "vocab": len(fast), "layers": 2, "hidden": 128}, f)
    print(f"tiny llama in {out}: vocab {len(fast)}, {sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main()
