"""Supervised fine-tuning on agent conversations: the starting adapter that GRPO amplifies.

Data, one JSON object per line (a `.gz` file is read compressed):
- fixrl trajectories (`Trajectory.to_dict()`: `token_ids` + `assistant_mask`, as written by
  `fixrl rollout --save`, `fixrl eval` and `fixrl grpo`): the ids are used as they are, never
  re-tokenised, and the mask is the one the agent loop recorded;
- chat messages, OpenAI style: {"messages": [...], "tools": [...]} with assistant messages that
  carry `content` and/or `tool_calls`, and `tool` messages with the results. They are rendered
  with the tokenizer's chat template; the mask covers each assistant turn's tokens from the
  first after `<|im_start|>assistant\\n` through its `<|im_end|>` (what the model must write
  and the token that ends its turn), and nothing of the system, user or tool turns.
The loss is the same masked token mean as GRPO's (`train.logprobs.reply_log_probs` on the
assistant tokens only). `--passing-only` keeps examples whose episode passed (rejection-
sampling fine-tuning): `info.outcome == "pass"` for trajectories, or a top-level `reward` > 0
or `passed: true` for chat lines.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import logging
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

import numpy as np
import torch

from fixrl.harness.agent.chat import END_OF_TURN
from fixrl.train.config import SFTConfig
from fixrl.train.errors import DataError
from fixrl.train.logprobs import reply_log_probs
from fixrl.train.model import load_trainable, save_trainable, trainable_parameters
from fixrl.train.precision import mixed_precision, optimizer_step

log = logging.getLogger(__name__)


@dataclass
class SFTHooks:
    """What a recipe may plug into SFT beyond the config: functions, which a config file cannot
    hold. None everywhere is plain SFT."""

    token_weights: Callable[[Example, Any], list[float]] | None = None
    """(example, tokenizer) -> a loss weight per token [T] (0 off the reply); None: the mask.
    The loss stays a sum over the batch divided by its count of reply tokens."""
    output_head: Callable[[Any, Any, list[Example]], ContextManager[Any]] | None = None
    """(model, tokenizer, examples) -> a context manager yielding a `train.logprobs.OutputHead` to train in
    place of the model's own (its parameters join the optimizer's), or None; it may rewrite the
    model's weights on exit."""


@dataclass
class Example:
    token_ids: list[int]
    assistant_mask: list[int]
    source: str
    """file:line, for error messages."""
    weights: list[float] | None = None
    """Per-token loss weights (None: the mask)."""


# ----------------------------------------------------------------------------- data


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if line.strip():
                    yield i, line
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read it ({e})") from None


def passed(record: dict[str, Any]) -> bool | None:
    """Whether the record's episode passed; None when the record does not say."""
    info = record.get("info")
    if isinstance(info, dict) and info.get("outcome") is not None:
        return info.get("outcome") == "pass"
    if "passed" in record:
        return bool(record["passed"])
    if isinstance(record.get("reward"), (int, float)) and "token_ids" not in record:
        return record["reward"] > 0
    return None


def normalise_messages(messages: list[Any], where: str) -> list[dict]:
    """OpenAI-style messages as chat templates expect them: tool-call `arguments` given as a JSON
    string (the OpenAI wire format) become objects, or Qwen's template would render them as a
    quoted string inside the call, which is not what a model should learn to write."""
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m:
            raise DataError(f"{where}: messages[{i}] must be an object with a 'role'")
        m = dict(m)
        calls = m.get("tool_calls")
        if calls:
            if not isinstance(calls, list):
                raise DataError(f"{where}: messages[{i}].tool_calls must be a list")
            fixed = []
            for j, c in enumerate(calls):
                c = dict(c)
                fn = dict(c.get("function", c))
                if "name" not in fn:
                    raise DataError(f"{where}: messages[{i}].tool_calls[{j}] has no function name")
                args = fn.get("arguments", {})
                if isinstance(args, str):
                    try:
                        args = json.loads(args) if args.strip() else {}
                    except json.JSONDecodeError as e:
                        raise DataError(f"{where}: messages[{i}].tool_calls[{j}].function.arguments is not "
                                        f"valid JSON ({e.msg})") from None
                fn["arguments"] = args
                if "function" in c:
                    c["function"] = fn
                else:
                    c = fn
                fixed.append(c)
            m["tool_calls"] = fixed
        out.append(m)
    return out


