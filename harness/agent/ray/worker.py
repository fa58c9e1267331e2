"""EnvWorker: the environment side of episodes on one node of a Ray cluster.

The driver (`harness.agent.ray.pool`) starts one EnvWorker actor per node that offers
`fixrl_sandbox` slots. A worker holds a SandboxPool on its node and, per rollout call of the
driver (a "side"), a `LocalEnvSide` over it: the very code that runs episodes in one process,
so a tool call, a renaming or a hidden check does on a worker exactly what it does locally.
This module does not import Ray: Ray wraps the class in the driver (`ray.remote(EnvWorker)`).

What travels to a worker: each task (its text fields resolved, `portable`) and its clean
repository as a tar (`pack_tree`, content-addressed, unpacked once per node under the node's
root), never an image: a Docker node builds or already holds its sandbox image.

Per node settings, from the environment of that node's `ray start`:
- `FIXRL_SANDBOX_BACKEND`: `local` or `docker`, this node's backend (default: the run's);
- `FIXRL_RAY_ROOT`: where the node keeps trees and worker directories (default
  `$TMPDIR/fixrl-ray`).
Its pool size is its `fixrl_sandbox` resource (`ray start --resources='{"fixrl_sandbox": 8}'`).

Every worker keeps what it makes under `ROOT/workers/RUN-SESSION/` (owner.json names the worker
process; `tempfile.tempdir` points there, so local sandboxes and workspaces land in it) and
starts a reaper (sandbox.reaper) that removes its containers (by session label), sandbox
processes and directory when the worker process dies for any reason. Starting a worker sweeps
what dead workers of earlier runs left on its node.
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.metadata
import importlib.util
import io
import os
import shutil
import socket
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fixrl.envs import EnvConfig
from fixrl.envs.types import EpisodeInfo, Malformed, StepResult, ToolCall
from fixrl.harness.agent.local_rollouts import LocalEnvSide
from fixrl.sandbox import BACKENDS, DEFAULT_IMAGE, ExecResult, SandboxError, SandboxPool, reaper
from fixrl.sandbox import docker as docker_backend
from fixrl.tasks import Suite, Task
from fixrl.tasks.format.loader import field_text
from fixrl.tasks.format.materialize import copy_repo

TREE_DAYS = 7
"""Days a shipped repository stays in a node's cache unused."""
ROOT_ENV = "FIXRL_RAY_ROOT"
BACKEND_ENV = "FIXRL_SANDBOX_BACKEND"


CODE_PACKAGES = ("fixrl.sandbox", "fixrl.tasks", "fixrl.envs", "fixrl.harness.agent")
"""The packages whose code runs an episode's environment on a worker (tools, checks, reward)."""


class WorkerError(SandboxError):
    """A worker could not start on its node (a bad backend setting, a missing Docker image,
    other fixrl code than the driver's)."""


@functools.cache
def code_digest() -> str:
    """The installed fixrl version and a digest of the source of CODE_PACKAGES: a node that runs
    other code than the driver could judge the same fix differently, so it gets no episode."""
    h = hashlib.sha256()
    for name in CODE_PACKAGES:
        spec = importlib.util.find_spec(name)
        for root in (spec.submodule_search_locations or []) if spec is not None else []:
            for f in sorted(Path(root).rglob("*.py")):
                h.update(f"{name}/{f.relative_to(root).as_posix()}".encode() + b"\0" + f.read_bytes() + b"\0")
    return f"fixrl {importlib.metadata.version('fixrl')} ({h.hexdigest()[:12]})"


@dataclass(frozen=True)
class WorkerSpec:
    """What the driver tells a new worker."""

    run: str
    """The driver's run id (names the worker's directory)."""
    slots: int
    """Episodes the driver schedules here at once: the node's `fixrl_sandbox` resource."""
    pool_size: int
    """Sandboxes the worker may hold: the slots plus room for episodes moved from a lost node."""
    backend: str
    """The run's sandbox backend; the node's FIXRL_SANDBOX_BACKEND wins."""
    image: str | None
    """The run's Docker image (None: each task's, else the base image)."""
    code: str
    """The driver's `code_digest()`; a worker whose own differs refuses to start."""


@dataclass(frozen=True)
class WorkerInfo:
    """What a started worker reports."""

    pid: int
    host: str
    backend: str
    session: str
    directory: str


@dataclass(frozen=True)
class ViewState:
    """What a policy may look at of an episode's environment, fixed at its start (ToolEnv's
    attributes of the same names), plus `edits_left`, which changes with each edit."""

    tools: tuple[str, ...]
    function_name: str | None
    max_turns: int
    max_edits: int | None
    edits_left: int | None
    renamed: tuple[str, str] | None
    """(original name, shown name) when the episode renames its function."""
    issue: str


