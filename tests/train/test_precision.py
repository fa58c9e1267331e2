"""The T4 path (fp16: frozen weights float16, LoRA float32, fp16 autocast, a GradScaler) run on
the CPU with the tiny checkpoint: loading; a step with an inf gradient skipped and counted;
finite SFT and GRPO losses; the scaler's state through --resume; the sampler's and the
trainer's log-probs within the stated fp16 tolerance; an fp16 adapter loaded with plain peft."""
from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch

from fixrl.train.config import LoRAConfig
from fixrl.train.model import ModelError, load_trainable
from fixrl.train.precision import MixedPrecision, cast_for_training, mixed_precision, optimizer_step, restore_scaler
from fixrl.train.resolve import make_config, resolve

# The sampler's and the trainer's log-probs of the same sampled tokens, fp16 (measured on the
# test below: max 0.023, mean 0.0023; the importance ratio then stays within exp(0.05) = 1.05
# of 1, far inside a 0.2 clip). The sampler runs one token at a time on a KV cache, the trainer
# one forward over the whole trajectory: float16 rounds the two differently.
FP16_LOGP_MAX, FP16_LOGP_MEAN = 0.05, 0.005
FP32_LOGP_MAX = 1e-4


def dtypes(model, trainable: bool) -> set:
    return {p.dtype for p in model.parameters() if p.requires_grad is trainable}


@pytest.mark.parametrize("precision, frozen", [("fp32", torch.float32), ("fp16", torch.float16),
                                               ("bf16", torch.bfloat16)])
def test_loading_casts_frozen_weights_and_keeps_lora_float32(tiny_model, precision, frozen):
    model, _ = load_trainable(tiny_model, None, LoRAConfig(lora_rank=4), "cpu", precision)
    assert dtypes(model, False) == {frozen} and dtypes(model, True) == {torch.float32}
    full, _ = load_trainable(tiny_model, None, LoRAConfig(full_finetune=True), "cpu", precision)
    assert dtypes(full, True) == {torch.float32} and not dtypes(full, False)  # float32 master weights
    with pytest.raises(ModelError, match="choose one of fp32, fp16, bf16"):
        load_trainable(tiny_model, None, LoRAConfig(), "cpu", "fp8")


def test_the_setting_on_configs_and_the_command_line(tmp_path, capsys):
    from fixrl.harness.cli import main
    from fixrl.train.sft import SFTConfig

    assert make_config("dynamic_mean", precision="fp16").precision == "fp16"
    with pytest.raises(ValueError, match="GRPOConfig.precision"):
        make_config("dynamic_mean", precision="half")
    with pytest.raises(ValueError, match="SFTConfig.precision"):
        SFTConfig(data=["x"], precision="half").validate()
    assert mixed_precision(None, torch.device("cpu")) == MixedPrecision("fp32", "cpu")
    assert mixed_precision("fp16", "cpu").grad_scaler().is_enabled()
    assert not mixed_precision("bf16", "cpu").grad_scaler().is_enabled()  # bf16 needs no loss scaling
    assert main(["grpo", "--out", str(tmp_path / "r"), "--model", "m", "--suite", "s", "--precision", "fp16",
                 "--print-config"]) == 0
    assert json.loads(capsys.readouterr().out)["precision"] == "fp16"
    assert main(["grpo", "--out", str(tmp_path / "r"), "--resume", "--precision", "fp32"]) == 2
    assert "drop --precision" in capsys.readouterr().err  # a run keeps the precision it started with
    assert main(["sft", "--model", "m", "--data", "d", "--out", "o", "--precision", "half"]) == 2
    assert "'half' is not one of fp32, fp16, bf16" in capsys.readouterr().err
    assert main(["eval", "--policy", "oracle", "--precision", "fp16"]) == 2
    assert "scripted --policy has none" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no GradScaler state"):  # a checkpoint of another precision
        restore_scaler(mixed_precision("fp16", "cpu").grad_scaler(), {})


