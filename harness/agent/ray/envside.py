"""RayEnvSide: the EnvSide of a rollout call whose episodes run on a Ray cluster's workers.

The lockstep loop (`harness.agent.loop.run_episodes`) drives it exactly as it drives the
local one: it sends each episode's tool calls and gets observations back; tokens, generation and
trajectories never leave the driver. Each call runs on a thread of its own here and blocks on
its worker within a deadline (`deadlines`).

Faults. When an episode's worker is lost (its process or node died, or it missed a deadline and
was killed), the episode moves: it starts again on another worker with the same task and seed,
and every tool call it made (and every command its policy ran through the view) is sent again
in order; then the call that failed is made there. The policy is not asked again: the
trajectory keeps the observations it already holds. A replay must give what the episode saw
(`same_observation`: the same start, the same observations, `test` judged by its verdict line,
whose timing differs); if it does not, or `retries` moves were not enough, or no worker is left,
the call raises SandboxError and the loop ends the episode as `error`: left out of training and
pass@k, never scored as a failed attempt.

What it does not guarantee: a tool that is not a function of the workspace (a user tool reading
the clock) may fail its replay check, which ends that episode as `error`; a policy that changes
the workspace through its view other than by `exec` (there is no other way) is not replayed.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from fixrl.envs import EnvConfig
from fixrl.envs import rename as rn
from fixrl.envs.tools import TOOLS
from fixrl.envs.types import EpisodeInfo, Malformed, StepResult, ToolCall
from fixrl.harness.agent.envside import Started
from fixrl.harness.agent.ray.pool import WorkerHandle, WorkerLost, WorkerPool
from fixrl.harness.agent.ray.worker import RemoteStarted, RemoteStep, ViewState
from fixrl.harness.agent.settings import ClusterError
from fixrl.sandbox import ExecResult, SandboxError
from fixrl.tasks import Suite, Task

log = logging.getLogger(__name__)

START_SECONDS = 120.0
"""A start's own time (a sandbox from the pool or a new container, materialising, renaming)."""
CHECK_OVERHEAD_SECONDS = 30.0
"""A hidden check's time beyond its tests' timeout (a check sandbox, carrying the changes)."""
FILE_SECONDS = 30.0
"""A file read or write (read, edit and submit calls, reads through the view): the backends
bound their own file I/O (Docker's exec server: 30 s beyond a request's own time)."""

ABORT_SECONDS = 15.0
MAX_THREADS = 512


@dataclasses.dataclass(frozen=True)
class Deadlines:
    """Seconds each call of one episode may take on its worker before the worker counts as hung."""

    start: float
    finish: float
    file: float
    """A step that reads or writes files (read, edit, submit), a malformed call, a view's read."""
    margin: float
    tool_timeouts: tuple[tuple[str, float], ...]
    """The env config's timeouts per tool name."""
    task_tool_timeout: float

    def step(self, call: ToolCall | Malformed) -> float:
        """A step's deadline: a tool that runs a command gets its timeout as ToolEnv gives it."""
        name = call.name if isinstance(call, ToolCall) and isinstance(call.name, str) else None
        if name is None or name in ("read", "edit", "submit"):
            return self.file
        tool = TOOLS.get(name)
        own = dict(self.tool_timeouts).get(name) or (tool.timeout if tool is not None else None)
        return float(own or self.task_tool_timeout) + self.margin


def deadlines(task: Task, env: EnvConfig, margin: float) -> Deadlines:
    """From the task's and env config's own limits, plus `margin` (ClusterConfig.call_margin)."""
    setup = float(task.limits.setup_timeout) * len(task.setup)
    public = float(env.tool_timeouts.get("test", task.limits.tool_timeout)) \
        if env.public_check or env.reward == "public" else 0.0
    check = float(task.check.timeout) + setup + public + CHECK_OVERHEAD_SECONDS
    return Deadlines(start=START_SECONDS + setup + margin, finish=check * (max(0, env.check_retries) + 1) + margin,
                     file=FILE_SECONDS + margin, margin=margin,
                     tool_timeouts=tuple((k, float(v)) for k, v in env.tool_timeouts.items()),
                     task_tool_timeout=float(task.limits.tool_timeout))


def same_observation(call: ToolCall | Malformed, before: StepResult, after: StepResult) -> bool:
    """Whether a replayed step gave what the episode saw: the same observation (test runs: the
    same verdict line; searches: the same lines in any order, grep's order being the directory's)."""
    if before.done != after.done:
        return False
    name = call.name if isinstance(call, ToolCall) else None
    if name == "test":
        return before.observation.split("\n", 1)[0] == after.observation.split("\n", 1)[0]
    if name == "search":
        return sorted(before.observation.splitlines()) == sorted(after.observation.splitlines())
    return before.observation == after.observation


