"""The parts of the cluster path that need no cluster: what travels to a node (a task's tree and
the task itself, rebased there, materialise exactly as at home), the replay check, the call
deadlines, and the reaper that cleans up after a worker process that died."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from raykit import processes_under

from fixrl import tasks as tasks_pkg
from fixrl.envs import EnvConfig
from fixrl.envs.types import Malformed, StepResult, ToolCall
from fixrl.harness.agent.ray.envside import FILE_SECONDS, deadlines, same_observation
from fixrl.harness.agent.ray.worker import pack_tree, portable, rebase, unpack_tree
from fixrl.harness.agent.settings import ClusterConfig
from fixrl.sandbox import SandboxConfigError, cgroup, reaper
from fixrl.tasks.suites import BUILTIN_SUITE


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_task_rebased_on_its_shipped_tree_materialises_the_same(tmp_path):
    task = tasks_pkg.load_suite(BUILTIN_SUITE).tasks[0]
    sha, payload = pack_tree(task)
    assert pack_tree(task)[0] == sha  # content-addressed: the same tree, the same name
    tree = unpack_tree(tmp_path / "node", sha, payload)
    assert unpack_tree(tmp_path / "node", sha, b"never read") == tree   # unpacked once per node
    there = rebase(portable(task), tree)
    for state in ("buggy", "fixed"):
        assert _tree(tasks_pkg.materialize(there, tmp_path / f"r-{state}", state)) == \
            _tree(tasks_pkg.materialize(task, tmp_path / f"l-{state}", state))


def test_a_git_task_ships_its_commit_without_history(tmp_path):
    src = tmp_path / "src"
    (src / "tests").mkdir(parents=True)
    (src / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (src / "tests" / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n"
                                                "    assert add(1, 2) == 3\n")
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "clean"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (src / "calc.py").write_text("SECRET = 'later'\n")
    subprocess.run([*git, "commit", "-qam", "later"], check=True)
    bug = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b\n+    return a - b\n"
    task = tasks_pkg.Task.model_validate({
        "id": "g", "repo": {"git": str(src), "commit": commit}, "issue": "add is wrong", "bug": bug,
        "fix": bug.replace("-    return a + b\n+    return a - b", "-    return a - b\n+    return a + b"),
        "check": {"command": "python -m pytest -q", "files": {}}})
    sha, payload = pack_tree(task)
    tree = unpack_tree(tmp_path / "node", sha, payload)
    assert not (tree / ".git").exists() and "SECRET" not in (tree / "calc.py").read_text()
    there = rebase(portable(task), tree)
    assert _tree(tasks_pkg.materialize(there, tmp_path / "r", "buggy")) == \
        _tree(tasks_pkg.materialize(task, tmp_path / "l", "buggy"))


def test_a_replay_must_see_what_the_episode_saw():
    read = ToolCall("read", {"path": "x.py"})
    assert same_observation(read, StepResult("1: a", False), StepResult("1: a", False))
    assert not same_observation(read, StepResult("1: a", False), StepResult("1: b", False))
    assert not same_observation(read, StepResult("1: a", False), StepResult("1: a", True))
    test = ToolCall("test", {})
    passed = "Tests PASSED (exit status 0).\n3 passed in 0.05s"
    assert same_observation(test, StepResult(passed, False), StepResult(passed.replace("0.05", "0.31"), False))
    assert not same_observation(test, StepResult(passed, False),
                                StepResult("Tests FAILED (exit status 1).\n1 failed in 0.05s", False))
    search = ToolCall("search", {"pattern": "def"})
    assert same_observation(search, StepResult("a.py:1:x\nb.py:2:y", False), StepResult("b.py:2:y\na.py:1:x", False))
    assert same_observation(Malformed("bad"), StepResult("Error: bad", False), StepResult("Error: bad", False))


def test_each_call_has_a_deadline_from_its_own_limits():
    task = tasks_pkg.load_suite(BUILTIN_SUITE).tasks[0]
    d = deadlines(task, EnvConfig(tool_timeouts={"test": 7.0}), margin=3.0)
    assert d.step(ToolCall("test", {})) == 10.0
    assert d.step(ToolCall("search", {"pattern": "x"})) == task.limits.tool_timeout + 3.0
    assert d.step(ToolCall("read", {"path": "x"})) == d.step(Malformed("?")) == d.file == FILE_SECONDS + 3.0
    assert d.finish > task.check.timeout * (EnvConfig().check_retries + 1)
    assert d.start >= 3.0 + task.limits.setup_timeout * len(task.setup)


_OWNER = r'''
import sys, tempfile, threading, time
from pathlib import Path
from fixrl.sandbox import reaper
from fixrl.sandbox.local import LocalSandbox
owner, ws = Path(sys.argv[1]), Path(sys.argv[2])
reaper.write_owner(owner)
(owner / "tmp").mkdir()
tempfile.tempdir = str(owner / "tmp")
reaper.spawn_reaper(owner)
sb = LocalSandbox(ws)
threading.Thread(target=sb.exec, args=("sleep 300", 400), daemon=True).start()
time.sleep(1.0)
print("ready", flush=True)
time.sleep(600)
'''


def test_the_reaper_cleans_after_a_killed_owner(tmp_path):
    """A process holding a local sandbox with a command running is SIGKILLed: its reaper kills
    the sandbox's processes and removes its directory, then ends."""
    owner = tmp_path / "owner"
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.py").write_text("x = 1\n")
    proc = subprocess.Popen([sys.executable, "-c", _OWNER, str(owner), str(tmp_path / "ws")],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        sandboxes = list((owner / "tmp").glob("fixrl-local-*"))
        assert len(sandboxes) == 1
        busy = processes_under(owner)   # the reaper, and the sandbox's command under bubblewrap
        assert len(busy) >= 2, busy
        if not cgroup.unavailable_reason():   # the sandbox's own cgroup, where the host gives one
            assert _groups_of(proc.pid)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    end = time.monotonic() + 30
    while time.monotonic() < end and (owner.exists() or processes_under(owner) or _groups_of(proc.pid)):
        time.sleep(0.2)
    assert not owner.exists() and processes_under(owner) == [] and _groups_of(proc.pid) == []


def _groups_of(pid: int) -> list[str]:
    return [os.path.join(d, n) for d, names, _ in os.walk("/sys/fs/cgroup") for n in names
            if n.startswith(f"fixrl-{pid}-")]


def test_sweep_cleans_only_dead_owners(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    gone = tmp_path / "gone"
    gone.mkdir()
    (gone / "owner.json").write_text(json.dumps({"pid": int(dead.stdout), "start": 1, "session": None}))
    (gone / "tmp").mkdir()
    live = tmp_path / "live"
    reaper.write_owner(live)
    assert reaper.sweep(tmp_path) == ["gone"]
    assert not gone.exists() and live.exists() and reaper.owner_alive(live)
    assert reaper.alive(os.getpid(), reaper.start_time(os.getpid()))
    assert not reaper.alive(os.getpid(), (reaper.start_time(os.getpid()) or 0) + 1)  # a reused pid is not its owner


@pytest.mark.parametrize("bad", [{"retries": -1}, {"call_margin": 0}, {"address": ""}])
def test_bad_cluster_settings_name_the_field(bad):
    with pytest.raises(SandboxConfigError, match=next(iter(bad))):
        ClusterConfig(**bad).validate()


_NO_FLAG = r'''
import sys, tempfile
from fixrl.harness.cli import main
from fixrl.tasks.suites import GYM_SUITE
out = tempfile.mkdtemp()
code = main(["eval", "--policy", "oracle", "--suite", str(GYM_SUITE), "-n", "1", "-k", "1", "--no-progress",
             "--task", "gym-grade-wrong_arith", "--out", out])
print(code, "ray" in sys.modules, [m for m in sys.modules if m.startswith("fixrl.harness.agent.ray")])
'''


def test_without_the_flag_ray_is_not_imported():
    """A run without --ray takes the single-process path and never imports Ray (nor the cluster
    modules), whether or not the extra is installed."""
    res = subprocess.run([sys.executable, "-c", _NO_FLAG], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-1] == "0 False []"


def test_an_address_names_the_connected_head_however_it_is_spelt():
    """Ray reports the head it is connected to by the machine's address: a loopback or host name
    of the same machine and port is the same cluster (no reconnection, the same workers); another
    port or machine is not."""
    from fixrl.harness.agent.ray.pool import _same_cluster

    here = socket.gethostbyname(socket.gethostname())
    assert _same_cluster("auto", "10.1.2.3:6379")
    assert _same_cluster("127.0.0.1:6379", f"{here}:6379") and _same_cluster("localhost:6379", f"{here}:6379")
    assert _same_cluster("ray://127.0.0.1:6379", "127.0.0.1:6379")
    assert not _same_cluster("127.0.0.1:6380", f"{here}:6379")
    assert not _same_cluster("203.0.113.7:6379", f"{here}:6379")   # TEST-NET-3: no machine here
