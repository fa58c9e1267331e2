"""HFPolicy: a transformers causal LM (plus an optional peft adapter) writing assistant turns.

All live episodes generate their next turn in one `model.generate` call: left padding, KV cache,
sampling with temperature and top-p, stopping at `<|im_end|>`. Each episode keeps its KV cache
from one turn to the next (`reuse_cache`), so a turn runs only what is new since the last one
(the tool turn) through the model, not the whole conversation again. The sampler's log-prob of every
sampled token is recorded on the fly (one [B, V] row of log-probs kept at a time, never the
whole [steps, B, V] score history).

Only `<|im_end|>` ends a turn. Qwen2.5-Instruct's generation_config also lists `<|endoftext|>`
as an eos token, but its chat template closes assistant turns with `<|im_end|>` alone, so that is
the token the model is trained to emit; a sampled `<|endoftext|>` stays in the reply text and the
turn runs on (to `<|im_end|>` or max_new_tokens).

The trainer updates `policy.model` in place between rollouts; `generate` switches the model to
eval mode for the call and restores the previous mode afterwards. Build the policy around an
already loaded model with `HFPolicy(model=model, tokenizer=tokenizer, temperature=...)`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from transformers import (
    DynamicCache,
    GenerationConfig,
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopPLogitsWarper,
)

from fixrl.harness.agent.chat import end_of_turn_id
from fixrl.harness.agent.policies import Generation, GenRequest, check_sampling
from fixrl.harness.model.dirs import check_adapter_dir, check_model_dir
from fixrl.harness.model.load import load_adapter, load_base
from fixrl.harness.model.precision import autocast, compute_dtype, model_precision, resolve_precision
from fixrl.tasks import Task


class _Sampler:
    """The last logits processor of a greedy `generate`: it samples the token itself from the
    final (temperature-scaled, top-p-filtered) scores, records the token's log-prob under that
    distribution, and returns scores that make the greedy pick exactly that token.

    Why not generate's own sampling: `torch.multinomial` over Qwen's 151,936-token vocabulary
    costs ~3 ms per row on a CPU, which made a batch of 16 spend most of each step sampling.
    Inverse-CDF sampling (block sums + two binary searches per row) is ~20x cheaper. Only the
    chosen tokens' log-probs are kept, never the [steps, B, V] score history."""

    def __init__(self, greedy: bool, generator) -> None:
        self.greedy = greedy
        self.generator = generator
        self.steps: list[Any] = []   # each [B]

    def __call__(self, input_ids, scores):
        s = scores.float()                                                 # [B, V] (generate's own copy)
        m = s.max(dim=-1, keepdim=True).values                             # [B, 1]
        if self.greedy:
            chosen = s.argmax(dim=-1, keepdim=True)                        # [B, 1]
            lse = m + (s - m).exp_().sum(dim=-1, keepdim=True).log_()      # [B, 1]
            self.steps.append((s.gather(1, chosen) - lse).squeeze(1))
        else:
            # In place: the scores become unnormalised probabilities (one [B, V] pass, no copy).
            e = s.sub_(m).exp_()                                           # [B, V]
            blocks = _block_sums(e)                                        # [B, NB] running sums
            total = blocks[:, -1:]                                         # [B, 1]
            u = 1.0 - torch.rand((s.shape[0], 1), generator=self.generator, device=s.device)  # (0, 1]
            chosen = _inverse_cdf(e, u * total, blocks)                    # [B, 1]
            p = e.gather(1, chosen)                                        # [B, 1]
            # Rounding may land on a zero-probability (top-p filtered) token: take the mode then.
            if (p == 0).any():
                chosen = torch.where(p == 0, e.argmax(dim=-1, keepdim=True), chosen)
                p = e.gather(1, chosen)
            self.steps.append((p.log() - total.log()).squeeze(1))         # log p(chosen)
        # generate() then takes the argmax: make it exactly the chosen token.
        return s.scatter_(1, chosen, float("inf"))


