"""Policies: HFPolicy's batched generation and sampler log-probs on the tiny checkpoint, the
scripted policy's Hermes text, and load_policy's errors."""
from __future__ import annotations

import shutil

import pytest
import torch

from fixrl.harness.agent.chat import encode, parse_tool_calls, render
from fixrl.harness.agent.policies import GenRequest, load_policy
from fixrl.harness.agent.policies.vllm import VLLMPolicy


def _prompts(tok):
    a = encode(tok, render(tok, [{"role": "user", "content": "fix the bug"}]))
    b = encode(tok, render(tok, [{"role": "system", "content": "be brief"},
                                 {"role": "user", "content": "a much longer request " * 5}]))
    return a, b


def _recompute(model, prompt, sampled, temperature):
    """Log-probs of `sampled` after `prompt` from one plain, unpadded forward pass."""
    ids = torch.tensor([prompt + sampled])
    with torch.no_grad():
        logits = model(ids).logits[0].float()                          # [T, V]
    logp = torch.log_softmax(logits / temperature, dim=-1)
    n = len(prompt)
    return [logp[n - 1 + i, t].item() for i, t in enumerate(sampled)]


def test_batched_generation_records_sampler_log_probs(tiny_policy):
    """Rows of different lengths (left padding) in one generate: every sampled token's recorded
    log-prob equals the temperature-scaled log-prob of an unpadded forward pass."""
    pol = tiny_policy
    pol.temperature, pol.top_p, pol.greedy = 0.7, 1.0, False
    a, b = _prompts(pol.tokenizer)
    pol.seed(123)
    threads = torch.get_num_threads()
    gens = pol.generate([GenRequest(a, 12), GenRequest(b, 5), GenRequest(a, 12)])
    assert torch.get_num_threads() == threads     # generation's own thread count is restored
    assert [len(g.token_ids) for g in gens] == [12, 5, 12]   # a random model never ends its turn
    assert not any(g.stopped for g in gens)
    assert gens[0].token_ids != gens[2].token_ids              # rows sample independently
    for prompt, g in zip([a, b, a], gens):
        ref = _recompute(pol.model, prompt, g.token_ids, 0.7)
        assert max(abs(x - y) for x, y in zip(ref, g.logprobs)) < 1e-4
    pol.seed(123)
    again = pol.generate([GenRequest(a, 12), GenRequest(b, 5), GenRequest(a, 12)])
    assert [g.token_ids for g in again] == [g.token_ids for g in gens]   # reproducible


def test_cache_reuse_across_turns_changes_nothing_but_the_work(tiny_policy):
    """Episodes of different lengths over three turns (each prompt extended by the reply and a
    tool turn of its own length, as the agent loop does): with each episode's cache reused,
    greedy replies and their log-probs are those of recomputing every prompt from scratch,
    and later turns run only their new tokens."""
    from fixrl.harness.agent.policies.hf import HFPolicy

    pol = tiny_policy
    fresh = HFPolicy(model=pol.model, tokenizer=pol.tokenizer, greedy=True, max_new_tokens=8, reuse_cache=False)
    pol.greedy, pol.max_new_tokens = True, 8
    a, b = _prompts(pol.tokenizer)
    prompts = [a, b, a[:-3]]
    states = [pol.start(None, None, 0) for _ in prompts]
    assert fresh.start(None, None, 0) is None
    reused = pol.reused_tokens
    for turn in range(3):
        got = pol.generate([GenRequest(p, 8, state=st) for p, st in zip(prompts, states)])
        want = fresh.generate([GenRequest(p, 8) for p in prompts])
        for g, w in zip(got, want):
            assert g.token_ids == w.token_ids
            assert max(abs(x - y) for x, y in zip(g.logprobs, w.logprobs)) < 1e-4
        prompts = [p + g.token_ids + list(range(1000, 1000 + 3 * i + 2)) for i, (p, g) in enumerate(zip(prompts, got))]
        if turn == 0:
            assert pol.reused_tokens == reused
    # turns 2 and 3 ran at most the longest new part of a row, not the whole prompts
    assert pol.reused_tokens - reused > 0.8 * sum(len(p) for p in prompts)
    # a prompt that does not extend the cached ids reuses only their common prefix
    st = states[0]
    assert st.usable(st.ids[:5] + [7, 7, 7]) == 5 and st.usable(st.ids + [1]) == len(st.ids)


