"""ScriptedPolicy: the environment's scripted plans (oracle, blind, random) as a policy.

Each plan decides the next tool call from the last observation (`envs.scripted`); this policy
writes that call as the Hermes text a model would write (`harness.chat.format_tool_call`),
tokenises it and ends the turn with `<|im_end|>`. The agent loop then decodes and parses it
like any model's output, so a scripted trajectory is exactly what a model would have to
produce: SFT data with the assistant mask on these tokens.

Its text tokenises the same way inside the full conversation as alone: it starts with the
added token `<tool_call>`, so no BPE merge crosses into the template's `assistant\\n` before it.
"""
from __future__ import annotations

import random
from typing import Any, Callable

from fixrl.envs import scripted
from fixrl.harness.agent.chat import encode, end_of_turn_id, format_tool_call
from fixrl.harness.agent.policies import SCRIPTED_POLICIES, Generation, GenRequest
from fixrl.harness.model.tiny import qwen25_tokenizer
from fixrl.tasks import Task

PlanFactory = Callable[[Any, Any, random.Random], Any]
"""(task, env view, rng) -> a plan with `next_call(observation) -> ToolCall` (`envs.scripted`)."""


class ScriptedPolicy:
    def __init__(self, kind: str, tokenizer: Any = None, seed: int = 0, plan: PlanFactory | None = None) -> None:
        """kind: a built-in plan (oracle | blind | random), or the name of `plan`, a recipe's own
        plan factory."""
        if plan is None and kind not in SCRIPTED_POLICIES:
            raise ValueError(f"unknown scripted policy {kind!r}: choose one of {', '.join(SCRIPTED_POLICIES)}")
        if tokenizer is None:
            tokenizer = qwen25_tokenizer()

        self.kind = kind
        self.name = kind
        self.tokenizer = tokenizer
        self.eot_id = end_of_turn_id(tokenizer)
        self._seed = seed
        self.plan = plan
        self.temperature = None

    def seed(self, seed: int) -> None:
        self._seed = seed

    def start(self, task: Task, env: Any, seed: int) -> Any:
        # The episode's seed mixed with the policy's own, so two scripted runs with different
        # policy seeds differ while each stays reproducible.
        rng = random.Random(hash((self._seed, seed)) & 0xFFFFFFFF)
        if self.plan is not None:
            return self.plan(task, env, rng)
        if self.kind == "oracle":
            return scripted.oracle_plan(task, env)
        if self.kind == "blind":
            return scripted.blind_plan(task, env, rng)
        return scripted.random_plan(task, env, rng)

    def generate(self, requests: list[GenRequest]) -> list[Generation]:
        out = []
        for r in requests:
            call = r.state.next_call(r.observation)
            ids = encode(self.tokenizer, format_tool_call(call)) + [self.eot_id]
            stopped = len(ids) <= r.max_new_tokens
            # A scripted turn longer than the budget is cut like a model's would be.
            out.append(Generation(token_ids=ids[: r.max_new_tokens], logprobs=None, stopped=stopped))
        return out
