"""`fixrl eval --ray ADDRESS` on a cluster started the ordinary way (`ray start --head`, no node
offering `fixrl_sandbox` slots): a clear error within seconds that says what to start, never a
hang. A real head-only Ray cluster of its own (the shared one's nodes offer slots)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from fixrl.tasks.suites import GYM_SUITE

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def plain_cluster():
    pytest.importorskip("ray")
    from fixrl.harness.agent.ray.local_cluster import LocalCluster  # noqa: PLC0415 - only with Ray

    root = Path(tempfile.mkdtemp(prefix="fixrl-plain-", dir="/tmp"))   # short: unix socket paths
    cluster = LocalCluster(root)
    try:
        yield cluster.start()
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_a_cluster_without_sandbox_slots_fails_fast_saying_what_to_start(plain_cluster):
    argv = ["eval", "--policy", "oracle", "--suite", str(GYM_SUITE), "-n", "1", "-k", "1", "--no-progress",
            "--ray", plain_cluster.address]
    code = f"import sys; from fixrl.harness.cli import main; sys.exit(main({argv!r}))"
    try:   # the old failure path waited for ever on a lock its own thread held
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=150)
    except subprocess.TimeoutExpired:
        pytest.fail("fixrl eval --ray on a cluster without sandbox slots did not return")
    assert run.returncode == 2, run.stderr[-2000:]
    err = run.stderr
    assert err.count("no node of the cluster offers `fixrl_sandbox` slots") == 1, err[-2000:]
    assert "ray start --head --resources='{\"fixrl_sandbox\": 8}'" in err
    assert "Traceback" not in err
