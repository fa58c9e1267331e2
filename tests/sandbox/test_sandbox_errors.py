"""Bad input and a missing daemon: clear errors that say what to do."""
from __future__ import annotations

import pytest

import fixrl.sandbox.docker as sd
from fixrl.harness.cli import main
from fixrl.sandbox import SandboxError, open_sandbox


@pytest.mark.docker
def test_missing_image(docker_available, repo):
    with pytest.raises(SandboxError, match="fixrl sandbox build-image"):
        open_sandbox(repo, backend="docker", image="fixrl-sandbox:does-not-exist")


def test_daemon_not_running(monkeypatch, repo, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/dead.sock")
    monkeypatch.setattr(sd, "_client", None)
    with pytest.raises(SandboxError, match="make docker"):
        open_sandbox(repo, backend="docker")


def test_cli_reports_a_dead_daemon(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/dead.sock")
    monkeypatch.setattr(sd, "_client", None)
    assert main(["sandbox", "cleanup"]) == 3  # an infrastructure failure, not bad input
    assert "make docker" in capsys.readouterr().err


@pytest.mark.docker
def test_dead_container_is_a_sandbox_error_not_a_hang(docker_available, repo):
    import subprocess

    with open_sandbox(repo, backend="docker") as sb:
        subprocess.run(["docker", "kill", sb.id], capture_output=True, check=True)
        with pytest.raises(SandboxError, match=r"failed.*(gone|exit)"):
            sb.exec("true", timeout=5)


@pytest.mark.docker
def test_cleanup_removes_labelled_containers(docker_available, capsys):
    """`fixrl sandbox cleanup` finds containers by label (here one session's only, so that
    containers of other tests running meanwhile are left alone)."""
    import subprocess
    import uuid

    session = f"test-{uuid.uuid4().hex[:8]}"
    cid = subprocess.run(["docker", "create", "--label", "fixrl=1", "--label",
                          f"fixrl.session={session}", "fixrl-sandbox:base", "true"],
                         capture_output=True, text=True, check=True).stdout.strip()
    try:
        assert main(["sandbox", "cleanup", "--session", session]) == 0
        assert "removed 1 fixrl container" in capsys.readouterr().out
        out = subprocess.run(["docker", "ps", "-aq", "--filter", f"id={cid}"],
                             capture_output=True, text=True).stdout
        assert out.strip() == ""
    finally:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True)
