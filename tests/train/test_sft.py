"""SFT data: chat-messages rendering and masks (against the agent loop's own token-exact
trajectories), trajectory files used as they are, bad input; and one SFT epoch through the CLI
on the tiny checkpoint that changes the adapter's weights."""
from __future__ import annotations

import gzip
import json

import pytest

from fixrl.train.sft import DataError, load_examples, lr_factor, render_chat


@pytest.fixture(scope="module")
def tok(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


TOOLS = [{"type": "function", "function": {"name": "read", "description": "Read a file",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                          "required": ["path"]}}}]


def openai_chat():
    return [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix add()."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a.py\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "def add(a, b):\n    return a - b"},
            {"role": "assistant", "content": "The bug is the minus sign."}]


def test_lr_factor_warms_up_then_decays():
    assert [lr_factor(s, 10, 2, "linear") for s in (0, 1)] == [0.5, 1.0]  # warm-up
    assert lr_factor(2, 10, 2, "linear") == 1.0 and lr_factor(6, 10, 2, "linear") == 0.5
    assert 0 < lr_factor(9, 10, 2, "linear") < 0.2                        # near 0 at the end
    assert lr_factor(6, 10, 2, "cosine") == pytest.approx(0.5) and lr_factor(9, 10, 0, "constant") == 1.0


def test_chat_mask_covers_assistant_turns_and_im_end(tok):
    ids, mask = render_chat(tok, openai_chat(), TOOLS, "x")
    assert len(ids) == len(mask)
    learned = tok.decode([i for i, m in zip(ids, mask) if m])
    # JSON-string arguments are rendered as an object, as a model writes them
    assert learned == ('<tool_call>\n{"name": "read", "arguments": {"path": "a.py"}}\n</tool_call><|im_end|>'
                       'The bug is the minus sign.<|im_end|>')
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    assert sum(1 for i, m in zip(ids, mask) if m and i == im_end) == 2
    # nothing of the system, user or tool turns, nor the template's "assistant\n" header
    assert "You fix bugs" not in learned and "return a - b" not in learned and not learned.startswith("assistant")


def test_chat_path_equals_agent_loop_trajectory(tok, train_suite):
    """Rendering a scripted episode's messages gives exactly the ids and mask the agent loop
    recorded: the two SFT formats teach the same tokens."""
    from fixrl.envs import EnvConfig
    from fixrl.harness.agent.local_rollouts import LocalRollouts
    from fixrl.harness.agent.policies import ScriptedPolicy
    from fixrl.sandbox import SandboxPool
    from fixrl.tasks import load_suite

    suite = load_suite(train_suite)
    with SandboxPool(1, backend="local") as pool:
        [traj] = LocalRollouts(suite, EnvConfig(max_turns=4), pool=pool).run(ScriptedPolicy("oracle", tokenizer=tok), suite.split("train")[:1], 1, 0)
    ids, mask = render_chat(tok, traj.messages, traj.tools, "traj")
    n = len(traj.token_ids)
    # the trajectory ends after the last assistant turn's <|im_end|>; the full render adds "\n"
    assert ids[:n] == traj.token_ids and mask[:n] == traj.assistant_mask and not any(mask[n:])


def test_load_examples_formats_and_errors(tok, tmp_path):
    from fixrl.harness.agent.trajectory import Trajectory

    t_pass = Trajectory(task_id="a", token_ids=[10, 11, 12, 13], assistant_mask=[0, 0, 1, 1], info={"outcome": "pass"})
    t_fail = Trajectory(task_id="b", token_ids=[10, 11, 12], assistant_mask=[0, 1, 1], info={"outcome": "fail"})
    f = tmp_path / "trajs.jsonl.gz"
    with gzip.open(f, "wt") as fh:
        for t in (t_pass, t_fail):
            fh.write(json.dumps(t.to_dict()) + "\n")
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"messages": openai_chat(), "tools": TOOLS, "reward": 1.0}) + "\n\n")
    ex, counts = load_examples([f, chat], tok)
    assert [e.token_ids for e in ex[:2]] == [t_pass.token_ids, t_fail.token_ids]  # never re-tokenised
    assert ex[0].assistant_mask == [0, 0, 1, 1] and counts["kept"] == 3
    ex, counts = load_examples([f, chat], tok, passing_only=True)
    assert len(ex) == 2 and counts["dropped_failing"] == 1
    ex, counts = load_examples([f], tok, max_length=3)
    assert len(ex) == 1 and counts["dropped_too_long"] == 1

    def bad(text, match, **kw):
        p = tmp_path / "bad.jsonl"
        p.write_text(text)
        with pytest.raises(DataError, match=match):
            load_examples([p], tok, **kw)

    bad("{not json\n", r"bad.jsonl:1: not JSON")
    bad('{"text": "hi"}\n', "neither a fixrl trajectory")
    bad('{"token_ids": [1, 2], "assistant_mask": [1]}\n', "same length")
    bad('{"token_ids": [1, 99999999], "assistant_mask": [0, 1]}\n', "vocabulary")
    bad('{"messages": [{"role": "user", "content": "hi"}]}\n', "no assistant message")
    bad(json.dumps({"messages": openai_chat()}) + "\n", "--passing-only needs", passing_only=True)
    bad(json.dumps({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [
        {"type": "function", "function": {"name": "read", "arguments": "{oops"}}]}]}) + "\n", "not valid JSON")
    with pytest.raises(DataError, match="does not exist"):
        load_examples([tmp_path / "missing.jsonl"], tok)


