"""`fixrl grpo --engine vllm` against the session's real vLLM server: two steps train, the
server gets the adapter after each update, and step 2's episodes are sampled by step 1's
adapter (their recorded log-probs are what peft gives with that adapter)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch

from fixrl.train.resolve import make_config

pytestmark = pytest.mark.slow


def _rows(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def test_two_steps_on_vllm_sample_step_2_with_step_1s_adapter(vllm_server, tiny32_model, train_suite, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from fixrl.train.grpo import run_grpo

    out = tmp_path / "run"
    cfg = make_config("dynamic_mean", model=str(tiny32_model), suite=str(train_suite), out=str(out),
                      num_generations=3, max_turns=2, max_new_tokens=6, max_total_tokens=4096,
                      min_mixed_groups=1, max_group_tries=2, groups_per_rollout=2, pool_size=6, steps=2,
                      eval_every=0, save_every=0, reward="trainkit:coin_reward", learning_rate=5e-2,
                      lora_rank=4, seed=0, engine="vllm", vllm_url=vllm_server.url)
    run_grpo(cfg)

    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["engine/adapter_version"] for m in metrics] == [2, 3]   # adapter-1 is the starting one
    assert metrics[0]["train/optimizer_steps"] >= 1
    # float32 on both sides: the engine's log-probs are the trainer's up to kernel rounding.
    assert metrics[0]["engine/logp_gap"] < 1e-3
    step1, step2 = _rows(out / "trajectories" / "step_000001.jsonl.gz"), _rows(out / "trajectories" /
                                                                               "step_000002.jsonl.gz")
    assert {tuple(r["policy_versions"]) for r in step1} == {("adapter-1",)}
    assert {tuple(r["policy_versions"]) for r in step2} == {("adapter-2",)}

    # adapter-2 is what step 1's update saved: its peft log-probs are the ones step 2 recorded.
    saved = out / "vllm-adapters" / "step-000001"
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny32_model, dtype=torch.float32),
                                      saved).eval()
    row = max(step2, key=lambda r: sum(r["assistant_mask"]))
    ids = torch.tensor([row["token_ids"]])
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits[0, :-1].float(), dim=-1)  # [T-1, V]
    picked = logp.gather(1, ids[0, 1:, None]).squeeze(1)  # [T-1]
    mask = torch.tensor(row["assistant_mask"][1:], dtype=torch.bool)
    recorded = torch.tensor(row["sampler_logprobs"][1:])
    assert (picked[mask] - recorded[mask]).abs().max() < 1e-4
    # ...and not the starting one's (a new adapter: the base model): the update changed what sampled.
    base = AutoModelForCausalLM.from_pretrained(tiny32_model, dtype=torch.float32).eval()
    with torch.no_grad():
        base_logp = torch.log_softmax(base(ids).logits[0, :-1].float(), dim=-1).gather(1, ids[0, 1:, None]).squeeze(1)
    assert (base_logp[mask] - recorded[mask]).abs().max() > 1e-3
