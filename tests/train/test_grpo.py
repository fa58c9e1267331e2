"""GRPO end to end on the tiny checkpoint in local sandboxes: two steps from an SFT adapter
change its weights and write metrics, trajectories, an evaluation and a resumable checkpoint;
a resumed run's next step equals the uninterrupted run's; config and CLI errors."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from fixrl.train.config import GRPOConfig, parse_override
from fixrl.train.resolve import PRESETS, config_from_dict, load_config, make_config, resolve

REQUIRED = ["step", "rollout/reward", "rollout/pass_rate", "zero_adv_frac", "zero_adv_frac/all_pass",
            "zero_adv_frac/all_fail", "groups/tried", "groups/kept", "rollout/episodes", "rollout/errors",
            "rollout/reads", "rollout/tests", "rollout/edits", "rollout/turns", "policy_tokens/pass",
            "policy_tokens/fail", "exit/submitted", "exit/out_of_turns", "exit/out_of_tokens", "entropy",
            "loss/clip_frac", "approx_kl", "kl_ref", "grad_norm", "lr", "time/generation",
            "time/tools", "time/checks", "time/training"]


def test_presets_and_config_errors(tmp_path):
    default = make_config("dynamic_mean")
    assert (default.num_generations, default.scale_rewards, default.baseline, default.loss_type,
            default.dynamic_sampling, default.min_mixed_groups, default.max_group_tries, default.num_iterations,
            default.steps_per_generation, default.beta) == (6, "none", "mean", "dapo", True, 4, 16, 1, 1, 0.0)
    assert GRPOConfig().to_dict() | {"preset": "dynamic_mean"} == default.to_dict()  # the defaults are its values
    assert make_config("octlm").to_dict() == default.to_dict()  # the earlier name of the default preset
    assert (default.env.max_turns, default.env.rename, default.sandbox.backend) == (6, True, "local")
    dapo = make_config("dapo")
    assert dapo.epsilon_high == 0.28 and dapo.dynamic_sampling and dapo.overlong_buffer == 2
    grpo = make_config("grpo", beta=0.1)  # explicit fields win over the preset
    assert grpo.scale_rewards == "group" and grpo.loss_type == "grpo" and grpo.beta == 0.1
    assert resolve(make_config("dr_grpo")).loss_constant == default.max_turns * default.max_new_tokens
    rloo = make_config("rloo")
    assert (rloo.scale_rewards, rloo.baseline) == ("none", "leave_one_out")
    assert set(PRESETS) >= {"dynamic_mean", "grpo", "dr_grpo", "dapo", "rloo", "gspo"}
    assert resolve(default).epsilon_high == default.epsilon and not resolve(default).needs_old_logprobs and resolve(dapo).needs_old_logprobs
    for bad, match in [(dict(scale_rewards="std"), "scale_rewards"), (dict(num_generations=1), "num_generations"),
                       (dict(max_group_tries=2), "max_group_tries"), (dict(temperature=0), "temperature"),
                       (dict(reward="nope"), "reward"), (dict(bogus=1), "unknown GRPOConfig field"),
                       (dict(pool_size=0), "pool_size"), (dict(backend="vm"), "backend"),
                       (dict(steps=3, max_steps=4), "not both")]:
        with pytest.raises(ValueError, match=match):
            make_config("dynamic_mean", **bad)
    with pytest.raises(ValueError, match="unknown preset"):
        make_config("ppo")
    assert parse_override("beta=0.5") == ("beta", 0.5) and parse_override("dynamic_sampling=off") == ("dynamic_sampling", False)
    assert parse_override("epsilon_high=none") == ("epsilon_high", None)
    with pytest.raises(ValueError, match="FIELD=VALUE"):
        parse_override("nofield=1")
    cfg = make_config("dapo", out=str(tmp_path))
    cfg.save(tmp_path / "c.json")
    assert load_config(tmp_path / "c.json").to_dict() == cfg.to_dict()


def test_config_json_of_earlier_versions_loads_with_todays_names(tmp_path):
    """A run directory written before the TRL names and the nested env/sandbox configs resumes."""
    old = make_config("dynamic_mean").to_dict()
    for name in ("num_iterations", "steps_per_generation", "max_steps", "eval_steps", "save_steps", "baseline",
                 "env", "sandbox"):
        old.pop(name)
    old.update(epochs=2, minibatches=3, steps=7, eval_every=5, save_every=4, loss_type="token_mean",
               scale_rewards="rloo", preset="octlm", backend="docker", image="img:1", pool_size=3, max_turns=5,
               max_edits=1, rename=False, system_prompt="be brief", tool_schemas=False, reward="hidden")
    (tmp_path / "config.json").write_text(json.dumps(old))
    cfg = load_config(tmp_path / "config.json", steps=9, pool_size=2)  # overrides in earlier names too
    assert (cfg.num_iterations, cfg.steps_per_generation, cfg.max_steps, cfg.eval_steps, cfg.save_steps) == (2, 3, 9, 5, 4)
    assert (cfg.loss_type, cfg.scale_rewards, cfg.baseline, cfg.preset) == ("dapo", "none", "leave_one_out", "dynamic_mean")
    assert (cfg.sandbox.backend, cfg.sandbox.image, cfg.sandbox.pool_size) == ("docker", "img:1", 2)
    env = cfg.env
    assert (env.max_turns, env.max_edits, env.rename, env.system_prompt, env.tool_schemas, env.reward) == \
        (5, 1, False, "be brief", False, "hidden")
    assert config_from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()


def test_cli_errors(tmp_path, capsys, train_suite):
    from fixrl.harness.cli import main

    assert main(["grpo", "--out", str(tmp_path / "r")]) == 2
    assert "needs --model" in capsys.readouterr().err
    assert main(["grpo", "--out", str(tmp_path / "r"), "--resume"]) == 2
    assert "no checkpoint" in capsys.readouterr().err
    assert main(["grpo", "--out", str(tmp_path / "r"), "--model", "m", "--suite", "s", "--set", "beta"]) == 2
    capsys.readouterr()
    assert main(["grpo", "--out", str(tmp_path / "r"), "--model", "m", "--suite", str(tmp_path / "nosuite"),
                 "--quiet"]) == 2
    assert "--suite" in capsys.readouterr().err
    assert main(["grpo", "--out", str(tmp_path / "r"), "--model", str(tmp_path / "none"), "--suite",
                 str(train_suite), "--quiet"]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # nothing written for a run that could not start
    assert main(["grpo", "--out", str(tmp_path / "r"), "--resume", "--model", "m"]) == 2
    assert "drop --model" in capsys.readouterr().err


def run_config(tiny_model, suite, out, adapter=None, steps=2, eval_every=2):
    return make_config("dynamic_mean", model=str(tiny_model), suite=str(suite), out=str(out), adapter=adapter,
                       num_generations=3, max_turns=2, max_new_tokens=6, max_total_tokens=4096,
                       min_mixed_groups=1, max_group_tries=2, groups_per_rollout=2, pool_size=6, steps=steps,
                       eval_every=eval_every, eval_max_tasks=1, save_every=0, reward="trainkit:coin_reward",
                       learning_rate=5e-3, lora_rank=4, seed=0, tensorboard=True)


def adapter_weights(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path / "adapter_model.safetensors"))


@pytest.fixture(scope="module")
def sft_adapter(tiny_model, tmp_path_factory):
    """A starting adapter: a new LoRA adapter with non-zero B, saved in peft format."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    out = tmp_path_factory.mktemp("sft") / "adapter"
    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model),
                           LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))
    model.save_pretrained(out)
    return out


