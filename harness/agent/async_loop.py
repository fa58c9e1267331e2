"""Episodes that never wait for each other: the agent loop for a policy served by an engine that
batches on its own (`policy.concurrent`, VLLMPolicy).

Each episode is a small state machine driven by futures: start -> generate -> tool call ->
generate -> ... -> check. When its tool call returns, its next turn goes to the policy at once
(on a thread of its own); the server's continuous batching combines whatever requests are in
flight. A slow test run or check holds up only its own episode. Everything about a trajectory's
tokens -- the prompt, the reply, the tool turn's delta, the append-only check, the masks, the
budget -- is `loop._Loop`'s, the same code as the lockstep loop.

Order and seeds: trajectories come back ordered by (task, sample) and each episode's seed is
`episode_seed(seed, task, sample)` as in lockstep; the policy seeds each request from its
episode's seed and turn, so which episode finishes first does not change what any episode
samples. What may depend on timing: the engine's numerics when batch composition changes (vLLM
is not batch-invariant), and which episodes are in flight together when the sandbox pool is
smaller than the episodes of a call (that changes nothing of an episode's own tokens).
"""
from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Callable, Sequence

from fixrl.envs.types import EpisodeInfo, Malformed
from fixrl.harness.agent.envside import EnvSide
from fixrl.harness.agent.loop import _Episode, _episodes, _finish, _Loop
from fixrl.harness.agent.policies import GenRequest, Policy
from fixrl.harness.agent.trajectory import Trajectory
from fixrl.sandbox import SandboxError
from fixrl.tasks import Task


def run_episodes_async(policy: Policy, tasks: Sequence[Task], n: int, *, env: EnvSide, seed: int = 0,
                       max_total_tokens: int | None = None,
                       progress: Callable[[Trajectory], None] | None = None) -> list[Trajectory]:
    """`loop.run_episodes` for a concurrent policy: at most `env.capacity` live episodes, each
    advancing on its own. Same arguments, same result order, same error handling (a sandbox
    failure ends only its episode, as `error`; any other exception stops the run)."""
    policy.seed(seed)
    episodes = _episodes(tasks, n, seed)
    pending = list(reversed(episodes))
    active: list[_Episode] = []
    results: dict[int, Trajectory] = {}
    loop = _Loop(policy, max_total_tokens)
    limits: dict[int, int] = {}
    gen_threads = ThreadPoolExecutor(max_workers=max(1, env.capacity), thread_name_prefix="fixrl-turn")

    def done(ep: _Episode, reward: float, info: EpisodeInfo) -> None:
        _finish(ep, reward, info, active, results, progress)

    def fail(ep: _Episode, e: BaseException, when: str) -> None:
        done(ep, 0.0, env.abort(ep.index, f"sandbox failed during {when}: {e}"))

    def next_turn(ep: _Episode) -> None:
        req = loop.request(ep)
        if req is None:
            ep.phase, ep.future = "finishing", env.finish(ep.index, "out_of_tokens")
            return
        limits[ep.index] = req.max_new_tokens
        ep.phase, ep.future = "generating", gen_threads.submit(_generate_one, policy, req)

    def advance(ep: _Episode) -> None:
        """Handle the future of `ep` that has completed."""
        phase = ep.phase
        try:
            result = ep.future.result()
        except SandboxError as e:
            fail(ep, e, {"starting": "start-up", "stepping": "a tool call"}.get(phase, "the check"))
            return
        if phase == "starting":
            loop.begin(ep, result)
            next_turn(ep)
        elif phase == "generating":
            call = loop.record_reply(ep, result, limits[ep.index])
            if call is None:
                ep.phase, ep.future = "finishing", env.finish(ep.index, "out_of_tokens")
            else:
                ep.last_malformed = isinstance(call, Malformed)
                ep.phase, ep.future = "stepping", env.step(ep.index, call)
        elif phase == "stepping":
            if result.done:
                ep.phase, ep.future = "finishing", env.finish(ep.index, None)
            else:
                loop.record_observation(ep, result.observation, ep.last_malformed)
                next_turn(ep)
        elif phase == "finishing":
            reward, info = result
            done(ep, reward, info)
        else:
            raise RuntimeError(f"episode {ep.index} in phase {phase!r} had a future complete")

    try:
        while pending or active:
            while pending and len(active) < env.capacity:
                ep = pending.pop()
                ep.future = env.start(ep.index, ep.task, ep.seed)
                active.append(ep)
            wait([ep.future for ep in active], return_when=FIRST_COMPLETED)
            for ep in [e for e in active if e.future is not None and e.future.done()]:
                advance(ep)
    except BaseException:
        for ep in active:
            if ep.future is not None:
                ep.future.cancel()
        # Environment calls are waited for (their sandboxes are released by abort); a turn in
        # flight on the server is not: its answer is dropped with the episode.
        wait([ep.future for ep in active if ep.future is not None and ep.phase != "generating"])
        for ep in active:
            env.abort(ep.index, "the run was interrupted")
        raise
    finally:
        gen_threads.shutdown(wait=False, cancel_futures=True)
    return [results[i] for i in range(len(episodes))]


def _generate_one(policy: Policy, req: GenRequest):
    gens = policy.generate([req])
    if len(gens) != 1:
        raise RuntimeError(f"policy returned {len(gens)} turns for 1 request")
    return gens[0]