def test_a_non_finite_step_without_loss_scaling_is_skipped_too():
    """fp32 and bf16 have no GradScaler to check: the gradient norm decides, so a nan gradient
    cannot write nan into every weight."""
    w = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.AdamW([w], lr=0.1)
    scaler = mixed_precision("fp32", "cpu").grad_scaler()
    (w * torch.tensor([1.0, float("nan"), 1.0])).sum().backward()
    r = optimizer_step(opt, scaler, [w], 1.0)
    assert r.skipped and math.isnan(r.grad_norm) and r.loss_scale is None
    assert torch.equal(w.detach(), torch.ones(3)) and not opt.state
    w.grad = None
    w.sum().backward()
    r = optimizer_step(opt, scaler, [w], 1.0)
    assert not r.skipped and r.grad_norm == pytest.approx(3 ** 0.5) and not torch.equal(w.detach(), torch.ones(3))


def fp16_tiny_peft():
    """test_update's small LoRA model, cast as the fp16 setting loads a model."""
    from test_update import tiny_peft

    return cast_for_training(tiny_peft(), "fp16")


def test_inf_gradient_step_is_skipped_by_the_scaler_and_counted():
    from test_update import fake_groups

    from fixrl.train.grpo import Learner, grpo_update

    model = fp16_tiny_peft()
    assert dtypes(model, False) == {torch.float16} and dtypes(model, True) == {torch.float32}
    cfg = resolve(make_config("dynamic_mean", learning_rate=1e-2, precision="fp16"))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.learning_rate)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    scaler = mixed_precision("fp16", "cpu").grad_scaler()
    before = [p.detach().clone() for p in params]
    hook = params[0].register_hook(lambda g: torch.full_like(g, float("inf")))  # one inf gradient
    learner = Learner(model, SimpleNamespace(pad_token_id=0), opt, sched, scaler, None, "fp16")
    m, _ = grpo_update(learner, fake_groups(), cfg, step=1)
    hook.remove()
    assert m["train/skipped_steps"] == 1 and m["train/optimizer_steps"] == 0
    assert m["train/loss_scale"] == 2.0 ** 15  # halved from 65536
    assert math.isfinite(m["loss/policy"]) and m["grad_norm"] is None
    assert all(torch.equal(b, p) for b, p in zip(before, params)) and not opt.state  # nothing moved
    assert sched.last_epoch == 0  # the schedule counts updates made
    m, _ = grpo_update(learner, fake_groups(), cfg, step=2)
    assert m["train/skipped_steps"] == 0 and m["train/optimizer_steps"] == 1
    assert m["train/loss_scale"] == 2.0 ** 15 and math.isfinite(m["grad_norm"]) and sched.last_epoch == 1
    assert any(not torch.equal(b, p) for b, p in zip(before, params))


@pytest.fixture(scope="module")
def demos(tiny_model, train_suite, tmp_path_factory):
    """Oracle episodes of the train split as an SFT data file (3 examples)."""
    from transformers import AutoTokenizer

    from fixrl.envs import EnvConfig
    from fixrl.harness.agent.local_rollouts import LocalRollouts
    from fixrl.harness.agent.policies import ScriptedPolicy
    from fixrl.sandbox import SandboxPool
    from fixrl.tasks import load_suite

    suite = load_suite(train_suite)
    tok = AutoTokenizer.from_pretrained(tiny_model)
    with SandboxPool(3, backend="local") as pool:
        trajs = LocalRollouts(suite, EnvConfig(max_turns=4), pool=pool).run(ScriptedPolicy("oracle", tokenizer=tok), suite.split("train"), 1, 0)
    path = tmp_path_factory.mktemp("demos") / "demos.jsonl"
    path.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in trajs))
    return path


def lora_logp(model, ids, mask, precision):
    from fixrl.train.logprobs import reply_log_probs

    with torch.no_grad():
        return reply_log_probs(model, ids, mask, precision=precision)[mask.bool()]


