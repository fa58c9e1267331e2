"""The agent loop end to end on real local sandboxes: token-exact trajectories, masks, sampler
log-probs, malformed model output, budgets, sandbox failures, and template checks."""
from __future__ import annotations

import pytest
import torch

from fixrl.envs import EnvConfig
from fixrl.envs.types import ToolCall
from fixrl.harness.agent.chat import encode, parse_tool_calls, render, tool_choice_span
from fixrl.harness.agent.local_rollouts import LocalRollouts
from fixrl.harness.agent.loop import TemplateError
from fixrl.harness.agent.policies import Generation
from fixrl.harness.agent.trajectory import Trajectory
from fixrl.sandbox import SandboxPool

NEWLINE = 198


def check_mask_and_spans(traj: Trajectory, eot: int = 151645) -> None:
    """assistant_mask is 1 exactly on the sampled ids (the turn spans); each sampled turn
    that ended ends with <|im_end|>; log-probs, when kept, are non-zero only there."""
    n = len(traj.token_ids)
    assert len(traj.assistant_mask) == n
    in_span = [0] * n
    for a, b in traj.turn_spans:
        assert 0 < a < b <= n
        in_span[a:b] = [1] * (b - a)
    assert traj.assistant_mask == in_span
    if traj.sampler_logprobs:
        assert len(traj.sampler_logprobs) == n
        assert all(lp == 0.0 for lp, m in zip(traj.sampler_logprobs, traj.assistant_mask) if not m)
        assert all(lp < 0.0 for lp, m in zip(traj.sampler_logprobs, traj.assistant_mask) if m)
    # Every assistant turn is closed by <|im_end|> (sampled, or appended unmasked after a cut).
    for _a, b in traj.turn_spans:
        assert traj.token_ids[b - 1] == eot or (traj.token_ids[b] == eot and traj.assistant_mask[b] == 0)


def check_template_exact(tok, traj: Trajectory) -> None:
    """The trajectory is the chat template's rendering of its final conversation: its text
    decodes to the render, and every non-sampled stretch is the tokenisation of its text."""
    text = render(tok, traj.messages, traj.tools, add_generation_prompt=False)
    assert text.endswith("<|im_end|>\n")
    assert tok.decode(traj.token_ids) == text[:-1]   # the template's trailing "\n" comes with the next turn
    bounds = [0] + [x for span in traj.turn_spans for x in span] + [len(traj.token_ids)]
    for a, b in zip(bounds[::2], bounds[1::2]):
        gap = traj.token_ids[a:b]
        assert encode(tok, tok.decode(gap)) == gap


def test_oracle_trajectories_are_token_exact(tiny_suite, tiny_tokenizer):
    """Scripted (SFT) trajectories: re-tokenising the template's rendering of the final
    conversation gives exactly the trajectory's ids (plus the template's final newline)."""
    from fixrl.harness.agent.policies.scripted import ScriptedPolicy

    policy = ScriptedPolicy("oracle", tokenizer=tiny_tokenizer)
    seen = []
    with SandboxPool(3) as pool:
        trajs = LocalRollouts(tiny_suite, EnvConfig(rename=True), pool=pool).run(policy, tiny_suite.tasks, 1, 1, progress=seen.append)
    assert [t.task_id for t in trajs] == [t.id for t in tiny_suite.tasks]
    assert sorted(id(t) for t in seen) == sorted(id(t) for t in trajs)
    for g, traj in enumerate(trajs):
        assert traj.group == g and traj.info.sample == 0
        assert traj.info.outcome == "pass" and traj.reward == 1.0, traj.info
        assert traj.info.exit_status == "submitted"
        assert traj.info.renamed                       # renaming reached the conversation
        full = encode(tiny_tokenizer, render(tiny_tokenizer, traj.messages, traj.tools, add_generation_prompt=False))
        assert full == traj.token_ids + [NEWLINE]
        check_mask_and_spans(traj)
        assert traj.sampler_logprobs == []
        assistant = [m for m in traj.messages if m["role"] == "assistant"]
        assert len(assistant) == len(traj.turn_spans) == traj.info.turns
        for m in assistant:
            assert isinstance(parse_tool_calls(m["content"]), ToolCall)
        assert all(m["role"] == "tool" for m in traj.messages[2:] if m["role"] != "assistant")
        assert traj.tools and {t["function"]["name"] for t in traj.tools} >= {"read", "edit", "test", "submit"}
        Trajectory.from_dict(traj.to_dict())

    # SFT data that shows a read without teaching the choice to read: only the tokens through
    # the tool's name leave the loss, the arguments and every later turn stay in
    traj = trajs[0]
    (a, end), rest = traj.turn_spans[0], traj.turn_spans[1:]
    start, b = tool_choice_span(traj, tiny_tokenizer)
    assert start == a < b < end
    assert tiny_tokenizer.decode(traj.token_ids[a:b]).replace(" ", "").endswith('{"name":"read",')
    masked = traj.with_masked([(a, b)])
    assert sum(masked.assistant_mask[a:b]) == 0 and sum(masked.assistant_mask[b:end]) == end - b
    assert all(sum(masked.assistant_mask[s:e]) == e - s for s, e in rest)
    assert masked.num_policy_tokens == traj.num_policy_tokens - (b - a)
    assert masked.token_ids == traj.token_ids and traj.assistant_mask != masked.assistant_mask