def render_chat(tokenizer: Any, messages: list[dict], tools: list[dict] | None,
                where: str) -> tuple[list[int], list[int]]:
    """Token ids and assistant mask of a chat conversation in the tokenizer's template."""

    messages = normalise_messages(messages, where)

    spans: list[tuple[int, int]] = []  # character spans of assistant output
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m:
            raise DataError(f"{where}: messages[{i}] has no 'role'")
        if m["role"] != "assistant":
            continue
        before = tokenizer.apply_chat_template(messages[:i], tools=tools or None, tokenize=False,
                                               add_generation_prompt=True)
        upto = tokenizer.apply_chat_template(messages[:i + 1], tools=tools or None, tokenize=False,
                                             add_generation_prompt=False)
        if not upto.startswith(before):
            raise DataError(f"{where}: the chat template is not append-only at messages[{i}]: rendering the "
                            "assistant turn changed the text before it, so its tokens cannot be masked exactly")
        end = upto.find(END_OF_TURN, len(before))
        if end < 0:
            raise DataError(f"{where}: messages[{i}] (assistant) rendered without {END_OF_TURN}")
        spans.append((len(before), end + len(END_OF_TURN)))
    if not spans:
        raise DataError(f"{where}: no assistant message to learn from")
    text = tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False, add_generation_prompt=False)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), enc["offset_mapping"]
    mask = [0] * len(ids)
    k = 0
    for j, (a, b) in enumerate(offsets):
        while k < len(spans) and a >= spans[k][1]:
            k += 1
        if k < len(spans) and spans[k][0] <= a < spans[k][1] and b > a:
            mask[j] = 1
    return ids, mask


def load_examples(paths: list[str | Path], tokenizer: Any, passing_only: bool = False,
                  max_length: int | None = None) -> tuple[list[Example], dict[str, int]]:
    """Examples from every file, and counts (read, kept, failing dropped, too long dropped)."""
    examples: list[Example] = []
    counts = {"read": 0, "dropped_failing": 0, "dropped_too_long": 0, "dropped_no_tokens": 0}
    vocab = len(tokenizer)
    for p in map(Path, paths):
        if not p.is_file():
            raise DataError(f"data file {p} does not exist")
        for lineno, line in _lines(p):
            where = f"{p}:{lineno}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{where}: not JSON ({e.msg}); each line must be one JSON object") from None
            if not isinstance(rec, dict):
                raise DataError(f"{where}: expected a JSON object, got {type(rec).__name__}")
            counts["read"] += 1
            if passing_only:
                ok = passed(rec)
                if ok is None:
                    raise DataError(f"{where}: --passing-only needs to know whether the episode passed: a fixrl "
                                    "trajectory's info.outcome, or a 'passed' / 'reward' field on a chat line")
                if not ok:
                    counts["dropped_failing"] += 1
                    continue
            if "token_ids" in rec:
                ids, mask = rec["token_ids"], rec.get("assistant_mask")
                if not isinstance(ids, list) or not isinstance(mask, list) or len(ids) != len(mask):
                    raise DataError(f"{where}: a trajectory needs 'token_ids' and 'assistant_mask' lists of the "
                                    "same length")
                if any((not isinstance(t, int)) or t < 0 or t >= vocab for t in ids):
                    raise DataError(f"{where}: token_ids outside the tokenizer's vocabulary ({vocab}): was the "
                                    "file made with another model's tokenizer?")
                mask = [1 if m else 0 for m in mask]
            elif "messages" in rec:
                if not isinstance(rec["messages"], list):
                    raise DataError(f"{where}: 'messages' must be a list of chat messages")
                try:
                    ids, mask = render_chat(tokenizer, rec["messages"], rec.get("tools"), where)
                except DataError:
                    raise
                except Exception as e:  # the template raising on a malformed message
                    raise DataError(f"{where}: the chat template could not render the messages ({e})") from None
            else:
                raise DataError(f"{where}: neither a fixrl trajectory ('token_ids' + 'assistant_mask') nor a "
                                "chat line ('messages')")
            if mask and mask[0]:
                mask = [0] + mask[1:]  # nothing predicts the first token
            if not any(mask):
                counts["dropped_no_tokens"] += 1
                continue
            if max_length is not None and len(ids) > max_length:
                counts["dropped_too_long"] += 1
                continue
            examples.append(Example(list(ids), mask, where))
    counts["kept"] = len(examples)
    return examples, counts


# ----------------------------------------------------------------------------- training