@pytest.mark.slow
def test_two_steps_then_resume_equals_uninterrupted(tiny_model, train_suite, sft_adapter, tmp_path, monkeypatch):
    """Run B starts from the SFT adapter and is interrupted (Ctrl-C) while sampling its third
    step, after its rollouts drew tasks; it saves its checkpoint on the way out, and is resumed
    for the third step. Run A does three steps without stopping. Same weights, same metrics."""
    import torch

    from fixrl.harness.cli import main
    from fixrl.train import sampler as sampler_mod
    from fixrl.train.grpo import RunError, run_grpo

    original = sampler_mod.DynamicSampler.sample
    calls = []

    def interrupted_at_step_3(self, rollout):
        calls.append(1)
        if len(calls) < 3:
            return original(self, rollout)

        def then_ctrl_c(tasks, k):
            rollout(tasks, k)
            raise KeyboardInterrupt

        return original(self, then_ctrl_c)

    monkeypatch.setattr(sampler_mod.DynamicSampler, "sample", interrupted_at_step_3)
    run_b = tmp_path / "b"
    with pytest.raises(KeyboardInterrupt):
        run_grpo(run_config(tiny_model, train_suite, run_b, adapter=str(sft_adapter), steps=3))
    monkeypatch.undo()
    rows = [json.loads(x) for x in (run_b / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        missing = [k for k in REQUIRED if k not in r]
        assert not missing, missing
        assert r["groups/kept"] >= 1 and r["train/episodes"] >= 2 and r["rollout/episodes"] in (6, 12)
        assert r["entropy"] > 0 and r["grad_norm"] > 0 and r["loss/clip_frac"] == 0.0  # one on-policy update
    assert rows[1]["eval/pass@1"] is not None and (run_b / "evals" / "step_000002" / "results.json").is_file()
    # every sampled trajectory is saved, with its advantage when it was trained on
    with gzip.open(run_b / "trajectories" / "step_000001.jsonl.gz", "rt") as f:
        saved = [json.loads(x) for x in f]
    assert len(saved) == rows[0]["rollout/episodes"]
    kept = [t for t in saved if t["kept"]]
    assert len(kept) == rows[0]["train/episodes"] and all(t["advantage"] is not None for t in kept)
    assert {t["reward"] for t in kept} == {0.0, 1.0} and abs(sum(t["advantage"] for t in kept)) < 1e-6
    assert all(len(t["token_ids"]) == len(t["assistant_mask"]) for t in saved)
    # the checkpoint written on Ctrl-C (save_every=0: the only one) is step 2's
    ckpt = run_b / "checkpoint"
    for name in ("adapter/adapter_config.json", "trainer_state.pt", "sampler.json", "config.json"):
        assert (ckpt / name).is_file(), name
    assert torch.load(ckpt / "trainer_state.pt", weights_only=False)["step"] == 2
    assert list((run_b / "tb").glob("events.out.tfevents.*"))
    # the adapter moved away from the SFT adapter, and is a standard peft adapter
    start, after = adapter_weights(sft_adapter), adapter_weights(run_b / "adapter")
    assert start.keys() == after.keys() and any(not torch.equal(start[k], after[k]) for k in start)
    # a second start in the same directory is refused
    with pytest.raises(RunError, match="--resume"):
        run_grpo(run_config(tiny_model, train_suite, run_b, adapter=str(sft_adapter), steps=3))

    # resume B for its third step (evaluation draws on no state the training uses; it is left
    # out from here on to save time); run A does three steps without stopping
    assert main(["grpo", "--out", str(run_b), "--resume", "--eval-every", "0", "--quiet"]) == 0
    run_a = tmp_path / "a"
    run_grpo(run_config(tiny_model, train_suite, run_a, adapter=str(sft_adapter), steps=3, eval_every=0))
    wa, wb = adapter_weights(run_a / "adapter"), adapter_weights(run_b / "adapter")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    rows_a = [json.loads(x) for x in (run_a / "metrics.jsonl").read_text().splitlines()]
    rows_b = [json.loads(x) for x in (run_b / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows_b] == [1, 2, 3]

    def same(r):
        return {k: v for k, v in r.items() if not k.startswith(("time/", "eval/"))}

    assert [same(r) for r in rows_a] == [same(r) for r in rows_b]
    assert json.loads((run_a / "checkpoint" / "sampler.json").read_text()) == \
        json.loads((run_b / "checkpoint" / "sampler.json").read_text())
