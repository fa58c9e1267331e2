"""LocalCluster: a real multi-node Ray cluster of `ray start` processes on this one machine.

    with LocalCluster(tmp_dir) as cluster:          # `ray start --head` (no sandbox slots)
        a = cluster.add_node(slots=2)               # `ray start --address=...` with its resources
        b = cluster.add_node(slots=2, backend="docker")
        rollouts = open_rollouts(suite, env, sandbox, ClusterConfig(cluster.address))
        cluster.kill_node(a)                        # SIGKILL its raylet and everything under it

For the tests and `fixrl bench rollout --ray`. Every node gets its own ports, its own fixrl root
(`FIXRL_RAY_ROOT`, as separate machines have separate disks) and its own environment; the
cluster's processes are found by what belongs to it alone (its directory, its head's address)
and stopped by their ids, never by name: `ray stop` would stop every Ray cluster of the machine.

A real cluster runs one `ray start` on each machine instead (README: scale-out).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from fixrl.harness.agent.ray.worker import BACKEND_ENV, ROOT_ENV

RESOURCE = "fixrl_sandbox"


class LocalClusterError(RuntimeError):
    """A `ray start` of the local cluster failed (its output is in the message)."""


@dataclass
class LocalNode:
    node_id: str
    raylet_pid: int
    slots: int
    root: Path
    """The node's FIXRL_RAY_ROOT."""
    backend: str | None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _procs() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every readable process."""
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            cmd = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        out[int(entry.name)] = (ppid, cmd)
    return out


def _with_descendants(seeds: set[int], procs: dict[int, tuple[int, str]]) -> set[int]:
    found, frontier = set(seeds), list(seeds)
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    while frontier:
        for kid in children.get(frontier.pop(), []):
            if kid not in found:
                found.add(kid)
                frontier.append(kid)
    return found


def _ancestors(pid: int, procs: dict[int, tuple[int, str]]) -> set[int]:
    """`pid` and the processes above it (never to be stopped with the cluster)."""
    out = set()
    while pid > 1 and pid not in out:
        out.add(pid)
        pid = procs.get(pid, (0, ""))[0]
    return out


def _kill(pids: set[int], grace: float) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        end = time.monotonic() + grace
        while time.monotonic() < end and any(Path(f"/proc/{p}").exists() and not _zombie(p) for p in pids):
            time.sleep(0.05)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2] == "Z"
    except (OSError, IndexError):
        return True


class LocalCluster:
    def __init__(self, root: Path, *, object_store_mb: int = 100) -> None:
        self.root = Path(root).resolve()
        self.ray_dir = self.root / "ray"
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.object_store_mb = object_store_mb
        self.nodes: list[LocalNode] = []
        self._ray = str(Path(sys.executable).with_name("ray"))
        self._started = False

    def _env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        # A node may take its time to register on a loaded machine (Ray's own limit is 30 s).
        env = {"RAY_raylet_start_wait_time_s": "180", **os.environ, "RAY_USAGE_STATS_ENABLED": "0", **(extra or {})}
        env.pop("RAY_ADDRESS", None)
        return env

    def _ray_start(self, args: list[str], env: dict[str, str]) -> None:
        common = ["--num-cpus=1", f"--object-store-memory={self.object_store_mb << 20}",
                  f"--dashboard-agent-listen-port={free_port()}", f"--dashboard-agent-grpc-port={free_port()}",
                  f"--runtime-env-agent-port={free_port()}", f"--metrics-export-port={free_port()}",
                  "--disable-usage-stats"]
        res = subprocess.run([self._ray, "start", *args, *common], check=False, env=env, capture_output=True, text=True,
                             timeout=300)
        if res.returncode != 0:
            raise LocalClusterError(f"ray start {' '.join(args)} failed ({res.returncode}):\n"
                                    f"{(res.stdout + res.stderr)[-3000:]}")

    def start(self) -> LocalCluster:
        """The head node: no sandbox slots (the driver's machine), no dashboard."""
        self.ray_dir.mkdir(parents=True, exist_ok=True)
        self._started = True
        self._ray_start(["--head", f"--port={self.port}", "--node-ip-address=127.0.0.1", "--include-dashboard=false",
                         f"--ray-client-server-port={free_port()}", f"--temp-dir={self.ray_dir}",
                         "--resources={}"], self._env())
        return self

    def add_node(self, slots: int, *, backend: str | None = None, env: dict[str, str] | None = None) -> LocalNode:
        """A worker node with `slots` sandbox slots, its own fixrl root and (optionally) its own
        sandbox backend; returns once its raylet runs."""
        index = len(self.nodes) + 1
        root = self.root / f"node{index}"
        root.mkdir(parents=True, exist_ok=True)
        extra = {ROOT_ENV: str(root), **(env or {})}
        if backend is not None:
            extra[BACKEND_ENV] = backend
        before = {n.raylet_pid for n in self.nodes} | self._raylets().keys()
        self._ray_start([f"--address={self.address}", "--node-ip-address=127.0.0.1",
                         f"--resources={json.dumps({RESOURCE: slots})}"], self._env(extra))
        new = {pid: nid for pid, nid in self._raylets().items() if pid not in before}
        if len(new) != 1:
            raise LocalClusterError(f"could not tell the new node's raylet among {sorted(new)}")
        ((pid, node_id),) = new.items()
        node = LocalNode(node_id=node_id, raylet_pid=pid, slots=slots, root=root, backend=backend)
        self.nodes.append(node)
        return node

    def _raylets(self) -> dict[int, str]:
        out = {}
        for pid, (_, cmd) in _procs().items():
            if "/raylet " in cmd and str(self.ray_dir) in cmd and "--head" not in cmd:
                nid = next((a.split("=", 1)[1] for a in cmd.split() if a.startswith("--node_id=")), None)
                if nid:
                    out[pid] = nid
        return out

    def node_pids(self, node: LocalNode) -> set[int]:
        """The node's raylet and every process under it (its workers, its agents)."""
        return _with_descendants({node.raylet_pid}, _procs())

    def kill_node(self, node: LocalNode) -> None:
        """SIGKILL every process of the node at once (a machine that dies, as far as Ray sees)."""
        _kill(self.node_pids(node), grace=0.0)

    def wait_gone(self, node: LocalNode, timeout: float = 90.0) -> bool:
        """Wait until the cluster has marked a killed node dead (its heartbeats missed, ~15 s), so
        that a driver that looks next does not place work there; needs this process connected to
        the cluster (False when it is not, or the node is still listed alive after `timeout`)."""
        ray = sys.modules.get("ray")
        if ray is None or not ray.is_initialized():
            return False
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if not any(n["NodeID"] == node.node_id and n.get("Alive") for n in ray.nodes()):
                return True
            time.sleep(0.5)
        return False

    def stop(self) -> None:
        """Stop every process of this cluster (found by its directory and its head's address)."""
        if not self._started:
            return
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized() and \
                str(ray.get_runtime_context().gcs_address).endswith(f":{self.port}"):
            ray.shutdown()  # this process is a driver of the cluster: leave before it goes
        procs = _procs()
        marks = (str(self.root), f"{self.address} ", f"={self.address}", f"127.0.0.1:{self.port}")
        mine = _ancestors(os.getpid(), procs)
        seeds = {pid for pid, (_, cmd) in procs.items() if pid not in mine and any(m in cmd for m in marks)}
        _kill(_with_descendants(seeds, procs) - mine, grace=5.0)
        self._started = False
        shutil.rmtree(self.ray_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
