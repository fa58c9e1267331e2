"""The memory model's Qwen2.5 shapes and parameter counts against the real models they describe."""
from __future__ import annotations

import pytest
import torch

from fixrl.train import memory_model as mm


@pytest.mark.parametrize("size", ["0.5b", "1.5b", "3b", "tiny"])
def test_shapes_and_counts_match_the_models_they_describe(size):
    """parameter_count and lora_parameter_count against a transformers Qwen2 model of the shape
    (on the meta device: no memory) with peft's all-linear LoRA r16, and the model cards."""
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    s = mm.SHAPES[size]
    cfg = Qwen2Config(vocab_size=s.vocab, hidden_size=s.hidden, intermediate_size=s.intermediate,
                      num_hidden_layers=s.layers, num_attention_heads=s.heads, num_key_value_heads=s.kv_heads,
                      tie_word_embeddings=s.tied)
    with torch.device("meta"):
        model = get_peft_model(Qwen2ForCausalLM(cfg), LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"))
    assert sum(p.numel() for p in model.parameters() if not p.requires_grad) == mm.parameter_count(s)
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == mm.lora_parameter_count(s, 16)
    card = {"0.5b": 0.49e9, "1.5b": 1.54e9, "3b": 3.09e9}.get(size)
    if card:  # the released checkpoints' parameter counts (tied embeddings)
        assert abs(mm.parameter_count(s) - card) < 0.006e9
    w, a, c = mm.counted_terms(s, 5600, "fp16")
    assert (w, a, c) == (2 * mm.parameter_count(s), 16 * mm.lora_parameter_count(s, 16),
                         (s.layers + 1) * 5600 * s.hidden * 2)
    t = mm.predict(s, 5600, "fp16", head_chunk=3.0, layer=5.0)
    assert t.total == w + a + c + 5.0 and t.as_gib()["total"] == t.total / mm.GIB
