"""A small random Qwen2 model built in memory (no tokenizer, no files), shared by the tests of
the log-prob maths and of the demo's data head."""
from __future__ import annotations

import torch


def tiny_qwen(vocab: int = 512, seed: int = 0):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen2Config(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                      tie_word_embeddings=True)
    model = Qwen2ForCausalLM(cfg).float()
    # random init is near-uniform; sharpen it so log-probs spread (about -8 to -4)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.0)
    return model