def test_more_episodes_than_sandboxes(tiny_suite, tiny_tokenizer):
    """Episodes queue for the pool's sandboxes (finished ones make room); order and groups stay."""
    from fixrl.harness.agent.policies.scripted import ScriptedPolicy

    policy = ScriptedPolicy("oracle", tokenizer=tiny_tokenizer)
    tasks = tiny_suite.tasks[:2]
    with SandboxPool(2) as pool:
        trajs = LocalRollouts(tiny_suite, EnvConfig(), pool=pool).run(policy, tasks, 3, 0)
        assert pool.created <= 2
        # every hidden check ran in the pool's own check sandboxes, forked from pytest kept imported
        checks = pool._checks
        assert checks is not None and checks.created <= 2
        assert sum(sb.forks for _, sb in checks._idle) == len(tasks) * 3
    assert [(t.task_id, t.group, t.info.sample) for t in trajs] == \
        [(tasks[g].id, g, k) for g in range(2) for k in range(3)]
    assert all(t.info.outcome == "pass" for t in trajs)


@pytest.mark.slow
def test_tiny_model_episodes_batched(tiny_suite, tiny_policy):
    """The tiny checkpoint through HFPolicy, all episodes in lockstep: its (random) replies end
    as recorded malformed calls, never a crash; the ids are the template's rendering; the
    sampler log-probs are those a single forward pass over the whole trajectory gives."""
    pol = tiny_policy
    pol.temperature, pol.top_p, pol.greedy, pol.max_new_tokens = 0.8, 1.0, False, 12
    with SandboxPool(4) as pool:
        trajs = LocalRollouts(tiny_suite, EnvConfig(max_turns=3), pool=pool).run(pol, tiny_suite.tasks[:2], 2, 7)
    assert len(trajs) == 4
    for traj in trajs:
        assert traj.info.outcome == "fail"
        assert traj.info.exit_status in ("malformed", "out_of_turns")
        assert traj.info.turns == len(traj.turn_spans) == 3
        check_mask_and_spans(traj)
        check_template_exact(pol.tokenizer, traj)
        users = [m for m in traj.messages[2:] if m["role"] == "user"]
        assert users and all("Malformed tool call" in m["content"] for m in users)
        # One forward over the whole trajectory; the output head only where a sampled token is predicted.
        pos = [i for i, m in enumerate(traj.assistant_mask) if m]
        with torch.no_grad():
            hidden = pol.model.model(torch.tensor([traj.token_ids])).last_hidden_state[0]   # [T, H]
            logits = pol.model.lm_head(hidden[[i - 1 for i in pos]]).float() / 0.8          # [P, V]
        logp = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor([[traj.token_ids[i]] for i in pos]))
        expected = torch.tensor([traj.sampler_logprobs[i] for i in pos])
        assert torch.allclose(logp[:, 0], expected, atol=1e-4)


