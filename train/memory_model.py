"""Qwen2.5's shapes, and the peak memory of one GRPO update predicted from its parts.

The shapes are the released checkpoints' config.json values (Qwen/Qwen2.5-{0.5B,1.5B,3B}
-Instruct): the parameter counts they give, 0.494B / 1.544B / 3.086B with tied embeddings, are
the model cards' 0.49B / 1.54B / 3.09B. Random weights of these shapes are enough for memory and
time: neither depends on what the weights are.

The model of a LoRA update's peak (one trajectory, `train.logprobs.reply_log_probs`):

    peak = weights + adapter_and_optimizer + checkpointed + max(head_chunk, layer)

- weights: every parameter at the setting's bytes (tied embeddings stored once);
- adapter_and_optimizer: each LoRA parameter's float32 weight, gradient and AdamW's two moments
  (16 bytes);
- checkpointed: what activation checkpointing keeps for the backward pass, each block's input
  hidden states [T, H] at the setting's bytes, one per layer plus the decoder's output;
- head_chunk: the output head's working set while it computes one chunk of reply positions
  ([chunk, V] float32 logits, log-probs and probabilities) -- the forward's transient peak;
- layer: one decoder block's activations and gradients while the backward pass recomputes it
  -- the backward's transient peak. The two transients never coexist (the head's chunks are
  freed before the backward starts), hence the max.

head_chunk and layer are measured (`fixrl bench grpo-step` runs them in subprocesses, on a
one-layer model of the shape); the other three terms are counted. What it leaves out: the CUDA
context and cuBLAS workspaces outside the caching allocator (a few hundred MB on a GPU), and
allocator fragmentation. The rollout's KV cache is not part of an update: generation and the
update never run at once.
"""
from __future__ import annotations

from dataclasses import dataclass

GIB = 2 ** 30
T4_BYTES = 15 * 10 ** 9
"""A T4's memory as the mission counts it (15 GB): torch reports a T4's total as ~15.8e9 bytes,
of which the CUDA context takes a few hundred MB outside the caching allocator."""

BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
"""Bytes per element of frozen weights and of activations under each precision setting."""


@dataclass(frozen=True)
class ModelShape:
    """A Qwen2 decoder's dimensions."""

    name: str
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    vocab: int = 151_936
    tied: bool = True

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def with_layers(self, layers: int) -> ModelShape:
        return ModelShape(f"{self.name} ({layers} of {self.layers} layers)", layers, self.hidden, self.intermediate,
                          self.heads, self.kv_heads, self.vocab, self.tied)


QWEN25 = {
    "0.5b": ModelShape("Qwen2.5-0.5B", 24, 896, 4_864, 14, 2),
    "1.5b": ModelShape("Qwen2.5-1.5B", 28, 1_536, 8_960, 12, 2),
    "3b": ModelShape("Qwen2.5-3B", 36, 2_048, 11_008, 16, 2),
}
TINY = ModelShape("tiny (fixrl init-tiny)", 2, 64, 128, 4, 2)
"""`fixrl init-tiny`'s shape, for dry runs of the benches."""
SHAPES = {**QWEN25, "tiny": TINY}
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def linear_shapes(s: ModelShape) -> dict[str, tuple[int, int]]:
    """(in, out) features of each linear layer of one decoder block."""
    kv = s.kv_heads * s.head_dim
    return {"q_proj": (s.hidden, s.hidden), "k_proj": (s.hidden, kv), "v_proj": (s.hidden, kv),
            "o_proj": (s.hidden, s.hidden), "gate_proj": (s.hidden, s.intermediate),
            "up_proj": (s.hidden, s.intermediate), "down_proj": (s.intermediate, s.hidden)}


def parameter_count(s: ModelShape) -> int:
    """Every parameter: embeddings (once when tied), blocks (q/k/v biases, two norms), final norm."""
    lin = linear_shapes(s)
    block = sum(i * o for i, o in lin.values()) + sum(lin[k][1] for k in ("q_proj", "k_proj", "v_proj")) \
        + 2 * s.hidden
    embed = s.vocab * s.hidden * (1 if s.tied else 2)
    return embed + s.layers * block + s.hidden


def lora_parameter_count(s: ModelShape, rank: int) -> int:
    """LoRA A [r, in] and B [out, r] on every linear layer of every block ("all-linear")."""
    return s.layers * sum(rank * (i + o) for i, o in linear_shapes(s).values())


@dataclass(frozen=True)
class MemoryTerms:
    """The model's terms in bytes, and their total."""

    weights: float
    adapter_and_optimizer: float
    checkpointed: float
    head_chunk: float
    layer: float

    @property
    def total(self) -> float:
        return self.weights + self.adapter_and_optimizer + self.checkpointed + max(self.head_chunk, self.layer)

    def as_gib(self) -> dict[str, float]:
        d = {k: getattr(self, k) / GIB for k in ("weights", "adapter_and_optimizer", "checkpointed", "head_chunk",
                                                 "layer")}
        d["total"] = self.total / GIB
        return d


def counted_terms(s: ModelShape, tokens: int, precision: str, rank: int = 16) -> tuple[float, float, float]:
    """(weights, adapter_and_optimizer, checkpointed) in bytes: the terms that are counted."""
    b = BYTES[precision]
    return (parameter_count(s) * b, lora_parameter_count(s, rank) * 16.0, (s.layers + 1) * tokens * s.hidden * b)


def predict(s: ModelShape, tokens: int, precision: str, head_chunk: float, layer: float,
            rank: int = 16) -> MemoryTerms:
    """The peak of one update: the counted terms plus the measured transients (bytes)."""
    w, a, c = counted_terms(s, tokens, precision, rank)
    return MemoryTerms(w, a, c, head_chunk, layer)
