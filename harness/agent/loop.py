"""The agent loop: token-in-token-out episodes, all live episodes advancing in lockstep.

Per turn, every live episode's conversation (token ids) goes into ONE batched
`policy.generate`; each reply is decoded and parsed (`harness.agent.chat.parse_tool_calls`)
here, in the caller's thread, and its tool call goes to the environment side (an `EnvSide`:
threads over a local sandbox pool, or actors on a Ray cluster), where the tool calls of all
episodes run at once. Finished episodes drop out; their hidden checks run on the environment
side while the others keep generating, and new episodes take their places (continuous
batching). Only observations and episode records come back, so where the environment runs
does not change a token of the trajectory.

The trajectory holds exactly the ids the policy saw and sampled, appended and never
re-tokenised:

    prompt ids | turn 1 sampled ids ... <|im_end|> | tool turn ids | turn 2 sampled ids ... | ...

- Prompt: the chat template's rendering of the env's first messages with the tool list and the
  generation prompt, tokenised once.
- Assistant turn: the sampled ids, through the end-of-turn token `<|im_end|>`, which the policy
  sampled and is trained to emit (assistant_mask 1, sampler log-prob kept).
- A reply cut at max_new_tokens has no `<|im_end|>`: the loop appends one with mask 0 (the
  model did not sample it, so it is not trained on) so the conversation stays in the template's
  form, and the env gets a Malformed "cut off" observation.
- Tool turn: the template's rendering of the conversation with the new message minus its
  rendering without it (the text delta: `\\n<|im_start|>user\\n<tool_response>...<|im_end|>\\n
  <|im_start|>assistant\\n`), tokenised. Every delta starts right after the special token
  `<|im_end|>`, so its tokens are those of the same text inside the full conversation.
- Append-only check: each render must extend the previous text exactly. A template that rewrites
  earlier turns (Qwen3's drops earlier `<think>` blocks) fails loudly with TemplateError naming
  it: its trajectories could not be token-exact.

Parsed tool calls come back as `tool` messages (Qwen renders them as `<tool_response>` in a user
turn); a Malformed reply's feedback comes back as a plain `user` message.

Per-episode token budget (`max_total_tokens`): a turn may take at most the budget left (minus
one for the end-of-turn token); an episode that reaches it ends as "out_of_tokens". A tool turn
can take an episode past the budget by at most one observation (capped by EnvConfig.obs_max_chars).

Sandbox failures (SandboxError) end the episode with outcome "error", never a score of 0; every
other exception is a bug and propagates.
"""
from __future__ import annotations

import dataclasses
import logging
import zlib
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, Callable, Sequence

from fixrl.envs.types import EpisodeInfo, Malformed
from fixrl.harness.agent.chat import END_OF_TURN, encode, end_of_turn_id, parse_tool_calls, render
from fixrl.harness.agent.envside import EnvSide, Started
from fixrl.harness.agent.policies import Generation, GenRequest, Policy
from fixrl.harness.agent.trajectory import Trajectory
from fixrl.sandbox import SandboxError
from fixrl.tasks import Task

log = logging.getLogger(__name__)


class TemplateError(RuntimeError):
    """The chat template is not append-only: rendering a longer conversation changed the text
    of the shorter one, so the trajectory's ids could not stay exact."""


def episode_seed(seed: int, task_id: str, sample: int) -> int:
    """The seed of episode `sample` of `task_id`: independent of the task's position in the list,
    so two policies evaluated with the same seed see the same per-episode renaming."""
    return zlib.crc32(f"{seed}:{task_id}:{sample}".encode()) & 0x7FFFFFFF


def _template_name(tokenizer: Any) -> str:
    return f"the chat template of {getattr(tokenizer, 'name_or_path', '') or type(tokenizer).__name__}"