def _block_size(V: int) -> int:
    # a power of two dividing V avoids copying the weights to pad them
    return next((b for b in (256, 128, 64, 32) if V % b == 0), 256)


def _block_sums(weights):
    """Running sums of `weights` [B, V] over blocks of `_block_size(V)` columns: [B, NB]. The
    last column is each row's total, so the sampler needs no separate pass for it."""

    B, V = weights.shape
    block = _block_size(V)
    pad = (-V) % block
    w = torch.nn.functional.pad(weights, (0, pad)) if pad else weights      # [B, V']
    return w.view(B, -1, block).sum(dim=-1).cumsum_(dim=-1)                # [B, NB]


def _inverse_cdf(weights, target, blocks=None):
    """Per row, the first index whose running sum of `weights` reaches `target` ([B, V], [B, 1]
    -> [B, 1]). Two levels (block sums, then one block) instead of a cumsum over all V: one
    read of the weights instead of a read and a write. float32 sums: their rounding (~1e-6)
    only nudges where the draw lands, never the recorded log-prob. `blocks`: the weights'
    `_block_sums`, when the caller has them already."""

    B, V = weights.shape
    block = _block_size(V)
    if blocks is None:
        blocks = _block_sums(weights)
    pad = (-V) % block
    w = torch.nn.functional.pad(weights, (0, pad)) if pad else weights      # [B, V']
    k = torch.searchsorted(blocks, target).clamp_(max=blocks.shape[1] - 1)  # [B, 1] block index
    before = torch.where(k > 0, blocks.gather(1, (k - 1).clamp_(min=0)), torch.zeros_like(target))
    inside = w.view(B, -1, block).gather(1, k[:, :, None].expand(B, 1, block))[:, 0].cumsum_(dim=-1)  # [B, block]
    j = torch.searchsorted(inside, target - before).clamp_(max=block - 1)  # [B, 1]
    return (k * block + j).clamp_(max=V - 1)


class _KVState:
    """One episode's key/value cache between its turns: the ids it covers and, per layer,
    (keys, values) of shape [H, T, D]. The next turn's prompt extends these ids (the agent loop
    appends, never re-tokenises), so only the new tokens (the tool turn, ~50 ids) are run
    through the model instead of the whole conversation. Valid only for the weights that made
    it: `start` gives every episode a fresh one, and the trainer never updates weights in the
    middle of a rollout."""

    __slots__ = ("ids", "kv")

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.kv: list[tuple[Any, Any]] = []

    def usable(self, prompt: list[int]) -> int:
        """Cached positions valid for `prompt` (its common prefix with the cached ids, less
        one: the last prompt token must be run to give the next token's logits)."""
        n = min(len(self.ids), len(prompt) - 1)
        if n <= 0 or not self.kv:
            return 0
        if self.ids[:n] == prompt[:n]:
            return n
        i = 0
        while i < n and self.ids[i] == prompt[i]:
            i += 1
        return i


