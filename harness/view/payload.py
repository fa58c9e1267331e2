"""The data of a `fixrl view` page: one JSON payload (the episode table, groups, metrics, the
eval's pass matrix and pass@k) and, apart, one transcript per episode that the page parses only
when that episode is opened.

Trained tokens: with a tokenizer, each assistant turn is shown as the runs of its sampled ids
decoded, each run marked by its `assistant_mask` value, and mask-1 tokens outside every turn
are counted as an anomaly; without one, each assistant message is shown as written with how
many of its tokens were in the loss. What it does not guarantee: that decoded runs join into the
exact text (a run boundary inside a multi-byte character shows replacement characters).
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Protocol

from fixrl.evals.passk import bootstrap_mean, pass_at_k
from fixrl.harness.agent.trajectory import Trajectory
from fixrl.harness.view.load import Episode, Source

TAMPERED = "tampered"
"""A check test's status when the runtime guard caught changed code tampering with it."""


class Decoder(Protocol):
    """What the transcripts need of a tokenizer (a transformers tokenizer is one)."""

    def decode(self, ids: Sequence[int]) -> str: ...


def payload(src: Source) -> dict[str, Any]:
    """The page's data (without transcripts)."""
    rows = [row(i, e) for i, e in enumerate(src.episodes)]
    out: dict[str, Any] = {"kind": src.kind, "source": str(src.path), "title": _title(src), "episodes": rows,
                           "model": src.model}
    if src.kind == "grpo":
        out["metrics"] = _metrics(src.metrics)
        out["config"] = {k: src.config.get(k) for k in ("model", "adapter", "suite", "num_generations", "loss_type",
                                                         "scale_rewards", "max_steps") if k in src.config}
    if src.kind != "grpo":
        out["eval"] = eval_figures(src)
    return out


def row(i: int, e: Episode) -> dict[str, Any]:
    """One line of the episode table."""
    t, info = e.traj, e.traj.info
    extra = info.extra
    # the weights that sampled it: a vLLM run's adapter names (`Trajectory.policy_versions`)
    version = ", ".join(t.policy_versions) or extra.get("adapter_version", extra.get("policy_version"))
    return {"i": i, "task": t.task_id, "sample": info.sample, "step": e.step, "group": t.group,
            "version": version, "reward": t.reward, "outcome": info.outcome or "?", "reason": reason(t),
            "exit": info.exit_status or "?", "turns": info.turns, "tokens": t.num_policy_tokens,
            "total": len(t.token_ids), "violations": len(info.rule_violations),
            "guard": sum(1 for s in info.check_tests.values() if s == TAMPERED),
            "advantage": e.advantage, "kept": e.kept, "actions": " | ".join(info.actions)}


def reason(t: Trajectory) -> str:
    """Why the episode did not pass, in one line: the reward's own words where recorded (files
    written before it was recorded get the nearest thing the record holds)."""
    info = t.info
    if info.outcome == "pass":
        return ""
    if info.outcome == "error":
        return info.error or info.reason or "error"
    if info.reason:
        return info.reason
    if info.rule_violations:
        return f"edit rules: {info.rule_violations[0]}"
    bad = [name for name, s in info.check_tests.items() if s != "passed"]
    if bad:
        return f"check: {bad[0]} {info.check_tests[bad[0]]}" + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else "")
    if info.exit_status and info.exit_status != "submitted":
        return f"ended {info.exit_status}"
    return "the check failed"


def transcript(t: Trajectory, decoder: Decoder | None = None) -> dict[str, Any]:
    """One episode for reading: its messages (assistant turns with their mask), the final diff,
    the check's verdict and the record."""
    info = t.info
    blocks: list[dict[str, Any]] = []
    turn = 0
    mask = t.assistant_mask
    for m in t.messages:
        role, content = str(m.get("role") or "?"), str(m.get("content") or "")
        block: dict[str, Any] = {"role": role, "text": content}
        if role == "assistant" and turn < len(t.turn_spans):
            a, b = t.turn_spans[turn]
            block.update(tokens=b - a, trained=sum(mask[a:b]), cut=turn in info.cut_turns)
            if decoder is not None:
                block["runs"] = _runs(t.token_ids, mask, a, b, decoder)
            turn += 1
        blocks.append(block)
    inside = sum(b - a for a, b in t.turn_spans)
    trained_inside = sum(sum(mask[a:b]) for a, b in t.turn_spans)
    d = info.to_dict()
    verdict = {k: d.get(k) for k in ("outcome", "hidden_pass", "public_pass", "partial_credit", "reason", "error",
                                     "check_tests", "rule_violations", "dropped_files", "exit_status", "submitted",
                                     "answer")}
    record = {k: v for k, v in d.items() if k not in verdict and k not in ("diff", "task_id")}
    return {"blocks": blocks, "diff": info.diff, "verdict": verdict, "record": record,
            "tokens": len(t.token_ids), "trained": sum(mask), "turn_tokens": inside,
            "stray_trained": sum(mask) - trained_inside, "reason": reason(t)}