class CannedPolicy:
    """Writes given replies, as a model would have sampled them (text -> ids), to drive the
    real environment with specific malformed output."""

    name = "canned"

    def __init__(self, tokenizer, replies: list[tuple[str, bool]]):
        self.tokenizer = tokenizer
        self.replies = replies
        self.eot = tokenizer.convert_tokens_to_ids("<|im_end|>")

    def seed(self, seed):
        pass

    def start(self, task, env, seed):
        return iter(self.replies)

    def generate(self, requests):
        out = []
        for r in requests:
            text, stopped = next(r.state)
            ids = encode(self.tokenizer, text) + ([self.eot] if stopped else [])
            out.append(Generation(ids, [-1.0] * len(ids), stopped))
        return out


MALFORMED = [
    ('<tool_call>\n{"name": "read", "arguments": {"path": "calc.py"\n</tool_call>', True, "not valid JSON"),
    ('<tool_call>\n{"name": "delete_everything", "arguments": {}}\n</tool_call>', True, "unknown tool"),
    ('<tool_call>\n{"name": "read"}\n</tool_call>', True, 'no "arguments"'),
    ('<tool_call>\n{"name": "read", "arguments": {}}\n</tool_call>', True, "path"),
    ('<tool_call>\n{"name": "test", "arguments": {}}\n</tool_call><tool_call>\n'
     '{"name": "submit", "arguments": {}}\n</tool_call>', True, "only one call per turn"),
    ('<tool_call>\n{"name": "test", "arguments": {}}', True, "no closing"),
    ("", True, "empty"),
    ("I would like to read calc.py, it looks", False, "cut off"),
]


@pytest.mark.parametrize("reply,stopped,why", MALFORMED, ids=[m[2] for m in MALFORMED])
def test_malformed_model_output_is_an_observation(tiny_suite, tiny_tokenizer, reply, stopped, why):
    replies = [(reply, stopped), ('<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>', True)]
    policy = CannedPolicy(tiny_tokenizer, replies)
    with SandboxPool(1) as pool:
        (traj,) = LocalRollouts(tiny_suite, EnvConfig(max_turns=4), pool=pool).run(policy, tiny_suite.tasks[:1], 1, 0)
    assert traj.info.exit_status == "submitted" and traj.info.outcome == "fail"
    assert traj.info.turns == 2
    feedback = traj.messages[3]
    assert why in feedback["content"], feedback
    check_mask_and_spans(traj)
    check_template_exact(tiny_tokenizer, traj)
    if not stopped:   # the cut-off turn was closed with an unsampled <|im_end|>
        a, b = traj.turn_spans[0]
        assert traj.token_ids[b] == 151645 and traj.assistant_mask[b] == 0
    assert traj.info.cut_turns == ([] if stopped else [0])


def test_repeated_malformed_output_ends_the_episode(tiny_suite, tiny_tokenizer):
    policy = CannedPolicy(tiny_tokenizer, [("nonsense", True)] * 10)
    with SandboxPool(1) as pool:
        (traj,) = LocalRollouts(tiny_suite, EnvConfig(max_turns=8, max_malformed=3), pool=pool).run(policy, tiny_suite.tasks[:1], 1, 0)
    assert traj.info.exit_status == "malformed" and traj.info.malformed == 3
    assert traj.info.outcome == "fail" and len(traj.turn_spans) == 3


def test_token_budget_ends_as_out_of_tokens(tiny_suite, tiny_tokenizer):
    from fixrl.harness.agent.policies.scripted import ScriptedPolicy

    policy = ScriptedPolicy("oracle", tokenizer=tiny_tokenizer)
    with SandboxPool(1) as pool:
        (full,) = LocalRollouts(tiny_suite, EnvConfig(), pool=pool).run(policy, tiny_suite.tasks[:1], 1, 0)
        budget = full.turn_spans[1][0] + 10   # room for the first turn, not for the second
        (cut,) = LocalRollouts(tiny_suite, EnvConfig(), pool=pool, max_total_tokens=budget).run(policy, tiny_suite.tasks[:1], 1, 0)
    assert cut.info.exit_status == "out_of_tokens"
    assert cut.info.outcome == "fail"           # the check still ran on what the agent did
    assert len(cut.token_ids) <= budget
    assert cut.token_ids == full.token_ids[:len(cut.token_ids) - 1] + [151645]
    check_mask_and_spans(cut)


