"""WorkerPool: the driver's hold on a Ray cluster's environment workers.

One `EnvWorker` actor per node that offers `fixrl_sandbox` slots, placed on that node and
holding all of its slots (so one run's worker owns a node's sandboxes; a second driver's waits).
Within one process the pool is shared (`WorkerPool.shared`): a job that opens rollouts while it
holds others (the demo's GRPO stage inside its evaluations) uses the same workers, where a second
set of workers would wait for slots the first holds.
The pool finds nodes as they join (`refresh`, every couple of seconds while a run asks for
capacity), forgets nodes that die, and counts the episodes it has placed on each worker
(`acquire` / `release`): new episodes go to the least loaded worker within its slots; an
episode moved from a lost worker may also use the worker's failover room (its pool holds twice
its slots), never more, so that nothing waits for a sandbox the lockstep loop itself holds.

Calls to a worker (`WorkerHandle.call`) have a deadline; a worker that misses one is killed. A
worker that died, was killed or whose node died raises `WorkerLost` to the caller, which moves
the episode (harness.agent.ray.envside). Errors of the code a worker ran (SandboxError, a bug)
arrive as themselves: Ray raises the remote exception as an instance of its own class.

`close()` shuts every worker down (its sandboxes released), kills it, and sweeps every live
node for what dead workers of the run left (sandbox.reaper); reapers on the nodes do the same
when the driver itself dies and Ray kills its actors.
"""
from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fixrl.harness.agent.ray.worker import (
    EnvWorker,
    WorkerInfo,
    WorkerSpec,
    code_digest,
    pack_tree,
    portable,
    sweep_node,
)
from fixrl.harness.agent.settings import ClusterConfig, ClusterError
from fixrl.sandbox import SandboxConfig, SandboxError
from fixrl.tasks import GitRepo, Task
from fixrl.tasks.format.loader import repo_path

log = logging.getLogger(__name__)

RESOURCE = "fixrl_sandbox"
"""The custom resource a worker node offers: its number of sandbox slots."""
START_SECONDS = 180.0
"""Seconds a worker may take to start (a process, imports, a sandbox pool, a Docker check)."""
REFRESH_SECONDS = 2.0
"""Least seconds between two looks at the cluster's membership."""
JOIN_GRACE_SECONDS = 60.0
"""Seconds an episode waits for a worker when none is alive before it ends as `error`."""
SHUTDOWN_SECONDS = 60.0
PROGRESS_SECONDS = 10.0
"""Seconds between two log lines while workers start."""

_SHARED: list[WorkerPool] = []
"""The process's open shared pool (at most one: a process drives one cluster)."""
_SHARED_LOCK = threading.Lock()
"""Guards `_SHARED` and a shared pool's user count; never held while calling out."""
_OPENING_LOCK = threading.Lock()
"""Held while a shared pool opens, so that two threads do not start two sets of workers."""


class WorkerLost(Exception):
    """The worker an episode ran on is gone (died, killed, its node lost, or hung past a deadline)."""


def import_ray() -> Any:
    try:
        import ray  # noqa: PLC0415 - the optional extra: only runs that ask for a cluster import it
    except ImportError:
        raise ClusterError("--ray needs Ray, on this machine and on every node: pip install 'fixrl[ray]'") from None
    return ray