def test_top_p_log_probs_are_of_the_truncated_distribution(tiny_policy):
    pol = tiny_policy
    pol.temperature, pol.top_p, pol.greedy = 1.0, 0.5, False
    try:
        a, _ = _prompts(pol.tokenizer)
        pol.seed(0)
        g = pol.generate([GenRequest(a, 6)])[0]
        full = _recompute(pol.model, a, g.token_ids, 1.0)
        # Renormalised over the nucleus: each sampled token is more likely than under the full softmax.
        assert all(lp > f + 0.1 for lp, f in zip(g.logprobs, full))
    finally:
        pol.top_p = 1.0


def test_greedy_picks_the_argmax(tiny_policy):
    pol = tiny_policy
    pol.temperature, pol.greedy = 1.0, True
    try:
        a, _ = _prompts(pol.tokenizer)
        g = pol.generate([GenRequest(a, 4)])[0]
        ids = torch.tensor([a + g.token_ids])
        with torch.no_grad():
            logits = pol.model(ids).logits[0]
        assert logits[len(a) - 1: len(a) + 3].argmax(-1).tolist() == g.token_ids
    finally:
        pol.greedy = False


def test_stops_at_end_of_turn(tiny_model):
    """A turn ends at <|im_end|>, which is part of the sampled ids: made certain here by
    pointing the (untied) output row of <|im_end|> along the prompt's last hidden state."""
    from fixrl.harness.agent.policies.hf import HFPolicy

    pol = HFPolicy(tiny_model, max_new_tokens=8)
    a, _ = _prompts(pol.tokenizer)
    head = pol.model.get_output_embeddings()
    head.weight = torch.nn.Parameter(head.weight.detach().clone())
    with torch.no_grad():
        h = pol.model.model(torch.tensor([a])).last_hidden_state[0, -1]
        head.weight[151645] = h * (1000.0 / h.dot(h))
    g = pol.generate([GenRequest(a, 8), GenRequest(a, 8)])
    assert [x.token_ids for x in g] == [[151645], [151645]]
    assert all(x.stopped for x in g) and all(len(x.logprobs) == 1 for x in g)