def test_fp16_sft_two_steps_and_the_adapter_loads_with_plain_peft(tiny_model, demos, tmp_path):
    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from fixrl.harness.cli import main

    out = tmp_path / "adapter"
    assert main(["sft", "--model", str(tiny_model), "--data", str(demos), "--out", str(out), "--batch-size", "2",
                 "--lr", "5e-3", "--lora-rank", "4", "--precision", "fp16", "--quiet"]) == 0
    rows = [json.loads(x) for x in (out / "sft_metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(math.isfinite(r["loss"]) and math.isfinite(r["grad_norm"]) for r in rows)
    assert [r["skipped"] for r in rows] == [False, False] and [r["loss_scale"] for r in rows] == [2.0 ** 16] * 2
    record = json.loads((out / "sft_config.json").read_text())
    assert record["config"]["precision"] == "fp16" and record["summary"]["skipped_steps"] == 0
    saved = load_file(str(out / "adapter_model.safetensors"))
    assert {t.dtype for t in saved.values()} == {torch.float32}
    assert any(float(t.abs().sum()) > 0 for k, t in saved.items() if "lora_B" in k)  # B starts at zero
    # plain peft, on a float32 base and on a float16 one: the same weights, the same policy
    ex = json.loads(demos.read_text().splitlines()[0])
    ids, mask = torch.tensor([ex["token_ids"]]), torch.tensor([ex["assistant_mask"]])
    ref = lora_logp(PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model), str(out)),
                    ids, mask, "fp32")
    half = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float16), str(out))
    loaded = {n.replace(".default", ""): p for n, p in half.named_parameters() if "lora_" in n}
    assert saved.keys() == loaded.keys() and all(torch.equal(saved[k], loaded[k].float()) for k in saved)
    got = lora_logp(half, ids, mask, "fp16")
    assert torch.isfinite(got).all() and (got - ref).abs().max() <= FP16_LOGP_MAX


def test_overflowing_sft_steps_are_skipped(tiny_model, demos, tmp_path, monkeypatch):
    """A loss scale far too large (2^40): every fp16 gradient overflows. Both steps are skipped,
    the adapter stays as it started (B = 0), the schedule does not advance, the scale falls."""
    from safetensors.torch import load_file

    from fixrl.train.sft import SFTConfig, run_sft

    monkeypatch.setattr(MixedPrecision, "grad_scaler", lambda self: torch.amp.GradScaler("cpu", init_scale=2.0 ** 40))
    out = tmp_path / "adapter"
    summary = run_sft(SFTConfig(model=str(tiny_model), data=[str(demos)], out=str(out), batch_size=2, lora_rank=4,
                                precision="fp16"))
    rows = [json.loads(x) for x in (out / "sft_metrics.jsonl").read_text().splitlines()]
    assert [r["skipped"] for r in rows] == [True, True] and [r["grad_norm"] for r in rows] == [None, None]
    assert [r["loss_scale"] for r in rows] == [2.0 ** 39, 2.0 ** 38]
    assert rows[0]["lr"] == rows[1]["lr"] == 2e-4 and all(math.isfinite(r["loss"]) for r in rows)
    assert summary["skipped_steps"] == 2
    saved = load_file(str(out / "adapter_model.safetensors"))
    assert all(float(t.abs().sum()) == 0 for k, t in saved.items() if "lora_B" in k)


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_sampler_and_trainer_logprobs_agree(tiny_model, train_suite, precision):
    """HFPolicy samples with the model the trainer trains (random LoRA B, embeddings scaled so
    the policy is peaked: median log-prob about -1.6), then the trainer's one forward over each
    whole trajectory scores the sampled tokens: within FP16_LOGP_* of what the sampler recorded."""
    from fixrl.envs import EnvConfig
    from fixrl.harness.agent.local_rollouts import LocalRollouts
    from fixrl.harness.agent.policies.hf import HFPolicy
    from fixrl.sandbox import SandboxPool
    from fixrl.tasks import load_suite
    from fixrl.train.logprobs import reply_log_probs

    suite = load_suite(train_suite)
    torch.manual_seed(0)
    model, tok = load_trainable(tiny_model, None, LoRAConfig(lora_rank=8), "cpu", precision)
    with torch.no_grad():
        model.get_base_model().model.embed_tokens.weight.mul_(30.0)
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.3)
    policy = HFPolicy(model=model, tokenizer=tok, temperature=0.8, max_new_tokens=12, precision=precision)
    with SandboxPool(4, backend="local") as pool:
        trajs = LocalRollouts(suite, EnvConfig(max_turns=3), pool=pool).run(policy, suite.split("train")[:2], 2, 3)
    diffs, sampled = [], []
    for t in trajs:
        ids, mask = torch.tensor([t.token_ids]), torch.tensor([t.assistant_mask])
        with torch.no_grad():
            trainer = reply_log_probs(model, ids, mask, 0.8, precision=precision)[mask.bool()]
        recorded = torch.tensor(t.sampler_logprobs)[mask[0].bool()]
        diffs.append((trainer - recorded).abs())
        sampled.append(recorded)
    d, lp = torch.cat(diffs), torch.cat(sampled)
    assert d.numel() >= 100 and lp.median() > -4  # enough tokens, a peaked policy
    if precision == "fp16":
        assert d.max() <= FP16_LOGP_MAX and d.mean() <= FP16_LOGP_MEAN
    else:
        assert d.max() <= FP32_LOGP_MAX


