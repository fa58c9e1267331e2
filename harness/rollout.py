"""The agent loop: token-in-token-out episodes, all live episodes advancing in lockstep.

Per turn, every live episode's conversation (token ids) goes into ONE batched
`policy.generate`; each reply is decoded, parsed (`harness.chat.parse_tool_calls`) and stepped
in its environment, the tool calls of all episodes running concurrently on a thread pool sized
to the sandbox pool. Finished episodes drop out; their hidden checks run in the background
while the others keep generating, and new episodes take their sandboxes (continuous batching).

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
import functools
import logging
import tempfile
import zlib
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable

from fixrl.envs.types import Malformed
from fixrl.harness.chat import END_OF_TURN, encode, end_of_turn_id, parse_tool_calls, render
from fixrl.harness.policies import GenRequest, Generation, Policy
from fixrl.harness.trajectory import Trajectory

log = logging.getLogger(__name__)


class TemplateError(RuntimeError):
    """The chat template is not append-only: rendering a longer conversation changed the text
    of the shorter one, so the trajectory's ids could not stay exact."""


def episode_seed(seed: int, task_id: str, sample: int) -> int:
    """The seed of episode `sample` of `task_id`: independent of the task's position in the list,
    so two policies evaluated with the same seed see the same per-episode renaming."""
    return zlib.crc32(f"{seed}:{task_id}:{sample}".encode()) & 0x7FFFFFFF


def pool_size(pool: Any) -> int:
    for attr in ("size", "n", "capacity"):
        v = getattr(pool, attr, None)
        if isinstance(v, int) and v > 0:
            return v
    raise ValueError(f"cannot tell the size of sandbox pool {pool!r} (expected a `size` attribute)")


def _template_name(tokenizer: Any) -> str:
    return f"the chat template of {getattr(tokenizer, 'name_or_path', '') or type(tokenizer).__name__}"


@dataclasses.dataclass
class _Episode:
    index: int
    group: int
    task: Any
    sample: int
    seed: int
    stack: ExitStack = dataclasses.field(default_factory=ExitStack)
    env: Any = None
    state: Any = None
    traj: Trajectory | None = None
    text: str = ""
    """The rendered text of traj.token_ids."""
    observation: str | None = None
    phase: str = "starting"   # starting | ready | stepping | finishing | done
    future: Future | None = None
    error: str | None = None
    last_malformed: bool = False
    cut_turns: list[int] = dataclasses.field(default_factory=list)


class _Loop:
    def __init__(self, policy: Policy, suite: Any, pool: Any, env_config: Any,
                 max_total_tokens: int | None, tmp: Path) -> None:
        self.policy = policy
        self.tok = policy.tokenizer
        self.eot = end_of_turn_id(self.tok)
        self.suite = suite
        self.pool = pool
        self.env_config = env_config
        self.budget = max_total_tokens
        self.tmp = tmp
        # Checks in the pool's own check sandboxes (pytest kept imported between them) unless
        # the env config asks for another backend than the pool's.
        wanted = getattr(env_config, "check_backend", None)
        self.check_sandbox = getattr(pool, "check_sandbox", None) \
            if wanted in (None, getattr(pool, "backend", None)) else None

    # -------------------------------------------------------------- work on the thread pool

    def start(self, ep: _Episode) -> tuple[list[dict], list[dict]]:
        from fixrl import tasks
        from fixrl.envs import ToolEnv

        ws = tasks.materialize(ep.task, self.tmp / f"ep{ep.index}", "buggy", cache=True)
        sb = ep.stack.enter_context(self.pool.acquire(ws, image=ep.task.image))
        check_sandbox = None
        if self.check_sandbox is not None:
            check_sandbox = functools.partial(self.check_sandbox, image=ep.task.image)
        ep.env = ToolEnv(ep.task, sb, self.env_config, suite=self.suite, seed=ep.seed,
                         check_sandbox=check_sandbox)
        return ep.env.reset()

    @staticmethod
    def step(ep: _Episode, call: Any) -> Any:
        return ep.env.step(call)

    @staticmethod
    def finish(ep: _Episode, status: str | None) -> tuple[float, Any]:
        from fixrl.sandbox import SandboxError

        try:
            if status is not None:
                ep.env.end(status)
            reward, info = ep.env.finish()
        except SandboxError as e:
            ep.error = f"sandbox failed during the check: {e}"
            _close(ep, e)
            return 0.0, None
        # The env catches sandbox failures of the episode itself and records them as outcome
        # "error": tell the pool, so that it replaces the sandbox instead of reusing it.
        failed = getattr(info, "exit_status", None) == "error"
        _close(ep, SandboxError(getattr(info, "error", None) or "sandbox failed") if failed else None)
        return reward, info

    # -------------------------------------------------------------- main thread

    def begin(self, ep: _Episode, messages: list[dict], tools: list[dict]) -> None:
        ep.state = self.policy.start(ep.task, ep.env, ep.seed)
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


def _close(ep: _Episode, exc: BaseException | None) -> None:
    """Give the sandbox back; with `exc` the pool learns that it failed and replaces it."""
    try:
        if exc is None:
            ep.stack.close()
        else:
            ep.stack.__exit__(type(exc), exc, exc.__traceback__)
    except Exception as e:  # noqa: BLE001 - a failing release must not lose the episode
        log.warning("releasing the sandbox of episode %d (%s) failed: %s", ep.index, ep.task.id, e)