def free_cores() -> int:
    """Cores of this process's CPU set that no other process is running on right now: the
    set's size minus the runnable threads of other processes (`/proc/loadavg`'s instantaneous
    count, less this process's own runnable threads: its idle OpenMP workers may still be
    spinning from the last call). At least 1. Off Linux, half the cores. A snapshot: a check
    that starts mid-generation is not seen, which costs that one call some speed, not more."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return max(1, (os.cpu_count() or 2) // 2)
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
        own = 0
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/stat") as f:
                    own += f.read().rsplit(")", 1)[1].split()[0] == "R"
            except OSError:  # the thread ended meanwhile
                continue
    except (OSError, ValueError, IndexError):
        return max(1, cores // 2)
    return max(1, min(cores, cores - max(0, running - own)))


def _cut_at_end_of_turn(toks: list[int], lps: list[float], cap: int, eot: int) -> Generation:
    """A row's sampled ids and log-probs through its first end-of-turn token (stopped), or its
    first `cap` (cut off)."""
    for j, t in enumerate(toks[:cap]):
        if t == eot:
            return Generation(token_ids=toks[: j + 1], logprobs=lps[: j + 1], stopped=True)
    return Generation(token_ids=toks[:cap], logprobs=lps[:cap], stopped=False)


def _load(path: Path, adapter: str | Path | None, device: str | None, precision: str | None):
    """(model in eval mode on its device, tokenizer, device, precision) from a model directory
    and an optional LoRA adapter, both checked before anything heavy is loaded."""
    check_model_dir(path)
    if adapter is not None:
        check_adapter_dir(adapter)
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    prec = resolve_precision(precision, dev)
    model, tokenizer = load_base(path, compute_dtype(prec))
    if adapter is not None:
        model = load_adapter(model, adapter, trainable=False)
    model = model.to(dev)
    model.eval()
    return model, tokenizer, dev, prec


class HFPolicy:
    """A causal LM policy. `temperature=0` (or `greedy=True`) decodes greedily."""

    name = "hf"

    def __init__(self, model_path: str | Path | None = None, adapter: str | Path | None = None,
                 temperature: float = 1.0, top_p: float = 1.0, max_new_tokens: int = 256,
                 device: str | None = None, greedy: bool = False, batch_size: int | None = None,
                 cpu_threads: int | None = None, reuse_cache: bool = True, precision: str | None = None, *,
                 model: Any = None, tokenizer: Any = None) -> None:
        """Load `model_path` (+ `adapter`), or wrap an already loaded `model` and `tokenizer`
        (what the trainer does: it keeps updating that model in place).

        reuse_cache: keep each episode's key/value cache from one turn to the next, so a turn
        runs only its new tokens through the model, not the whole conversation again (costs the
        cache's memory between turns: ~12 KB a token for Qwen2.5-0.5B in fp16).

        precision: fp32 | fp16 | bf16 (`fixrl.harness.model.precision`); None: fp16 on CUDA, fp32
        elsewhere (a given `model`: the dtype of its frozen weights). A model directory is loaded
        in its dtype. Generation runs under its autocast, as the trainer's forward does, so a
        LoRA adapter's float32 weights multiply in the setting's dtype on both sides and the
        recorded log-probs are the trainer's up to fp16 rounding (tests/train/test_precision.py).

        batch_size: most episodes per `generate` call (None: all live episodes at once).
        cpu_threads: torch threads while generating on a CPU (restored afterwards). Default
        (None): at each call, the cores no other process is running on right now (see
        `free_cores`), at least one. The sandboxes' processes (tests, hidden checks) run at
        the same time as generation; with every core given to torch, its OpenMP threads
        spin-wait on cores they do not get and a 2-core machine generated 4-10x slower in our
        measurements, while a fixed half of the cores leaves a core idle whenever nothing else
        runs (lockstep generation with no checks in flight: 1.45x slower on 2 cores)."""

        check_sampling(temperature, top_p, max_new_tokens)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.max_new_tokens = int(max_new_tokens)
        self.greedy = bool(greedy) or self.temperature == 0.0
        self.batch_size = batch_size
        self.reuse_cache = bool(reuse_cache)
        self.reused_tokens = 0
        """Prompt tokens served from episodes' caches instead of recomputed (a running count)."""
        if cpu_threads is not None and cpu_threads < 1:
            raise ValueError(f"cpu_threads must be >= 1, got {cpu_threads}")
        self.cpu_threads = cpu_threads
        """Fixed torch threads for CPU generation; None: `free_cores()` at each call."""
        self.last_threads: int | None = None
        """Threads the last CPU generate call used."""
        self.model_path = str(model_path) if model_path is not None else None
        self.adapter = str(adapter) if adapter is not None else None
        self.name = (Path(model_path).name if model_path is not None else "model") + (
            f"+{Path(adapter).name}" if adapter is not None else "")

        if model is not None:
            if tokenizer is None:
                raise ValueError("HFPolicy(model=...) needs its tokenizer too")
            self.model, self.tokenizer = model, tokenizer
            self.device = next(model.parameters()).device
            self.precision = resolve_precision(precision if precision is not None else model_precision(model),
                                               self.device)
        else:
            if model_path is None:
                raise ValueError("HFPolicy needs a model directory (model_path) or a loaded model")
            self.model, self.tokenizer, self.device, self.precision = _load(Path(model_path), adapter, device,
                                                                            precision)

        self.eot_id = end_of_turn_id(self.tokenizer)
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad) if pad is not None else self.eot_id
        self._generator = torch.Generator(device=self.device)
        self._generator.manual_seed(0)

    # ------------------------------------------------------------------ Policy protocol

    def seed(self, seed: int) -> None:
        self._generator.manual_seed(seed)

    def start(self, task: Task, env: Any, seed: int) -> Any:
        return _KVState() if self.reuse_cache else None

    def generate(self, requests: list[GenRequest]) -> list[Generation]:
        if not requests:
            return []
        step = self.batch_size or len(requests)
        out: list[Generation] = []
        for i in range(0, len(requests), step):
            out.extend(self._generate_batch(requests[i:i + step]))
        return out

    # ------------------------------------------------------------------ internals

    def _generate_batch(self, requests: list[GenRequest]) -> list[Generation]:
        ids, mask, width = self._left_padded(requests)
        limit = max(1, max(r.max_new_tokens for r in requests))
        states = [r.state if isinstance(r.state, _KVState) else None for r in requests]
        past = self._past(requests, states, width)
        sampler = _Sampler(self.greedy, self._generator)
        result = self._run_generate(ids, mask, past, limit, sampler)
        new = result.sequences[:, width:].cpu()                          # [B, steps]
        logps = torch.stack(sampler.steps, dim=1).cpu()                  # [B, steps]
        if logps.shape != new.shape:
            raise RuntimeError(f"recorded {tuple(logps.shape)} log-probs for {tuple(new.shape)} tokens")
        out: list[Generation] = []
        for row, r in enumerate(requests):
            gen = _cut_at_end_of_turn(new[row].tolist(), logps[row].tolist(), max(1, r.max_new_tokens), self.eot_id)
            out.append(gen)
            if states[row] is not None:
                self._keep(states[row], result.past_key_values, row, width, r.prompt_ids, gen.token_ids)
        return out

    def _left_padded(self, requests: list[GenRequest]) -> tuple[Any, Any, int]:
        """ids [B, W] and attention mask [B, W], left-padded: every row's next token is at column W."""
        lengths = [len(r.prompt_ids) for r in requests]
        if min(lengths) == 0:
            raise ValueError("empty prompt")
        width = max(lengths)
        ids = torch.full((len(requests), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(requests), width), dtype=torch.long)
        for row, r in enumerate(requests):
            ids[row, width - len(r.prompt_ids):] = torch.tensor(r.prompt_ids, dtype=torch.long)
            mask[row, width - len(r.prompt_ids):] = 1
        return ids, mask, width

    def _generation_config(self, limit: int) -> Any:
        """Every sampling field set explicitly: generate() fills unset (None) fields from the
        checkpoint's generation_config.json (Qwen2.5-Instruct's says top_k=20,
        repetition_penalty=1.1), which would make the recorded log-probs lie about the sampler.
        Temperature, top-p and the sampling itself run as our own processors (see _Sampler);
        generate() then decodes greedily, which picks the token _Sampler drew (top_k=50 is the
        library default, given only to silence a warning: greedy decoding ignores it).
        min_new_tokens stays unset: 0 would make generate() add a no-op minimum-length
        processor that still masks the whole [B, V] scores every step (8% of a CPU step)."""

        return GenerationConfig(
            do_sample=False, temperature=1.0, top_p=1.0, top_k=50, min_p=None, typical_p=1.0,
            epsilon_cutoff=0.0, eta_cutoff=0.0, repetition_penalty=1.0, no_repeat_ngram_size=0,
            max_new_tokens=limit, min_new_tokens=None, min_length=0, eos_token_id=[self.eot_id],
            pad_token_id=self.pad_id,
            bos_token_id=None, num_beams=1, use_cache=True, renormalize_logits=False,
            return_dict_in_generate=True,
        )

    def _processors(self, sampler: _Sampler) -> Any:
        processors: list[Any] = []
        if not self.greedy:
            if self.temperature != 1.0:
                processors.append(TemperatureLogitsWarper(self.temperature))
            if self.top_p < 1.0:
                processors.append(TopPLogitsWarper(self.top_p))
        processors.append(sampler)
        return LogitsProcessorList(processors)

    def _run_generate(self, ids: Any, mask: Any, past: Any, limit: int, sampler: _Sampler) -> Any:
        """model.generate in eval mode, no grad, with the CPU threads this call gets (restored after)."""
        was_training = self.model.training
        threads = torch.get_num_threads()
        on_cpu = torch.device(self.device).type == "cpu"
        self.model.eval()
        try:
            want = self.cpu_threads or free_cores()
            if on_cpu:
                self.last_threads = want
                if threads != want:
                    torch.set_num_threads(want)
            with torch.no_grad(), autocast(self.precision, torch.device(self.device).type):
                return self.model.generate(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                           generation_config=self._generation_config(limit), past_key_values=past,
                                           logits_processor=self._processors(sampler))
        finally:
            if on_cpu and torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
            if was_training:
                self.model.train()

    def _past(self, requests: list[GenRequest], states: list[_KVState | None], width: int) -> Any:
        """The batch's cache built from its episodes' caches, or None (nothing to reuse).

        Left padding puts row i's prompt (L_i ids) in columns [width - L_i, width). Row i has
        n_i ids its cache does not cover; every row runs the last max(n_i) columns, so the
        shared cache holds columns [0, F), F = width - max(n_i): row i's first L_i - max(n_i)
        cached positions, right-aligned at F, zeros (masked as padding) before them. Positions
        (RoPE) count from a row's first real token, so cached keys stay valid however the row
        is padded."""

        cached = [st.kv for st in states if st is not None and st.kv]
        if not cached:
            return None
        new = [len(r.prompt_ids) - (st.usable(r.prompt_ids) if st is not None else 0)
               for r, st in zip(requests, states)]
        longest = max(new)
        front = width - longest
        if front <= 0:
            return None
        takes = [len(r.prompt_ids) - longest for r in requests]  # <= each row's usable: n_i <= longest
        data = []
        for layer in range(len(cached[0])):
            H, _, D = cached[0][layer][0].shape                                                # [H, T, D]
            keys = cached[0][layer][0].new_zeros((len(requests), H, front, D))                 # [B, H, F, D]
            values = torch.zeros_like(keys)
            for row, (take, st) in enumerate(zip(takes, states)):
                if take > 0:
                    k, v = st.kv[layer]
                    keys[row, :, front - take:] = k[:, :take]
                    values[row, :, front - take:] = v[:, :take]
            data.append((keys, values))

        self.reused_tokens += sum(max(0, t) for t in takes)
        return DynamicCache(data)

    def _keep(self, state: _KVState, cache: Any, row: int, width: int, prompt: list[int], toks: list[int]) -> None:
        """Store row's cache for its episode's next turn: the prompt and every sampled token
        but the last (which was sampled, never run through the model)."""
        layers = getattr(cache, "layers", None)
        if not layers or any(getattr(layer, "keys", None) is None for layer in layers):
            state.ids, state.kv = [], []  # a cache type we do not know how to slice: no reuse
            return
        start, end = width - len(prompt), width + len(toks) - 1
        if end - start <= 0 or any(layer.keys.shape[-2] < end for layer in layers):
            state.ids, state.kv = [], []
            return
        state.ids = list(prompt) + list(toks[:-1])
        state.kv = [(layer.keys[row, :, start:end].clone(), layer.values[row, :, start:end].clone())
                    for layer in layers]
