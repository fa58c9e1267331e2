"""GRPO of the tiny checkpoint with its sandboxes on a real local Ray cluster equals the same run
in one process: two steps (with a held-out evaluation, which shares the cluster's workers),
the same metrics and exactly the same adapter weights.

Exact, not only "up to generation batching": every rollout call here has at most as many
episodes as the lockstep width (6 = the cluster's two nodes of 3 slots = the local pool), so
both runs start every episode at once and generate the same batches."""
from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from fixrl.train import grpo as grpo_mod
from fixrl.train.grpo import run_grpo
from fixrl.train.resolve import make_config

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _config(tiny_model, suite, out, ray):
    return make_config("octlm", model=str(tiny_model), suite=str(suite), out=str(out), num_generations=3,
                       max_turns=2, max_new_tokens=6, max_total_tokens=4096, min_mixed_groups=1, max_group_tries=2,
                       groups_per_rollout=2, steps=2, eval_every=2, eval_max_tasks=1, save_every=0,
                       reward="trainkit:coin_reward", learning_rate=5e-3, lora_rank=4, seed=0,
                       sandbox={"pool_size": 6, "ray": ray})


def test_two_grpo_steps_on_the_cluster_equal_one_process(ray_cluster, tiny_model, train_suite, tmp_path,
                                                        monkeypatch):
    opened = []
    real = grpo_mod.open_rollouts

    def recording(*args, **kwargs):   # the real factory; we keep what it returned
        opened.append(real(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(grpo_mod, "open_rollouts", recording)  # where run_grpo looks it up
    run_grpo(_config(tiny_model, train_suite, tmp_path / "ray", ray_cluster.address))
    run_grpo(_config(tiny_model, train_suite, tmp_path / "local", None))
    assert [type(r).__name__ for r in opened] == ["RayRollouts", "LocalRollouts"]
    per_node = opened[0].stats()
    assert len(per_node) == 2 and all(s["episodes"] >= 3 for s in per_node.values()), per_node

    def rows(run):
        return [{k: v for k, v in json.loads(line).items() if not k.startswith("time/")}
                for line in (tmp_path / run / "metrics.jsonl").read_text().splitlines()]

    on_ray, local = rows("ray"), rows("local")
    assert [r["step"] for r in on_ray] == [1, 2] and on_ray[1]["eval/pass@1"] is not None
    assert on_ray == local
    assert on_ray[0]["rollout/errors"] == 0 and on_ray[0]["rollout/episodes"] >= 6
    a, b = (load_file(str(tmp_path / run / "adapter" / "adapter_model.safetensors")) for run in ("ray", "local"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert json.loads((tmp_path / "ray" / "config.json").read_text())["cluster"]["address"] == ray_cluster.address