def _reachable(address: str, timeout: float = 5.0) -> str | None:
    """Why nothing answers at HOST:PORT (None: something does)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return f"{address!r} is not HOST:PORT"
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return None
    except OSError as e:
        return f"nothing answers at {address} ({e.strerror or e})"


def connect(address: str) -> Any:
    """Ray, connected to the cluster at `address` ("auto" or HOST:PORT); ClusterError if it cannot be."""
    ray = import_ray()
    if ray.is_initialized():
        if _same_cluster(address, ray.get_runtime_context().gcs_address):
            return ray
        ray.shutdown()
    if address != "auto":
        why = _reachable(address.removeprefix("ray://"))
        if why:
            raise ClusterError(f"--ray {address}: {why}; start the head with `ray start --head --port=PORT` "
                               "and give its HOST:PORT (or `auto` on a machine of the cluster)")
    try:
        ray.init(address=address, namespace="fixrl", logging_level=logging.WARNING, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise ClusterError(f"--ray {address}: cannot join the Ray cluster: {e}") from None
    _messages_to_log()
    return ray


def _messages_to_log() -> None:
    """Ray's driver prints the cluster's messages (a node marked dead, the autoscaler's errors)
    on stdout from a thread of its own, and no setting turns that off (`log_to_driver` is for the
    workers' output); stdout carries `--json` results. They go to this module's log instead (stderr).
    Ray's private printer is replaced, if it is still where Ray 2.60 keeps it."""
    try:
        from ray._private import worker as ray_worker  # noqa: PLC0415 - as ray
    except ImportError:
        return
    if getattr(ray_worker, "print_to_stdstream", None) is None:
        return

    def to_log(data: dict, ignore_prefix: bool = False) -> None:
        for line in data.get("lines") or []:
            log.warning("ray (%s): %s", data.get("pid", "?"), str(line).rstrip())

    ray_worker.print_to_stdstream = to_log


@dataclass(eq=False)
class WorkerHandle:
    """The driver's record of one worker."""

    actor: Any
    node: str
    slots: int
    pool_size: int
    order: int
    hello: Any = None
    """The pending `hello` call's reference until the worker has started."""
    info: WorkerInfo | None = None
    dead: str | None = None
    """Why the worker is gone (None while it serves)."""
    live: int = 0
    """Episodes placed here and not yet finished or aborted."""
    episodes: int = 0
    """Episodes finished here."""
    sides: set[str] = field(default_factory=set)
    trees: set[str] = field(default_factory=set)
    tasks: set[str] = field(default_factory=set)
    prepare_lock: threading.Lock = field(default_factory=threading.Lock)
    on_lost: Callable[[WorkerHandle, str], None] | None = None

    @property
    def ready(self) -> bool:
        return self.info is not None and self.dead is None

    def call(self, method: str, *args: Any, deadline: float) -> Any:
        """`method(*args)` on the worker, within `deadline` seconds; WorkerLost when it is gone."""
        ray = import_ray()
        if self.dead is not None:
            raise WorkerLost(f"worker on node {self.node[:8]} is gone: {self.dead}")
        ref = getattr(self.actor, method).remote(*args)
        try:
            return ray.get(ref, timeout=deadline)
        except ray.exceptions.GetTimeoutError:
            why = f"`{method}` did not answer within {deadline:.0f} s"
        except ray.exceptions.RayTaskError:
            raise  # the remote code's own exception (also an instance of its class)
        except ray.exceptions.RayError as e:
            why = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        if self.on_lost is not None:
            self.on_lost(self, why)
        raise WorkerLost(f"worker on node {self.node[:8]}: {why}")


class WorkerPool:
    """The workers of one driver on one cluster, kept for the life of a job (every rollout call)."""

    def __init__(self, cluster: ClusterConfig, sandbox: SandboxConfig | None = None, *,
                 nodes: Sequence[str] | None = None, start_seconds: float = START_SECONDS) -> None:
        """sandbox: the workers' sandboxes (backend, image; default local); nodes: use only these
        node ids (a benchmark's 1, 2, 3 nodes of one cluster)."""
        sandbox = sandbox if sandbox is not None else SandboxConfig()
        sandbox.validate()
        cluster.validate()
        assert cluster.address is not None
        self.sandbox = sandbox
        self.cluster = cluster
        self.ray = connect(cluster.address)
        self.run = uuid.uuid4().hex[:8]
        self.nodes = set(nodes) if nodes is not None else None
        self.start_seconds = start_seconds
        self._workers: dict[str, WorkerHandle] = {}
        self._failed: dict[str, str] = {}
        self._lock = threading.RLock()
        self._last_refresh = 0.0
        self._empty_since: float | None = None
        self._trees: dict[tuple[str, str | None], tuple[str, Any]] = {}
        self._tokens: dict[int, tuple[Task, str, str, Task]] = {}
        self._closed = False
        self._users = 1
        self._shared = False
        self._actor_class = self.ray.remote(EnvWorker)
        self.refresh(force=True)
        self.wait_started(start_seconds)
        if not any(w.ready for w in self._workers.values()):
            for w in self._workers.values():
                if w.hello is not None and w.dead is None:
                    self._not_started(w)
            message = self._none_message()
            self._closed = True
            self._stop(list(self._workers.values()))   # workers still starting would hold their nodes' slots
            raise ClusterError(message)

    @classmethod
    def shared(cls, cluster: ClusterConfig, sandbox: SandboxConfig) -> WorkerPool:
        """This process's pool on the cluster `cluster.address` names, opened on first use and closed
        when its last user closes it. A process drives one cluster at a time, with one backend and
        image: ClusterError for another (its workers would wait for slots this one holds)."""
        sandbox.validate()
        cluster.validate()
        assert cluster.address is not None
        # Opening is serialised by a lock of its own, which nothing the constructor calls takes;
        # _SHARED_LOCK only guards the list and the user count and is never held while calling out
        # (a failed open used to close itself under it, and hung on the non-reentrant lock).
        with _OPENING_LOCK:
            with _SHARED_LOCK:
                pool = _SHARED[0] if _SHARED else None
                if pool is not None:
                    pool._users += 1
            if pool is None:
                pool = cls(cluster, sandbox)   # ClusterError, its workers stopped, when none can start
                pool._shared = True
                with _SHARED_LOCK:
                    _SHARED.append(pool)
                return pool
        address = pool.ray.get_runtime_context().gcs_address
        backend, image = pool.sandbox.backend, pool.sandbox.image
        why = None
        if not _same_cluster(cluster.address, address):
            why = (f"--ray {cluster.address}: this process already drives the cluster at {address}; "
                   "one process drives one cluster at a time")
        elif (backend, image) != (sandbox.backend, sandbox.image):
            why = (f"--ray {cluster.address}: this process already runs workers on the cluster with "
                   f"backend {backend} and image {image}; it cannot start others with backend "
                   f"{sandbox.backend} and image {sandbox.image} while it holds their slots")
        if why is not None:
            pool.close()   # the use counted above
            raise ClusterError(why)
        return pool

    # ---- membership

    def _none_message(self) -> str:
        failed = "; ".join(f"node {n[:8]}: {why}" for n, why in self._failed.items())
        if failed:
            return f"--ray {self.cluster.address}: no worker could start ({failed})"
        slots = f"--resources='{{\"{RESOURCE}\": 8}}'"
        return (f"--ray {self.cluster.address}: no node of the cluster offers `{RESOURCE}` slots (the sandboxes a "
                f"node may run at once), so no episode could run; start each worker node with `ray start "
                f"--address=HEAD:PORT {slots}` (or the head itself with `ray start --head {slots}`)")

    def refresh(self, force: bool = False) -> None:
        """Start workers on nodes that joined; forget those whose node died; note started ones."""
        now = time.monotonic()
        if self._closed or (not force and now - self._last_refresh < REFRESH_SECONDS):
            return
        self._last_refresh = now
        nodes = self.ray.nodes()
        alive = {n["NodeID"]: n for n in nodes if n.get("Alive")}
        with self._lock:
            for w in list(self._workers.values()):
                if w.dead is None and w.node not in alive:
                    self._lose(w, "its node left the cluster")
            for node_id, n in alive.items():
                slots = int((n.get("Resources") or {}).get(RESOURCE, 0))
                # A node whose worker this run lost (killed after a missed deadline) gets no
                # second one; a node that restarts joins under a new id.
                known = node_id in self._failed or node_id in self._workers
                if slots >= 1 and not known and (self.nodes is None or node_id in self.nodes):
                    self._workers[node_id] = self._spawn(node_id, slots)
            self._note_started()

    def _spawn(self, node_id: str, slots: int) -> WorkerHandle:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: PLC0415 - as ray

        pool_size = 2 * slots
        spec = WorkerSpec(run=self.run, slots=slots, pool_size=pool_size, backend=self.sandbox.backend,
                          image=self.sandbox.image, code=code_digest())
        actor = self._actor_class.options(
            num_cpus=0, resources={RESOURCE: slots}, max_concurrency=2 * pool_size + 16, max_restarts=0,
            max_task_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        ).remote(spec)
        w = WorkerHandle(actor=actor, node=node_id, slots=slots, pool_size=pool_size, order=len(self._workers),
                         on_lost=lambda handle, why: self._lose(handle, why))
        w.hello = (actor.hello.remote(), time.monotonic())
        log.info("starting a worker on node %s (%d slots)", node_id[:8], slots)
        return w

    def _note_started(self) -> None:
        pending = [w for w in self._workers.values() if w.hello is not None and w.dead is None]
        if not pending:
            return
        done, _ = self.ray.wait([w.hello[0] for w in pending], num_returns=len(pending), timeout=0)
        done = set(done)
        for w in pending:
            ref, since = w.hello
            if ref in done:
                w.hello = None
                try:
                    w.info = self.ray.get(ref)
                    log.info("worker on node %s (%s, %s backend, %d slots) ready", w.node[:8], w.info.host,
                             w.info.backend, w.slots)
                except Exception as e:  # noqa: BLE001 - a node that cannot serve is left out, named
                    self._failed[w.node] = str(e).strip().splitlines()[-1][:400]
                    w.dead = "could not start"
                    log.warning("no worker on node %s: %s", w.node[:8], self._failed[w.node])
            elif time.monotonic() - since > self.start_seconds:
                self._not_started(w)

    def _not_started(self, w: WorkerHandle) -> None:
        self._failed[w.node] = f"did not start within {self.start_seconds:.0f} s (its {RESOURCE} slots held by " \
                               "another job?)"
        self._lose(w, self._failed[w.node])

    def wait_started(self, timeout: float) -> None:
        """Wait until every worker being started has started or failed (at most `timeout` s)."""
        start = time.monotonic()
        end, said = start + timeout, start
        while time.monotonic() < end:
            self.refresh()   # a node that dies meanwhile takes its starting worker with it
            with self._lock:
                self._note_started()
                waiting = [w for w in self._workers.values() if w.hello is not None and w.dead is None]
            if not waiting:
                return
            if time.monotonic() - said >= PROGRESS_SECONDS:   # a worker's first start imports for a while
                said = time.monotonic()
                log.info("waiting for %d worker(s) to start (%.0f s of at most %.0f s)", len(waiting),
                         said - start, timeout)
            time.sleep(0.1)

    def _lose(self, w: WorkerHandle, why: str) -> None:
        with self._lock:
            if w.dead is not None:
                return
            w.dead = why
        log.warning("worker on node %s lost: %s", w.node[:8], why)
        try:
            self.ray.kill(w.actor, no_restart=True)
        except Exception as e:  # noqa: BLE001 - already gone
            log.debug("killing the worker on node %s: %s", w.node[:8], e)

    # ---- slots

    def capacity(self) -> int:
        """Episodes the ready workers take at once (at least 1, so that a run whose nodes all died
        still tries each episode and ends it as `error` instead of waiting for ever)."""
        self.refresh()
        with self._lock:
            return max(1, sum(w.slots for w in self._workers.values() if w.ready))

    def acquire(self, failover: bool = False) -> WorkerHandle:
        """A worker for one more episode: the least loaded ready one with a free slot (with
        `failover`, or when every slot is taken, room in its failover share counts too).
        SandboxError when no worker is alive for JOIN_GRACE_SECONDS."""
        while True:
            with self._lock:
                ready = [w for w in self._workers.values() if w.ready]
                for room in ((lambda w: w.pool_size),) if failover else ((lambda w: w.slots), (lambda w: w.pool_size)):
                    free = [w for w in ready if w.live < room(w)]
                    if free:
                        w = min(free, key=lambda w: (w.live / w.slots, w.order))
                        w.live += 1
                        self._empty_since = None
                        return w
                if ready:
                    raise SandboxError("every worker's sandboxes are taken (an episode moved from a lost node "
                                       "found no room)")
                self._empty_since = self._empty_since or time.monotonic()
                if time.monotonic() - self._empty_since > JOIN_GRACE_SECONDS:
                    raise SandboxError(f"no worker node is alive (none for {JOIN_GRACE_SECONDS:.0f} s)")
            self.refresh()
            time.sleep(0.2)

    def release(self, w: WorkerHandle, finished: bool = False) -> None:
        with self._lock:
            w.live = max(0, w.live - 1)
            w.episodes += int(finished)

    # ---- what the episodes need on a worker

    def prepare(self, w: WorkerHandle, side: str | None, open_side: Callable[[WorkerHandle], None] | None,
                task: Task, deadline: float) -> str:
        """Make `w` ready for an episode of `task` in `side` (its tree, the task, the side's
        settings; no side for a TaskMap call), sending each once; returns the task's token."""
        sha, ref, token, lite = self._task_entry(task)
        with w.prepare_lock:
            if sha not in w.trees:
                w.call("add_tree", sha, ref, deadline=deadline)
                w.trees.add(sha)
            if token not in w.tasks:
                w.call("add_task", token, lite, sha, deadline=deadline)
                w.tasks.add(token)
            if side is not None and side not in w.sides:
                open_side(w)
                w.sides.add(side)
        return token

    def _task_entry(self, task: Task) -> tuple[str, Any, str, Task]:
        with self._lock:
            entry = self._tokens.get(id(task))
            if entry is not None and entry[0] is task:
                _, sha, token, lite = entry
                return sha, self._trees[_tree_key(task)][1], token, lite
            key = _tree_key(task)
            if key not in self._trees:
                sha, payload = pack_tree(task)
                self._trees[key] = (sha, self.ray.put(payload))
            sha = self._trees[key][0]
            token = uuid.uuid4().hex[:12]
            lite = portable(task)
            self._tokens[id(task)] = (task, sha, token, lite)  # holds `task`, so its id stays its own
            return sha, self._trees[key][1], token, lite

    # ---- reporting and the end

    def workers(self) -> list[WorkerHandle]:
        with self._lock:
            return list(self._workers.values())

    def stats(self) -> dict[str, dict]:
        """Per node: host, backend, slots, episodes finished there, and why it left (if it did)."""
        return {w.node: {"host": w.info.host if w.info else None, "backend": w.info.backend if w.info else None,
                         "slots": w.slots, "episodes": w.episodes, "lost": w.dead}
                for w in self.workers()}

    def close(self) -> None:
        """Shut every worker down, kill it, and sweep every live node for what the run left (a
        shared pool: when its last user closes it)."""
        with _SHARED_LOCK, self._lock:
            self._users -= 1
            if self._closed or self._users > 0:
                return
            self._closed = True
            if self._shared:
                _SHARED.remove(self)
            workers = list(self._workers.values())
        self._stop(workers)

    def _stop(self, workers: list[WorkerHandle]) -> None:
        """Shut `workers` down, kill them and sweep their nodes; called with no lock held (it
        waits on the cluster for up to SHUTDOWN_SECONDS)."""
        ray = self.ray
        shutting = [(w, w.actor.shutdown.remote()) for w in workers if w.ready]
        if shutting:
            ray.wait([r for _, r in shutting], num_returns=len(shutting), timeout=SHUTDOWN_SECONDS)
        for w in workers:
            try:
                ray.kill(w.actor, no_restart=True)
            except Exception as e:  # noqa: BLE001 - already gone
                log.debug("killing the worker on node %s: %s", w.node[:8], e)
        self._sweep([w for w in workers if w.info is not None])

    def _sweep(self, workers: list[WorkerHandle]) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: PLC0415 - as ray

        names: dict[str, list[str]] = {}
        for w in workers:
            names.setdefault(w.node, []).append(w.info.directory.rsplit("/", 1)[-1])
        alive = {n["NodeID"] for n in self.ray.nodes() if n.get("Alive")}
        sweeper = self.ray.remote(sweep_node)
        refs = [sweeper.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
                .remote(dirs, 15.0) for node, dirs in names.items() if node in alive]
        try:
            self.ray.get(refs, timeout=SHUTDOWN_SECONDS)
        except Exception as e:  # noqa: BLE001 - the nodes' reapers clean up after a failed sweep
            log.warning("sweeping the worker nodes failed: %s", e)


def _same_cluster(address: str, current: str) -> bool:
    """Whether `address` ("auto", HOST:PORT or ray://HOST:PORT) names the head at `current`
    (IP:PORT, as Ray reports the connected cluster's): the same port on the same machine, a
    loopback name and the machine's own address being the same machine."""
    if address == "auto":
        return True
    host, _, port = address.removeprefix("ray://").rpartition(":")
    cur_host, _, cur_port = current.rpartition(":")
    if port != cur_port:
        return False
    try:
        ips = {socket.gethostbyname(host), socket.gethostbyname(cur_host)}
    except OSError:
        return host == cur_host
    return len(ips) == 1 or all(_local_ip(ip) for ip in ips)


def _local_ip(ip: str) -> bool:
    """Whether `ip` is an address of this machine (a socket can bind to it)."""
    try:
        with socket.socket() as s:
            s.bind((ip, 0))
    except OSError:
        return False
    return True


def _tree_key(task: Task) -> tuple[str, str | None]:
    return str(repo_path(task).resolve()), task.repo.commit if isinstance(task.repo, GitRepo) else None