@dataclass(frozen=True)
class RemoteStarted:
    messages: list[dict]
    tools: list[dict]
    view: ViewState


@dataclass(frozen=True)
class RemoteStep:
    result: StepResult
    edits_left: int | None


def node_root() -> Path:
    """This node's fixrl directory (FIXRL_RAY_ROOT, else $TMPDIR/fixrl-ray)."""
    return Path(os.environ.get(ROOT_ENV) or Path(tempfile.gettempdir()) / "fixrl-ray")


# ---------------------------------------------------------------- what travels: tasks and trees

def portable(task: Task) -> Task:
    """A copy of `task` that needs nothing of the driver's disk but its repository: patches and
    check files as text (tasks built in Python may still hold paths)."""
    t = task.model_copy(deep=True)
    t.bug = field_text(task, task.bug) if task.bug is not None else None
    t.fix = field_text(task, task.fix) if task.fix is not None else None
    t.bug_files = {k: field_text(task, v) for k, v in task.bug_files.items()}
    t.check.files = {k: field_text(task, v) for k, v in task.check.files.items()}
    return t


def _reset(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    return info


def pack_tree(task: Task) -> tuple[str, bytes]:
    """The task's clean repository (no history: what `materialize` starts from) as a gzipped
    tar, and the sha256 of the uncompressed tar (entries sorted, times and owners zeroed)."""
    with tempfile.TemporaryDirectory(prefix="fixrl-pack-") as tmp:
        tree = Path(tmp) / "tree"
        copy_repo(task, tree)
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            tar.add(tree, arcname="tree", filter=_reset)
    data = raw.getvalue()
    return hashlib.sha256(data).hexdigest(), gzip.compress(data, compresslevel=1, mtime=0)


def unpack_tree(root: Path, sha: str, payload: bytes) -> Path:
    """The tree `sha` under `root/trees/` (unpacked from `payload` unless a worker of this node
    already did); returns the repository directory."""
    dest = root / "trees" / sha
    if (dest / "tree").is_dir():
        os.utime(dest)   # in use: `sweep_node` keeps it
    else:
        part = Path(tempfile.mkdtemp(prefix=f"{sha[:12]}-", dir=dest.parent if dest.parent.is_dir()
                                     else _mkdir(dest.parent)))
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(payload)), mode="r:") as tar:
            tar.extractall(part, filter="tar")  # our own driver's repository: its links are the task's
        try:
            part.rename(dest)
        except OSError:  # another worker of this node was first
            shutil.rmtree(part, ignore_errors=True)
    return dest / "tree"


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def rebase(task: Task, tree: Path) -> Task:
    """`task` with its repository at `tree` (a plain directory on this node)."""
    return task.model_copy(update={"repo": str(tree)})


def view_state(env: Any) -> ViewState:
    renamed = next(iter(env.info.renamed.items()), None)
    return ViewState(tools=tuple(env.tools), function_name=env.function_name, max_turns=env.max_turns,
                     max_edits=env.max_edits, edits_left=env.edits_left, renamed=renamed, issue=env.issue)


# ---------------------------------------------------------------- the actor

