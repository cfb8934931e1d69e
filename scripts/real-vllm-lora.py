"""Makes LoRA adapters for the tiny Llama of scripts/real-vllm-model.py, in PEFT's format.

Each adapter is a directory with adapter_config.json and adapter_model.safetensors: rank-8 LoRA
on q_proj and v_proj of every layer, random weights (seeded by the adapter's index, so every
machine gets the same ones) in the base model's shapes. vLLM loads them with --enable-lora
--lora-modules NAME=DIR; what they compute does not matter, the scheduling and metrics are vLLM's.

usage: python real-vllm-lora.py MODEL_DIR OUT_DIR NAME...
"""

import json
import os
import sys

import torch
from safetensors.torch import save_file

RANK = 8


def main():
    model_dir, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    hidden = cfg["hidden_size"]
    head_dim = hidden // cfg["num_attention_heads"]
    shapes = {"q_proj": (hidden, hidden), "v_proj": (cfg["num_key_value_heads"] * head_dim, hidden)}
    for i, name in enumerate(names):
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        g = torch.Generator().manual_seed(1000 + i)
        tensors = {}
        for layer in range(cfg["num_hidden_layers"]):
            for mod, (out_f, in_f) in shapes.items():
                p = f"base_model.model.model.layers.{layer}.self_attn.{mod}"
                tensors[p + ".lora_A.weight"] = torch.randn(RANK, in_f, generator=g) * 0.02
                tensors[p + ".lora_B.weight"] = torch.randn(out_f, RANK, generator=g) * 0.02
        save_file(tensors, os.path.join(d, "adapter_model.safetensors"))
        with open(os.path.join(d, "adapter_config.json"), "w") as f:
            json.dump({
                "peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": model_dir,
                "r": RANK, "lora_alpha": 2 * RANK, "lora_dropout": 0.0, "bias": "none",
                "target_modules": list(shapes), "fan_in_fan_out": False, "modules_to_save": None,
            }, f, indent=1)
        print(f"LoRA adapter {name} in {d}: rank {RANK} on {', '.join(shapes)} of {cfg['num_hidden_layers']} layers")


if __name__ == "__main__":
    main()