@pytest.mark.slow
def test_sft_epoch_changes_adapter(tiny_model, tmp_path, train_suite, tok):
    """One epoch via `fixrl sft` on scripted demonstrations (oracle passes, blind mostly fails),
    --passing-only: a standard peft adapter whose weights moved, and a falling loss record."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from fixrl.envs import EnvConfig
    from fixrl.harness.agent.local_rollouts import LocalRollouts
    from fixrl.harness.agent.policies import ScriptedPolicy
    from fixrl.harness.cli import main
    from fixrl.sandbox import SandboxPool
    from fixrl.tasks import load_suite

    suite = load_suite(train_suite)
    data = tmp_path / "demos.jsonl"
    with SandboxPool(3, backend="local") as pool:
        trajs = LocalRollouts(suite, EnvConfig(max_turns=4), pool=pool).run(ScriptedPolicy("oracle", tokenizer=tok), suite.split("train"), 1, 0)
    failing = dict(trajs[0].to_dict(), info=dict(trajs[0].info.to_dict(), outcome="fail"))
    data.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in trajs) + json.dumps(failing) + "\n")
    out = tmp_path / "adapter"
    rc = main(["sft", "--model", str(tiny_model), "--data", str(data), "--out", str(out), "--epochs", "2",
               "--batch-size", "2", "--lr", "5e-3", "--lora-rank", "4", "--passing-only", "--quiet", "--json"])
    assert rc == 0
    assert (out / "adapter_config.json").is_file() and (out / "adapter_model.safetensors").is_file()
    rows = [json.loads(x) for x in (out / "sft_metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and rows[-1]["loss"] < rows[0]["loss"]
    assert [r["lr"] for r in rows] == sorted((r["lr"] for r in rows), reverse=True)  # linear decay
    assert rows[-1]["lr"] < rows[0]["lr"]
    saved = json.loads((out / "sft_config.json").read_text())["summary"]
    assert saved["counts"]["dropped_failing"] == 1 and saved["examples"] == 3
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model), str(out))
    lora_b = [p for n, p in model.named_parameters() if "lora_B" in n]
    assert lora_b and all(float(p.abs().sum()) > 0 for p in lora_b)  # B starts at zero
    # bad input is a clear error (exit 2), not a traceback
    assert main(["sft", "--model", str(tmp_path / "nope"), "--data", str(data), "--out", str(tmp_path / "o")]) == 2
    assert main(["sft", "--model", str(tiny_model), "--data", str(tmp_path / "none.jsonl"),
                 "--out", str(tmp_path / "o"), "--quiet"]) == 2


@pytest.mark.slow
def test_sft_full_finetune_writes_a_checkpoint(tiny_model, tmp_path, tok):
    """--full trains every weight and saves a complete checkpoint that loads like the base."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from fixrl.harness.cli import main

    data = tmp_path / "chat.jsonl"
    data.write_text(json.dumps({"messages": openai_chat(), "tools": TOOLS}) + "\n")
    out = tmp_path / "full"
    assert main(["sft", "--model", str(tiny_model), "--data", str(data), "--out", str(out), "--full",
                 "--lr", "1e-3", "--quiet"]) == 0
    AutoModelForCausalLM.from_pretrained(out)  # loads as a plain model
    assert (out / "tokenizer_config.json").is_file() and not (out / "adapter_config.json").exists()
    before, after = load_file(str(tiny_model / "model.safetensors")), load_file(str(out / "model.safetensors"))
    changed = [k for k in before if k in after and not torch.equal(before[k], after[k])]
    assert changed
    # --full cannot start from an adapter
    assert main(["sft", "--model", str(tiny_model), "--data", str(data), "--out", str(tmp_path / "x"), "--full",
                 "--adapter", str(tmp_path), "--quiet"]) == 2