class EnvWorker:
    """One node's environment side (a Ray actor; every method may run on its own thread)."""

    def __init__(self, spec: WorkerSpec) -> None:
        if code_digest() != spec.code:
            raise WorkerError(f"node {socket.gethostname()} runs {code_digest()}, the driver {spec.code}: install "
                              "the same fixrl on every node (and restart its `ray start`)")
        self.spec = spec
        self.root = node_root()
        self.backend = os.environ.get(BACKEND_ENV) or spec.backend
        if self.backend not in BACKENDS:
            raise WorkerError(f"node {socket.gethostname()}: {BACKEND_ENV}={self.backend!r}: use one of "
                              f"{', '.join(BACKENDS)}")
        reaper.sweep(_mkdir(self.root / "workers"))
        self.session = docker_backend.SESSION
        self.dir = self.root / "workers" / f"{spec.run}-{self.session}"
        uses_docker = self.backend == "docker" or bool(os.environ.get("DOCKER_HOST")) or \
            os.path.exists("/var/run/docker.sock")
        reaper.write_owner(self.dir, session=self.session, docker=uses_docker, run=spec.run)
        _mkdir(self.dir / "tmp")
        # Every sandbox, workspace and check tree of this process lands in the worker's
        # directory, which the reaper removes when the process dies.
        tempfile.tempdir = str(self.dir / "tmp")
        reaper.spawn_reaper(self.dir)
        if self.backend == "docker":
            _check_image(docker_backend, spec.image or DEFAULT_IMAGE)
        self.pool = SandboxPool(spec.pool_size, backend=self.backend, image=spec.image)
        self._sides: dict[str, LocalEnvSide] = {}
        self._tasks: dict[str, Task] = {}
        self._lock = threading.Lock()

    def hello(self) -> WorkerInfo:
        return WorkerInfo(pid=os.getpid(), host=socket.gethostname(), backend=self.backend,
                          session=self.session, directory=str(self.dir))

    # ---- what the episodes need

    def add_tree(self, sha: str, payload: bytes) -> None:
        unpack_tree(self.root, sha, payload)

    def add_task(self, token: str, task: Task, sha: str) -> None:
        tree = self.root / "trees" / sha / "tree"
        if not tree.is_dir():
            raise KeyError(f"tree {sha[:12]} was not sent to this worker")
        with self._lock:
            self._tasks.setdefault(token, rebase(task, tree))

    def open_side(self, side: str, env_config: EnvConfig, suite: Suite | None) -> None:
        with self._lock:
            if side not in self._sides:
                work = _mkdir(self.dir / "tmp" / f"side-{side}")
                self._sides[side] = LocalEnvSide(suite, env_config, self.pool, work)

    def close_side(self, side: str) -> None:
        with self._lock:
            s = self._sides.pop(side, None)
        if s is not None:
            s.close()
            shutil.rmtree(s.workdir, ignore_errors=True)

    # ---- episodes (EnvSide's calls, answered by this node's LocalEnvSide)

    def start(self, side: str, key: int, token: str, seed: int) -> RemoteStarted:
        started = self._sides[side].start(key, self._tasks[token], seed).result()
        return RemoteStarted(started.messages, started.tools, view_state(started.view))

    def step(self, side: str, key: int, call: ToolCall | Malformed) -> RemoteStep:
        s = self._sides[side]
        result = s.step(key, call).result()
        return RemoteStep(result, s.env(key).edits_left)

    def finish(self, side: str, key: int, status: str | None) -> tuple[float, EpisodeInfo]:
        return self._sides[side].finish(key, status).result()

    def abort(self, side: str, key: int, error: str) -> EpisodeInfo:
        s = self._sides.get(side)
        return s.abort(key, error) if s is not None else EpisodeInfo(task_id="", outcome="error", error=error)

    # ---- the policy's view of the workspace

    def read_file(self, side: str, key: int, path: str) -> str:
        return self._sides[side].env(key).sb.read_file(path)

    def exec(self, side: str, key: int, cmd: str, timeout: float) -> ExecResult:
        return self._sides[side].env(key).sb.exec(cmd, timeout)

    # ---- one function of a task and this node's sandboxes (harness.agent.ray.map)

    def apply(self, fn: Any, token: str, *args: Any) -> Any:
        return fn(self._tasks[token], self.pool, *args)

    # ---- the end

    def shutdown(self) -> None:
        """Release every episode and sandbox and remove the worker's directory."""
        with self._lock:
            sides, self._sides = list(self._sides.values()), {}
        for s in sides:
            s.close()
        self.pool.close()
        reaper.kill_leftovers(self.dir / "tmp")
        shutil.rmtree(self.dir, ignore_errors=True)


def _check_image(docker_backend: Any, image: str) -> None:
    try:
        docker_backend.client().images.get(image)
    except Exception as e:  # noqa: BLE001 - no daemon, no image: either way this node cannot serve
        raise WorkerError(f"node {socket.gethostname()}: Docker image {image!r} is not usable here ({e}); "
                          "run `fixrl sandbox build-image` on that node (images do not travel)") from None


def sweep_node(names: list[str], wait_seconds: float) -> list[str]:
    """Clean this node's worker directories whose process is gone (waiting up to `wait_seconds`
    for those in `names` to end first), and, when no worker is left on the node, the trees no run
    has used for TREE_DAYS; a Ray task the driver runs on every node at the end of a job."""
    root = node_root()
    cleaned = reaper.sweep(_mkdir(root / "workers"), set(names), wait_seconds)
    if not any((root / "workers").iterdir()):
        old = time.time() - TREE_DAYS * 86400
        for tree in (root / "trees").iterdir() if (root / "trees").is_dir() else ():
            if tree.stat().st_mtime < old:
                shutil.rmtree(tree, ignore_errors=True)
    return cleaned