def grpo_config(tiny_model, suite, out, steps):
    return make_config("dynamic_mean", model=str(tiny_model), suite=str(suite), out=str(out), num_generations=3,
                       max_turns=2, max_new_tokens=6, max_total_tokens=4096, min_mixed_groups=1, max_group_tries=2,
                       groups_per_rollout=2, pool_size=6, steps=steps, eval_every=0, save_every=0,
                       reward="trainkit:coin_reward", learning_rate=5e-3, lora_rank=4, seed=0, tensorboard=False,
                       precision="fp16")


@pytest.mark.slow
def test_fp16_grpo_steps_and_resume_restores_the_scaler(tiny_model, train_suite, tmp_path, monkeypatch):
    """fp16 GRPO: two steps with finite losses, then a resume for a third equals three steps
    without stopping. The scale doubles after every step here (from 2^10, growth_interval=1), so
    a resume that did not restore the scaler would train its third step at another scale."""
    from safetensors.torch import load_file

    from fixrl.harness.cli import main
    from fixrl.train.grpo import run_grpo

    monkeypatch.setattr(MixedPrecision, "grad_scaler",
                        lambda self: torch.amp.GradScaler(self.device_type, enabled=self.scaled, init_scale=2.0 ** 10,
                                                      growth_interval=1))
    run_b = tmp_path / "b"
    run_grpo(grpo_config(tiny_model, train_suite, run_b, steps=2))
    rows = [json.loads(x) for x in (run_b / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        assert r["train/episodes"] >= 2 and r["train/skipped_steps"] == 0 and r["train/optimizer_steps"] == 1
        assert math.isfinite(r["loss/policy"]) and math.isfinite(r["grad_norm"]) and r["grad_norm"] > 0
    assert [r["train/loss_scale"] for r in rows] == [2.0 ** 11, 2.0 ** 12]
    assert json.loads((run_b / "config.json").read_text())["precision"] == "fp16"
    state = torch.load(run_b / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert state["scaler"]["scale"] == 2.0 ** 12
    assert main(["grpo", "--out", str(run_b), "--resume", "--steps", "3", "--quiet"]) == 0
    run_a = tmp_path / "a"
    run_grpo(grpo_config(tiny_model, train_suite, run_a, steps=3))
    rows_a = [json.loads(x) for x in (run_a / "metrics.jsonl").read_text().splitlines()]
    rows_b = [json.loads(x) for x in (run_b / "metrics.jsonl").read_text().splitlines()]

    def same(r):
        return {k: v for k, v in r.items() if not k.startswith("time/")}

    assert [same(r) for r in rows_b] == [same(r) for r in rows_a] and rows_a[2]["train/loss_scale"] == 2.0 ** 13
    wa, wb = load_file(str(run_a / "adapter" / "adapter_model.safetensors")), \
        load_file(str(run_b / "adapter" / "adapter_model.safetensors"))
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