@dataclasses.dataclass
class _Logged:
    kind: str          # "step" | "exec"
    args: tuple
    result: Any


@dataclasses.dataclass(eq=False)
class _Remote:
    """One live episode as the driver knows it: where it runs and what it did (its replay)."""

    key: int
    task: Task
    seed: int
    limits: Deadlines
    worker: WorkerHandle | None = None
    started: RemoteStarted | None = None
    log: list[_Logged] = dataclasses.field(default_factory=list)
    moves: int = 0
    view: RemoteView | None = None


class RemoteSandbox:
    """`view.sb` of a remote episode: reads and commands in its workspace, on its worker."""

    def __init__(self, side: RayEnvSide, ep: _Remote) -> None:
        self._side, self._ep = side, ep

    def read_file(self, path: str) -> str:
        return self._side._view_call(self._ep, "read_file", path)

    def exec(self, cmd: str, timeout: float = 60.0) -> ExecResult:
        return self._side._view_call(self._ep, "exec", cmd, timeout)


class RemoteView:
    """What a policy sees of a remote episode in `Policy.start` and in scripted plans: the
    ToolEnv attributes they read (task, suite, seed, tools, function_name, max_turns, max_edits,
    edits_left, issue, to_shown, to_original) and `sb.read_file` / `sb.exec` on the worker."""

    def __init__(self, side: RayEnvSide, ep: _Remote, state: ViewState) -> None:
        self.task, self.suite, self.seed = ep.task, side.suite, ep.seed
        self.tools = {name: TOOLS.get(name) for name in state.tools}
        self.function_name = state.function_name
        self.max_turns, self.max_edits = state.max_turns, state.max_edits
        self.edits_left = state.edits_left
        self.issue = state.issue
        self._renamed = state.renamed
        self.sb = RemoteSandbox(side, ep)

    @property
    def tool_names(self) -> list[str]:
        return list(self.tools)

    def to_shown(self, text: str) -> str:
        return rn.rename_text(text, *self._renamed) if self._renamed else text

    def to_original(self, text: str) -> str:
        return rn.rename_text(text, self._renamed[1], self._renamed[0]) if self._renamed else text