def _runs(ids: list[int], mask: list[int], a: int, b: int, decoder: Decoder) -> list[list[Any]]:
    """[[mask value, decoded text], ...] for the runs of equal mask in ids[a:b]."""
    out: list[list[Any]] = []
    start = a
    for k in range(a + 1, b + 1):
        if k == b or mask[k] != mask[start]:
            out.append([int(mask[start]), decoder.decode(ids[start:k])])
            start = k
    return out


def groups(src: Source) -> dict[str, list[int]]:
    """GRPO: "step/group" -> the indices of its episodes (in sample order)."""
    out: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(src.episodes):
        if e.traj.group is not None:
            out[f"{e.step}/{e.traj.group}"].append(i)
    return dict(out)


def _metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Steps and, per numeric metric, its values over them (None where undefined)."""
    steps = [r.get("step") for r in rows]
    keys: list[str] = []
    for r in rows:
        for k, v in r.items():
            number = isinstance(v, (int, float)) and not isinstance(v, bool)
            if k != "step" and k not in keys and (v is None or number):
                keys.append(k)
    series = {k: [_num(r.get(k)) for r in rows] for k in keys}
    return {"steps": steps, "series": {k: v for k, v in series.items() if any(x is not None for x in v)}}


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def eval_figures(src: Source) -> dict[str, Any]:
    """The task x sample pass matrix and pass@k with intervals: the eval's own results where
    there are some, else computed from the episodes (evals.passk)."""
    by_task: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
    for i, e in enumerate(src.episodes):
        info = e.traj.info
        sample = info.sample if info.sample is not None else len(by_task[e.traj.task_id])
        by_task[e.traj.task_id].append((sample, info.outcome or "fail", i))
    matrix = {task: [[s, o, i] for s, o, i in sorted(cells)] for task, cells in by_task.items()}
    if src.results is not None:
        ks = [int(k) for k in src.results.get("ks", [])]
        overall = src.results.get("overall", {})
        passk = [{"k": k, **overall[f"pass@{k}"]} for k in ks if isinstance(overall.get(f"pass@{k}"), dict)]
        order = [t["task_id"] for t in src.results["tasks"]]
        for task in order:  # a task whose episodes are not on file still gets its row
            if task not in matrix:
                outcomes = next(t.get("outcomes", []) for t in src.results["tasks"] if t["task_id"] == task)
                matrix[task] = [[j, o, None] for j, o in enumerate(outcomes)]
        return {"ks": ks, "passk": passk, "tasks": order + [t for t in matrix if t not in order], "matrix": matrix}
    return {**_passk(matrix), "tasks": list(matrix), "matrix": matrix}


def _passk(matrix: dict[str, list[list[Any]]]) -> dict[str, Any]:
    scored = {task: [o for _, o, _ in cells if o != "error"] for task, cells in matrix.items()}
    n = min((len(v) for v in scored.values() if v), default=0)
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64) if k <= n]
    passk = []
    for k in ks:
        vals = [pass_at_k(len(v), v.count("pass"), k) for v in scored.values() if len(v) >= k]
        passk.append({"k": k, **bootstrap_mean(vals).to_dict(), "tasks": len(vals)})
    return {"ks": ks, "passk": passk}


def _title(src: Source) -> str:
    if src.kind == "grpo":
        return f"GRPO run {src.path.name}: {len(src.episodes)} episodes over {len(src.metrics)} steps"
    if src.kind == "eval":
        r = src.results or {}
        name = (r.get("policy") or {}).get("name", "?")
        return f"Eval of {name} on {r.get('suite', '?')} / {r.get('split', '?')}: {len(src.episodes)} episodes"
    return f"Trajectories {src.path.name}: {len(src.episodes)} episodes"