def _error_info(ep: _Episode) -> dict[str, Any]:
    from fixrl.envs.types import EpisodeInfo

    info = ep.env.info if ep.env is not None and getattr(ep.env, "info", None) is not None \
        else EpisodeInfo(task_id=ep.task.id)
    d = dataclasses.asdict(info) if dataclasses.is_dataclass(info) else dict(info)
    d.update(outcome="error", exit_status="error", error=ep.error, hidden_pass=None)
    return d


def run_episodes(policy: Policy, tasks: list[Any], n: int, *, suite: Any, pool: Any, env_config: Any,
                 seed: int = 0, max_total_tokens: int | None = None,
                 progress: Callable[[Trajectory], None] | None = None) -> list[Trajectory]:
    """Run `n` episodes of each task; return their trajectories ordered by (task, sample).

    All live episodes (at most the pool's size) advance in lockstep: one `policy.generate` per
    turn for all of them, after every tool call of the previous turn has returned (a slow tool
    call holds the turn back; its timeout bounds the wait). `traj.group` is the task's index in
    `tasks`; `traj.info` is the episode's EpisodeInfo as a dict plus `sample` (0..n-1), `seed`
    and `cut_turns` (indices of the assistant turns cut at the token limit, closed with an
    unsampled `<|im_end|>`). Errored episodes have `info["outcome"] == "error"`.
    `progress(traj)` is called (in the caller's thread) as each episode finishes.
    """
    from fixrl.sandbox import SandboxError

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if max_total_tokens is not None and max_total_tokens < 2:
        raise ValueError(f"max_total_tokens must be >= 2, got {max_total_tokens}")
    size = pool_size(pool)
    policy.seed(seed)
    episodes = [_Episode(index=i, group=g, task=task, sample=k, seed=episode_seed(seed, task.id, k))
                for i, (g, task, k) in enumerate((g, t, k) for g, t in enumerate(tasks) for k in range(n))]
    pending = list(reversed(episodes))
    active: list[_Episode] = []
    results: dict[int, Trajectory] = {}

    def fail(ep: _Episode, e: BaseException, when: str) -> None:
        ep.error = f"sandbox failed during {when}: {e}"
        _close(ep, e)
        done(ep, 0.0, None)

    def done(ep: _Episode, reward: float, info: Any) -> None:
        if ep.traj is None:
            ep.traj = Trajectory(task_id=ep.task.id, group=ep.group)
        if info is None:
            ep.traj.info = _error_info(ep)
            ep.traj.reward = 0.0
        else:
            ep.traj.info = dataclasses.asdict(info) if dataclasses.is_dataclass(info) else dict(info)
            ep.traj.reward = float(reward)
        ep.traj.info.update(sample=ep.sample, seed=ep.seed, cut_turns=list(ep.cut_turns))
        ep.phase = "done"
        results[ep.index] = ep.traj
        active.remove(ep)
        if progress is not None:
            progress(ep.traj)

    with tempfile.TemporaryDirectory(prefix="fixrl-rollout-") as tmp, \
            ThreadPoolExecutor(max_workers=size, thread_name_prefix="fixrl-episode") as ex:
        loop = _Loop(policy, suite, pool, env_config, max_total_tokens, Path(tmp))
        try:
            while pending or active:
                while pending and len(active) < size:
                    ep = pending.pop()
                    ep.future = ex.submit(loop.start, ep)
                    active.append(ep)
                # Lockstep: wait for every start and tool call in flight (not for checks).
                busy = [ep for ep in active if ep.phase in ("starting", "stepping")]
                wait([ep.future for ep in busy])
                for ep in busy:
                    try:
                        result = ep.future.result()
                    except SandboxError as e:
                        fail(ep, e, "start-up" if ep.phase == "starting" else "a tool call")
                        continue
                    if ep.phase == "starting":
                        loop.begin(ep, *result)
                    else:
                        ep.phase = "ready"
                        if result.done:
                            ep.phase = "finishing"
                            ep.future = ex.submit(loop.finish, ep, None)
                        else:
                            loop.record_observation(ep, result.observation, ep.last_malformed)
                for ep in [e for e in active if e.phase == "finishing" and e.future.done()]:
                    reward, info = ep.future.result()
                    done(ep, reward, info)

                ready = [ep for ep in active if ep.phase == "ready"]
                requests: list[tuple[_Episode, GenRequest]] = []
                for ep in ready:
                    req = loop.request(ep)
                    if req is None:
                        ep.phase = "finishing"
                        ep.future = ex.submit(loop.finish, ep, "out_of_tokens")
                    else:
                        requests.append((ep, req))
                if requests:
                    gens = policy.generate([r for _, r in requests])
                    if len(gens) != len(requests):
                        raise RuntimeError(f"policy returned {len(gens)} turns for {len(requests)} requests")
                    for (ep, req), gen in zip(requests, gens):
                        call = loop.record_reply(ep, gen, req.max_new_tokens)
                        if call is None:
                            ep.phase = "finishing"
                            ep.future = ex.submit(loop.finish, ep, "out_of_tokens")
                        else:
                            ep.last_malformed = isinstance(call, Malformed)
                            ep.phase = "stepping"
                            ep.future = ex.submit(loop.step, ep, call)
                elif not any(ep.phase in ("starting", "stepping") for ep in active) and active:
                    # Only checks are running: wait for one to free a sandbox.
                    wait([ep.future for ep in active], return_when=FIRST_COMPLETED)
        except BaseException:
            for ep in active:
                if ep.future is not None:
                    ep.future.cancel()
            wait([ep.future for ep in active if ep.future is not None])
            for ep in active:
                _close(ep, None)
            raise
    return [results[i] for i in range(len(episodes))]