class RayEnvSide:
    """The environment side of one `run_episodes` call over a WorkerPool."""

    def __init__(self, pool: WorkerPool, suite: Suite | None, env_config: EnvConfig, *, retries: int,
                 margin: float) -> None:
        self.pool = pool
        self.suite = suite
        self.env_config = env_config
        self.retries = retries
        self.margin = margin
        self.id = uuid.uuid4().hex[:8]
        # The workers need the suite's settings, not its task list.
        self._suite_settings = suite.model_copy(update={"tasks": []}) if suite is not None else None
        self._eps: dict[int, _Remote] = {}
        self._lock = threading.Lock()
        self._opened: list[WorkerHandle] = []
        self._threads = ThreadPoolExecutor(max_workers=MAX_THREADS, thread_name_prefix="fixrl-ray")

    @property
    def capacity(self) -> int:
        return self.pool.capacity()

    # ---- the EnvSide protocol

    def start(self, key: int, task: Task, seed: int) -> Future[Started]:
        ep = _Remote(key, task, seed, deadlines(task, self.env_config, self.margin))
        with self._lock:
            self._eps[key] = ep
        return self._threads.submit(self._start, ep)

    def step(self, key: int, call: ToolCall | Malformed) -> Future[StepResult]:
        return self._threads.submit(self._step, self._eps[key], call)

    def finish(self, key: int, status: str | None) -> Future[tuple[float, EpisodeInfo]]:
        return self._threads.submit(self._finish, self._eps[key], status)

    def abort(self, key: int, error: str) -> EpisodeInfo:
        with self._lock:
            ep = self._eps.pop(key, None)
        info = None
        if ep is not None and ep.worker is not None:
            w, ep.worker = ep.worker, None
            if w.dead is None:
                try:
                    info = w.call("abort", self.id, key, error, deadline=ABORT_SECONDS + self.margin)
                except Exception as e:  # noqa: BLE001 - whatever happened, the episode ends as error
                    log.warning("aborting episode %d on node %s: %s", key, w.node[:8], e)
            self.pool.release(w)
        if info is None or not info.task_id:
            info = EpisodeInfo(task_id=ep.task.id if ep is not None else "")
        return dataclasses.replace(info, outcome="error", exit_status="error", error=error, hidden_pass=None)

    def close(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            eps, self._eps = list(self._eps.values()), {}
            opened, self._opened = self._opened, []
        for ep in eps:
            if ep.worker is not None:
                self.pool.release(ep.worker)
        for w in opened:
            if w.dead is None:
                try:
                    w.call("close_side", self.id, deadline=ABORT_SECONDS + self.margin)
                except Exception as e:  # noqa: BLE001 - a lost worker's reaper releases its sandboxes
                    log.warning("closing the episodes on node %s: %s", w.node[:8], e)

    # ---- the calls, each on its own thread

    def _start(self, ep: _Remote) -> Started:
        ep.worker = self.pool.acquire()
        ep.started = self._on(ep, lambda w: self._start_on(w, ep))
        ep.view = RemoteView(self, ep, ep.started.view)
        return Started(ep.started.messages, ep.started.tools, ep.view)

    def _step(self, ep: _Remote, call: ToolCall | Malformed) -> StepResult:
        reply: RemoteStep = self._on(ep, lambda w: w.call("step", self.id, ep.key, call, deadline=ep.limits.step(call)))
        ep.log.append(_Logged("step", (call,), reply.result))
        ep.view.edits_left = reply.edits_left
        return reply.result

    def _finish(self, ep: _Remote, status: str | None) -> tuple[float, EpisodeInfo]:
        result = self._on(ep, lambda w: w.call("finish", self.id, ep.key, status, deadline=ep.limits.finish))
        with self._lock:
            self._eps.pop(ep.key, None)
        w, ep.worker = ep.worker, None
        self.pool.release(w, finished=True)
        return result

    def _view_call(self, ep: _Remote, method: str, *args: Any) -> Any:
        limit = ep.limits.file if method == "read_file" else float(args[1]) + self.margin
        out = self._on(ep, lambda w: w.call(method, self.id, ep.key, *args, deadline=limit))
        if method == "exec":  # a command may change the workspace: a replay runs it again
            ep.log.append(_Logged("exec", args, out))
        return out

    # ---- where an episode runs, and moving it

    def _start_on(self, w: WorkerHandle, ep: _Remote) -> RemoteStarted:
        token = self.pool.prepare(w, self.id, self._open_side, ep.task, deadline=ep.limits.start)
        return w.call("start", self.id, ep.key, token, ep.seed, deadline=ep.limits.start)

    def _open_side(self, w: WorkerHandle) -> None:
        try:
            w.call("open_side", self.id, self.env_config, self._suite_settings, deadline=START_SECONDS + self.margin)
        except (WorkerLost, SandboxError):
            raise
        except Exception as e:
            raise ClusterError(f"node {w.node[:8]} cannot take this run's episode settings ({type(e).__name__}: "
                               f"{str(e).strip().splitlines()[-1][:300]}): a reward function or tool must be "
                               "importable on every node (install its module there, or put its folder on the "
                               "PYTHONPATH of that node's `ray start`)") from None
        with self._lock:
            self._opened.append(w)

    def _on(self, ep: _Remote, op: Callable[[WorkerHandle], Any]) -> Any:
        """`op` on the episode's worker; when the worker is lost, move the episode and try again."""
        while True:
            w = ep.worker
            try:
                return op(w)
            except WorkerLost as e:
                self._move(ep, w, e)

    def _move(self, ep: _Remote, lost: WorkerHandle, why: WorkerLost) -> None:
        """Start `ep` again on another worker and replay what it did (nothing for a start that
        failed); SandboxError when it cannot be."""
        while True:
            self.pool.release(lost)
            ep.worker = None
            ep.moves += 1
            if ep.moves > self.retries:
                raise SandboxError(f"the episode lost its worker {ep.moves} times (last: {why}); "
                                   f"it ends as error after {self.retries} retries")
            ep.worker = self.pool.acquire(failover=True)
            log.warning("episode %d of %s moves to node %s (%s)", ep.key, ep.task.id, ep.worker.node[:8], why)
            if ep.started is None:
                return
            try:
                self._replay(ep, ep.worker)
                return
            except WorkerLost as e:
                lost, why = ep.worker, e

    def _replay(self, ep: _Remote, w: WorkerHandle) -> None:
        again = self._start_on(w, ep)
        if (again.messages, again.tools, again.view) != (ep.started.messages, ep.started.tools, ep.started.view):
            raise SandboxError(f"the episode restarted on node {w.node[:8]} differently from its first start "
                               "(setup or renaming is not reproducible); it cannot be replayed")
        for turn, entry in enumerate(ep.log, 1):
            if entry.kind == "exec":
                w.call("exec", self.id, ep.key, *entry.args, deadline=float(entry.args[1]) + self.margin)
                continue
            (call,) = entry.args
            reply: RemoteStep = w.call("step", self.id, ep.key, call, deadline=ep.limits.step(call))
            if not same_observation(call, entry.result, reply.result):
                raise SandboxError(f"replaying the episode on node {w.node[:8]}: step {turn} gave another "
                                   "observation than the first time; it cannot be replayed")
            if ep.view is not None:
                ep.view.edits_left = reply.edits_left