def pad_batch(rows: list[tuple[list[int], list[int]]], pad_id: int) -> tuple[Any, Any]:
    """Right-padded ids [B, T] and mask [B, T] (0 on padding)."""

    width = max(len(ids) for ids, _ in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (t, m) in enumerate(rows):
        ids[i, :len(t)] = torch.tensor(t, dtype=torch.long)
        mask[i, :len(m)] = torch.tensor(m, dtype=torch.long)
    return ids, mask


def lr_factor(step: int, total: int, warmup: int, kind: str) -> float:
    """The learning rate's multiplier at optimizer step `step` (0-based) of `total`."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    if kind == "constant" or total <= warmup:
        return 1.0
    progress = (step - warmup) / (total - warmup)          # 0 at the first step after warm-up
    if kind == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    return 1.0 - progress


def _batch_loss(model: Any, batch: list[Example], cfg: SFTConfig, pad_id: int, head: Any, scaler: Any,
                precision: str) -> float:
    """Forward and backward over one batch, micro-batch by micro-batch; the batch's loss: the
    weighted sum of reply log-probs divided by its reply tokens (a count, whatever the weights)."""


    n_tokens = sum(sum(e.assistant_mask) for e in batch)
    total = 0.0
    for m in range(0, len(batch), cfg.micro_batch_size):
        micro = batch[m:m + cfg.micro_batch_size]
        ids, mask = pad_batch([(e.token_ids, e.assistant_mask) for e in micro], pad_id)
        weights = mask.float()  # [b, T]
        for r, e in enumerate(micro):
            if e.weights is not None:
                weights[r, :len(e.weights)] = torch.tensor(e.weights)
        logp = reply_log_probs(model, ids, mask, 1.0, cfg.chunk_size, head=head, precision=precision)  # [b, T]
        loss = -(logp * weights.to(logp.device)).sum() / n_tokens
        scaler.scale(loss).backward()
        total += float(loss.detach())
    return total


class _MetricsFile:
    """sft_metrics.jsonl, a line per optimizer step."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_text("")

    def write(self, row: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")


def _epochs(cfg: SFTConfig, model: Any, examples: list[Example], params: list[Any], pad_id: int, head: Any,
            metrics: _MetricsFile, progress: Any, amp: Any) -> tuple[list[float], int, int]:
    """Every optimizer step of the run: (the loss of each, reply tokens seen, steps skipped for
    inf/nan gradients). `amp`: the run's `train.precision.MixedPrecision`."""


    total_steps = math.ceil(len(examples) / cfg.batch_size) * cfg.num_train_epochs
    scaler = amp.grad_scaler()
    optimizer = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, total_steps, cfg.warmup_steps, cfg.lr_scheduler))
    bar = progress.add_task("sft", total=total_steps) if progress is not None else None
    rng, history, tokens_seen, skipped, t0 = random.Random(cfg.seed), [], 0, 0, time.time()
    for epoch in range(cfg.num_train_epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        for b in range(0, len(order), cfg.batch_size):
            batch = [examples[i] for i in order[b:b + cfg.batch_size]]
            optimizer.zero_grad(set_to_none=True)
            loss = _batch_loss(model, batch, cfg, pad_id, head, scaler, amp.precision)
            result = optimizer_step(optimizer, scaler, params, cfg.max_grad_norm)
            if result.skipped:  # inf/nan gradients: no update, and the schedule does not advance
                skipped += 1
            else:
                scheduler.step()
            n_tokens = sum(sum(e.assistant_mask) for e in batch)
            tokens_seen += n_tokens
            history.append(loss)
            metrics.write({"step": len(history), "epoch": epoch, "loss": loss,
                           "grad_norm": None if result.skipped else result.grad_norm, "skipped": result.skipped,
                           "loss_scale": result.loss_scale, "tokens": n_tokens, "lr": scheduler.get_last_lr()[0],
                           "seconds": time.time() - t0})
            if progress is not None:
                progress.update(bar, advance=1, description=f"sft epoch {epoch + 1} loss {loss:.3f}")
    return history, tokens_seen, skipped


def run_sft(cfg: SFTConfig, console: Any = None, hooks: SFTHooks | None = None) -> dict[str, Any]:
    """Train and save; returns a summary (steps, tokens, first/last loss, seconds, counts).
    `hooks`: a recipe's per-token loss weights and output head (see SFTHooks)."""


    hooks = hooks or SFTHooks()
    cfg.validate()
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    out = Path(cfg.out)
    model, tok = load_trainable(cfg.model, cfg.adapter, cfg, cfg.device, cfg.precision)
    amp = mixed_precision(cfg.precision, next(model.parameters()).device)
    cfg = dataclasses.replace(cfg, precision=amp.precision)  # sft_config.json records the resolved setting
    examples, counts = load_examples(cfg.data, tok, cfg.passing_only, cfg.max_length)
    if not examples:
        raise DataError(f"no training examples left in {', '.join(map(str, cfg.data))} "
                        f"({counts}); check --passing-only / --max-length")
    if hooks.token_weights is not None:
        for e in examples:
            e.weights = hooks.token_weights(e, tok)
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    out.mkdir(parents=True, exist_ok=True)
    metrics = _MetricsFile(out / "sft_metrics.jsonl")
    head_ctx = contextlib.nullcontext(None)
    if hooks.output_head is not None:
        head_ctx = hooks.output_head(model, tok, examples)
    model.train()
    t0 = time.time()
    progress = _progress(console)
    with progress if progress is not None else contextlib.nullcontext(), head_ctx as head:
        params = trainable_parameters(model) + (list(head.parameters()) if head is not None else [])
        history, tokens_seen, skipped = _epochs(cfg, model, examples, params, pad_id, head, metrics, progress, amp)
    save_trainable(model, tok, out)
    summary = {"steps": len(history), "examples": len(examples), "counts": counts, "policy_tokens": tokens_seen,
               "first_loss": history[0], "last_loss": history[-1], "skipped_steps": skipped,
               "precision": amp.precision, "seconds": time.time() - t0,
               "out": str(out)}
    (out / "sft_config.json").write_text(json.dumps({"config": dataclasses.asdict(cfg), "summary": summary},
                                                    indent=2) + "\n")
    return summary


def _progress(console: Any):
    if console is None:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: PLC0415 - rich: only with a console

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=False)