def test_adapter_loads_with_peft(tiny_model, tmp_path):
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny_model)
    peft = get_peft_model(base, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"]))
    peft.save_pretrained(tmp_path / "adapter")
    pol = load_policy(model=tiny_model, adapter=tmp_path / "adapter", max_new_tokens=3)
    assert isinstance(pol.model, PeftModel)
    assert pol.name.endswith("+adapter")
    a, _ = _prompts(pol.tokenizer)
    assert len(pol.generate([GenRequest(a, 3)])[0].token_ids) == 3


def test_load_policy_errors(tiny_model, tmp_path):
    with pytest.raises(FileNotFoundError, match="adapter directory .* does not exist"):
        load_policy(model=tiny_model, adapter=tmp_path / "missing")
    (tmp_path / "not-adapter").mkdir()
    with pytest.raises(FileNotFoundError, match="adapter_config.json"):
        load_policy(model=tiny_model, adapter=tmp_path / "not-adapter")
    no_tok = tmp_path / "no-tokenizer"
    no_tok.mkdir()
    for f in ("config.json", "model.safetensors", "generation_config.json"):
        shutil.copy(tiny_model / f, no_tok / f)
    with pytest.raises(FileNotFoundError, match="has no tokenizer"):
        load_policy(model=no_tok)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_policy(model=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="unknown policy 'greedy-oracle'"):
        load_policy(policy="greedy-oracle")
    with pytest.raises(ValueError, match="exactly one"):
        load_policy()
    with pytest.raises(ValueError, match="exactly one"):
        load_policy(model=tiny_model, policy="oracle")
    with pytest.raises(ValueError, match="adapter"):
        load_policy(policy="oracle", adapter=tmp_path)
    with pytest.raises(ValueError, match="temperature"):
        load_policy(model=tiny_model, temperature=-1)


@pytest.mark.parametrize("bad", [{"temperature": -1}, {"top_p": 0}, {"top_p": 1.5}, {"max_new_tokens": 0}],
                         ids=lambda bad: "-".join(f"{k}={v}" for k, v in bad.items()))
def test_both_engines_refuse_the_same_sampling_settings(tiny_model, bad):
    """One check for every model policy: the setting is named, before a model or server is touched."""
    name = next(iter(bad))
    with pytest.raises(ValueError, match=f"{name} must be"):
        load_policy(model=tiny_model, **bad)
    with pytest.raises(ValueError, match=f"{name} must be"):
        VLLMPolicy(tiny_model, url="http://127.0.0.1:9", **bad)


def test_scripted_policy_writes_hermes_text(tiny_tokenizer):
    from fixrl.envs.types import ToolCall
    from fixrl.harness.agent.policies.scripted import ScriptedPolicy

    class Plan:
        def __init__(self):
            self.seen = []

        def next_call(self, observation):
            self.seen.append(observation)
            return ToolCall("edit", {"path": "calc.py", "old": "x + 2", "new": "x + 1"})

    pol = ScriptedPolicy("oracle", tokenizer=tiny_tokenizer)
    plan = Plan()
    g = pol.generate([GenRequest([1, 2], 1000, state=plan, observation="1: def f()")])[0]
    assert plan.seen == ["1: def f()"]
    assert g.stopped and g.logprobs is None
    assert g.token_ids[0] == 151657 and g.token_ids[-2:] == [151658, 151645]
    text = tiny_tokenizer.decode(g.token_ids[:-1])
    assert parse_tool_calls(text) == ToolCall("edit", {"path": "calc.py", "old": "x + 2", "new": "x + 1"})
    cut = pol.generate([GenRequest([1, 2], 5, state=plan)])[0]
    assert len(cut.token_ids) == 5 and not cut.stopped


def test_sampler_draws_from_the_distribution_it_records():
    """The inverse-CDF sampler: frequencies follow the probabilities, filtered (-inf) tokens
    are never drawn, and the recorded log-prob is that of the drawn token."""
    from fixrl.harness.agent.policies.hf import _Sampler

    probs = torch.tensor([0.5, 0.3, 0.2, 0.0])
    scores = probs.log().expand(20000, 4).clone()                     # [B, V]
    gen = torch.Generator().manual_seed(0)
    sampler = _Sampler(greedy=False, generator=gen)
    out = sampler(None, scores.clone())
    chosen = out.argmax(dim=-1)                                        # what generate() picks
    freq = torch.bincount(chosen, minlength=4).float() / len(chosen)
    assert torch.allclose(freq, probs, atol=0.015) and freq[3] == 0
    assert torch.allclose(sampler.steps[0], probs.log()[chosen], atol=1e-6)
    greedy = _Sampler(greedy=True, generator=gen)
    assert (greedy(None, scores[:3].clone()).argmax(-1) == 0).all()


def test_inverse_cdf_across_blocks():
    from fixrl.harness.agent.policies.hf import _inverse_cdf

    w = torch.zeros(3, 1000)
    w[:, [3, 300, 999]] = torch.tensor([0.2, 0.5, 0.3])
    targets = torch.tensor([[0.1], [0.69], [0.71]])
    assert _inverse_cdf(w, targets).tolist() == [[3], [300], [999]]
    u = torch.rand(30000, 1, generator=torch.Generator().manual_seed(1))
    picks = _inverse_cdf(w[:1].expand(30000, 1000).contiguous(), u)[:, 0]
    freq = torch.bincount(picks, minlength=1000)[[3, 300, 999]].float() / 30000
    assert torch.allclose(freq, torch.tensor([0.2, 0.5, 0.3]), atol=0.015)
    assert set(picks.tolist()) == {3, 300, 999}


def test_free_cores_leaves_busy_cores_to_their_processes():
    """With a spinning process on every core, generation takes one thread, not all of them."""
    import os
    import subprocess
    import sys
    import time

    from fixrl.harness.agent.policies.hf import free_cores

    cores = len(os.sched_getaffinity(0))
    assert 1 <= free_cores() <= cores
    spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]
    try:
        time.sleep(0.5)
        assert free_cores() == 1
    finally:
        for p in spin:
            p.kill()
            p.wait()