@dataclasses.dataclass
class _Episode:
    index: int
    group: int
    task: Task
    sample: int
    seed: int
    view: Any = None
    """The environment as the policy may look at it (`Started.view`)."""
    state: Any = None
    traj: Trajectory | None = None
    text: str = ""
    """The rendered text of traj.token_ids."""
    observation: str | None = None
    phase: str = "starting"   # starting | ready | stepping | finishing | done
    future: Future | None = None
    last_malformed: bool = False
    cut_turns: list[int] = dataclasses.field(default_factory=list)


def _episodes(tasks: Sequence[Task], n: int, seed: int) -> list[_Episode]:
    """The run's episodes in result order (task by task, `n` samples each) with their seeds: one
    list for the lockstep and the asynchronous loop, so both keep the same order and seeds."""
    return [_Episode(index=i, group=g, task=task, sample=k, seed=episode_seed(seed, task.id, k))
            for i, (g, task, k) in enumerate((g, t, k) for g, t in enumerate(tasks) for k in range(n))]


class _Loop:
    """The driver's side of every episode: prompts, replies and tool turns as token ids. Runs
    in the caller's thread; the environment side (sandboxes, tools, checks) is the EnvSide's."""

    def __init__(self, policy: Policy, max_total_tokens: int | None) -> None:
        self.policy = policy
        self.tok = policy.tokenizer
        self.eot = end_of_turn_id(self.tok)
        # A server's context length bounds an episode like a token budget (it ends out_of_tokens,
        # rather than the server refusing the request and the run failing).
        context = getattr(policy, "max_context", None)
        self.budget = min(max_total_tokens or context, context) if context else max_total_tokens

    def begin(self, ep: _Episode, started: Started) -> None:
        messages, tools = started.messages, started.tools
        ep.view = started.view
        ep.state = self.policy.start(ep.task, started.view, ep.seed)
        text = render(self.tok, messages, tools, add_generation_prompt=True)
        ids = encode(self.tok, text)
        ep.traj = Trajectory(task_id=ep.task.id, token_ids=ids, assistant_mask=[0] * len(ids),
                             sampler_logprobs=[], messages=[dict(m) for m in messages],
                             tools=list(tools or []), group=ep.group)
        ep.text = text
        ep.phase = "ready"

    def request(self, ep: _Episode) -> GenRequest | None:
        """The episode's next generation request, or None when its token budget is spent."""
        limit = getattr(self.policy, "max_new_tokens", None) or 1 << 30
        if self.budget is not None:
            left = self.budget - len(ep.traj.token_ids) - 1   # room for an appended <|im_end|>
            if left < 1:
                return None
            limit = min(limit, left)
        return GenRequest(prompt_ids=ep.traj.token_ids, max_new_tokens=limit, state=ep.state,
                          observation=ep.observation)

    def record_reply(self, ep: _Episode, gen: Generation, limit: int) -> Any:
        """Append the sampled turn; returns the parsed call, or None when the budget cut it."""
        t = ep.traj
        ids = list(gen.token_ids)
        sampled_eot = gen.stopped and bool(ids) and ids[-1] == self.eot
        content_ids = ids[:-1] if sampled_eot else ids
        reply = self.tok.decode(content_ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        start = len(t.token_ids)
        t.token_ids.extend(ids)
        t.assistant_mask.extend([1] * len(ids))
        if gen.logprobs is not None:
            if len(gen.logprobs) != len(ids):
                raise RuntimeError(f"policy returned {len(gen.logprobs)} log-probs for {len(ids)} tokens")
            if len(t.sampler_logprobs) < start:  # first sampled turn: zeros for the prompt
                t.sampler_logprobs.extend([0.0] * (start - len(t.sampler_logprobs)))
            t.sampler_logprobs.extend(float(x) for x in gen.logprobs)
        t.turn_spans.append((start, len(t.token_ids)))
        version = getattr(gen, "version", None)
        if version is not None and version not in t.policy_versions:
            t.policy_versions.append(version)
        if not sampled_eot:
            ep.cut_turns.append(len(t.turn_spans) - 1)
            # Cut off: close the turn so the conversation stays in the template's form; the
            # model did not sample this token, so it carries no mask and no log-prob.
            t.token_ids.append(self.eot)
            t.assistant_mask.append(0)
            if t.sampler_logprobs:
                t.sampler_logprobs.append(0.0)
        t.messages.append({"role": "assistant", "content": reply})
        ep.text = ep.text + reply + END_OF_TURN
        rendered = render(self.tok, t.messages, t.tools, add_generation_prompt=False)
        if not rendered.startswith(ep.text):
            raise TemplateError(
                f"{_template_name(self.tok)} is not append-only: rendering the conversation after "
                f"assistant turn {len(t.turn_spans)} does not extend the text the model was given "
                f"(first difference at character {_first_diff(rendered, ep.text)}). fixrl needs an "
                "append-only template (Qwen2.5's is) to keep trajectories token-exact.")
        if not sampled_eot and (self.budget is not None and len(ids) >= limit
                                and limit < (getattr(self.policy, "max_new_tokens", None) or 1 << 30)):
            return None  # cut by the episode's token budget, not by the per-turn limit
        return parse_tool_calls(reply, truncated=not sampled_eot)

    def record_observation(self, ep: _Episode, observation: str, malformed: bool) -> None:
        t = ep.traj
        t.messages.append({"role": "user" if malformed else "tool", "content": observation})
        new_text = render(self.tok, t.messages, t.tools, add_generation_prompt=True)
        if not new_text.startswith(ep.text):
            raise TemplateError(
                f"{_template_name(self.tok)} is not append-only: adding tool turn {len(t.turn_spans)} "
                f"changed the text before it (first difference at character {_first_diff(new_text, ep.text)}). "
                "fixrl needs an append-only template (Qwen2.5's is) to keep trajectories token-exact.")
        delta = encode(self.tok, new_text[len(ep.text):])
        t.token_ids.extend(delta)
        t.assistant_mask.extend([0] * len(delta))
        if t.sampler_logprobs:
            t.sampler_logprobs.extend([0.0] * len(delta))
        ep.text = new_text
        ep.observation = observation


def _first_diff(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _lockstep_turn(loop: _Loop, env: EnvSide, active: list[_Episode]) -> None:
    """Generate the next turn of every ready episode in one batched call and send each reply's
    tool call to the environment side."""
    requests: list[tuple[_Episode, GenRequest]] = []
    for ep in [e for e in active if e.phase == "ready"]:
        req = loop.request(ep)
        if req is None:
            ep.phase, ep.future = "finishing", env.finish(ep.index, "out_of_tokens")
        else:
            requests.append((ep, req))
    if not requests:
        return
    gens = loop.policy.generate([r for _, r in requests])
    if len(gens) != len(requests):
        raise RuntimeError(f"policy returned {len(gens)} turns for {len(requests)} requests")
    for (ep, req), gen in zip(requests, gens):
        call = loop.record_reply(ep, gen, req.max_new_tokens)
        if call is None:
            ep.phase, ep.future = "finishing", env.finish(ep.index, "out_of_tokens")
        else:
            ep.last_malformed = isinstance(call, Malformed)
            ep.phase, ep.future = "stepping", env.step(ep.index, call)


def _collect_tool_turns(loop: _Loop, env: EnvSide, active: list[_Episode],
                        fail: Callable[[_Episode, BaseException, str], None]) -> None:
    """Wait for every start and tool call in flight (not for checks) and record what came back."""
    busy = [ep for ep in active if ep.phase in ("starting", "stepping")]
    wait([ep.future for ep in busy])
    for ep in busy:
        try:
            result = ep.future.result()
        except SandboxError as e:
            fail(ep, e, "start-up" if ep.phase == "starting" else "a tool call")
            continue
        if ep.phase == "starting":
            loop.begin(ep, result)
        elif result.done:
            ep.phase, ep.future = "finishing", env.finish(ep.index, None)
        else:
            ep.phase = "ready"
            loop.record_observation(ep, result.observation, ep.last_malformed)



def _finish(ep: _Episode, reward: float, info: EpisodeInfo, active: list[_Episode],
            results: dict[int, Trajectory], progress: Callable[[Trajectory], None] | None) -> None:
    """An episode's end, in the lockstep and the asynchronous loop alike: its verdict and sample
    recorded on its trajectory, out of `active`, into `results`, reported to `progress`."""
    if ep.traj is None:
        ep.traj = Trajectory(task_id=ep.task.id, group=ep.group)
    info.record_sample(ep.task.id, ep.sample, ep.seed, ep.cut_turns)
    ep.traj.info, ep.traj.reward = info, float(reward)
    ep.phase = "done"
    results[ep.index] = ep.traj
    active.remove(ep)
    if progress is not None:
        progress(ep.traj)


def run_episodes(policy: Policy, tasks: Sequence[Task], n: int, *, env: EnvSide, seed: int = 0,
                 max_total_tokens: int | None = None,
                 progress: Callable[[Trajectory], None] | None = None) -> list[Trajectory]:
    """Run `n` episodes of each task; return their trajectories ordered by (task, sample).

    A policy with `concurrent = True` (VLLMPolicy) runs in `async_loop.run_episodes_async`
    instead: no lockstep, the same trajectories' form and order. Otherwise all live episodes
    (at most `env.capacity`) advance in lockstep: one `policy.generate` per
    turn for all of them, after every tool call of the previous turn has returned (a slow tool
    call holds the turn back; its timeout bounds the wait). `traj.group` is the task's index in
    `tasks`; `traj.info` is the episode's EpisodeInfo with `sample` (0..n-1), `seed` and
    `cut_turns` set. An episode whose environment failed has `info.outcome == "error"`.
    `progress(traj)` is called (in the caller's thread) as each episode finishes.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if max_total_tokens is not None and max_total_tokens < 2:
        raise ValueError(f"max_total_tokens must be >= 2, got {max_total_tokens}")
    if getattr(policy, "concurrent", False):
        # A server-backed policy: each episode generates as soon as its tool call returns.
        from fixrl.harness.agent.async_loop import run_episodes_async  # noqa: PLC0415 - it imports this module

        return run_episodes_async(policy, tasks, n, env=env, seed=seed, max_total_tokens=max_total_tokens,
                                  progress=progress)
    policy.seed(seed)
    episodes = _episodes(tasks, n, seed)
    pending = list(reversed(episodes))
    active: list[_Episode] = []
    results: dict[int, Trajectory] = {}
    loop = _Loop(policy, max_total_tokens)

    def done(ep: _Episode, reward: float, info: EpisodeInfo) -> None:
        _finish(ep, reward, info, active, results, progress)

    def fail(ep: _Episode, e: BaseException, when: str) -> None:
        done(ep, 0.0, env.abort(ep.index, f"sandbox failed during {when}: {e}"))

    try:
        while pending or active:
            while pending and len(active) < env.capacity:
                ep = pending.pop()
                ep.future = env.start(ep.index, ep.task, ep.seed)
                active.append(ep)
            _collect_tool_turns(loop, env, active, fail)
            for ep in [e for e in active if e.phase == "finishing" and e.future.done()]:
                try:
                    reward, info = ep.future.result()
                except SandboxError as e:
                    fail(ep, e, "the check")
                    continue
                done(ep, reward, info)
            _lockstep_turn(loop, env, active)
            if active and not any(ep.phase in ("starting", "stepping", "ready") for ep in active):
                # Only checks are running: wait for one to free a sandbox.
                wait([ep.future for ep in active], return_when=FIRST_COMPLETED)
    except BaseException:
        for ep in active:
            if ep.future is not None:
                ep.future.cancel()
        wait([ep.future for ep in active if ep.future is not None])
        for ep in active:
            env.abort(ep.index, "the run was interrupted")
        raise
    return [results[i] for i in range(len(episodes))]