def test_sandbox_failure_marks_the_episode_error(tiny_suite, tiny_tokenizer):
    """A sandbox that dies mid-episode: outcome 'error' (not a fail), the pool replaces it,
    and the other episodes are unaffected."""
    from fixrl.harness.agent.policies.scripted import ScriptedPolicy

    class Saboteur(ScriptedPolicy):
        def start(self, task, env, seed):
            if task.id == tiny_suite.tasks[0].id:
                env.sb._sb.close()    # the real sandbox under the pool's lease
            return super().start(task, env, seed)

    policy = Saboteur("oracle", tokenizer=tiny_tokenizer)
    with SandboxPool(2) as pool:
        trajs = LocalRollouts(tiny_suite, EnvConfig(), pool=pool).run(policy, tiny_suite.tasks[:2], 1, 0)
        assert pool.replaced >= 1
    bad, good = trajs
    assert bad.errored and bad.info.exit_status == "error" and bad.info.error
    assert bad.reward == 0.0
    assert good.info.outcome == "pass"


def test_template_that_rewrites_history_fails_loudly(tiny_suite, tiny_model):
    """A Qwen3-style template that drops earlier assistant content is not append-only: the
    loop refuses to build a trajectory that would not be token-exact."""
    from transformers import AutoTokenizer

    from fixrl.harness.agent.policies.scripted import ScriptedPolicy

    tok = AutoTokenizer.from_pretrained(tiny_model)
    tok.chat_template = (
        "{%- for m in messages %}<|im_start|>{{ m.role }}\n"
        "{%- if m.role == 'assistant' and not loop.last %}(earlier reasoning dropped)"
        "{%- else %}{{ m.content }}{%- endif %}<|im_end|>\n{%- endfor %}"
        "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")
    tok.name_or_path = "qwen3-like"
    policy = ScriptedPolicy("oracle", tokenizer=tok)
    with SandboxPool(1) as pool, pytest.raises(TemplateError, match="qwen3-like.*not append-only"):
        LocalRollouts(tiny_suite, EnvConfig(), pool=pool).run(policy, tiny_suite.tasks[:1], 1)


def test_bad_arguments(tiny_suite, tiny_tokenizer):
    from fixrl.harness.agent.policies.scripted import ScriptedPolicy

    policy = ScriptedPolicy("oracle", tokenizer=tiny_tokenizer)
    with SandboxPool(1) as pool:
        with pytest.raises(ValueError, match="n must be"):
            LocalRollouts(tiny_suite, EnvConfig(), pool=pool).run(policy, tiny_suite.tasks, 0)
        with pytest.raises(ValueError, match="max_total_tokens"):
            LocalRollouts(tiny_suite, EnvConfig(), pool=pool, max_total_tokens=1).run(policy, tiny_suite.tasks, 1)


@pytest.mark.docker
def test_oracle_in_docker_sandboxes(docker_available, tiny_suite, tiny_tokenizer):
    """The same loop over hardened Docker sandboxes (tool calls and the hidden check)."""
    from fixrl.harness.agent.policies.scripted import ScriptedPolicy

    policy = ScriptedPolicy("oracle", tokenizer=tiny_tokenizer)
    with SandboxPool(2, backend="docker") as pool:
        trajs = LocalRollouts(tiny_suite, EnvConfig(), pool=pool).run(policy, tiny_suite.tasks[:2], 1, 0)
    for traj in trajs:
        assert traj.info.outcome == "pass", traj.info
        full = encode(tiny_tokenizer, render(tiny_tokenizer, traj.messages, traj.tools, add_generation_prompt=False))
        assert full == traj.token_ids + [NEWLINE]
