"""Attacks from inside a sandbox: each is contained, the host and the other sandbox are
unaffected, and the sandbox is usable afterwards (or cleanly replaced)."""
from __future__ import annotations

import os
import time

import pytest
from sandboxkit import host_alive, leftovers

from fixrl.sandbox import WORKDIR

FORK_BOMB = ("python -c \"import os, time\nwhile True:\n    try:\n        os.fork()\n"
             "    except OSError:\n        time.sleep(0.01)\"")


def still_fine(attacker, bystander, repo) -> None:
    assert host_alive()
    assert bystander.exec("echo ok", timeout=10).output == "ok\n"
    attacker.reset()
    r = attacker.exec("python -m pytest -q", timeout=60)
    assert r.exit_code == 0, r.output
    assert leftovers(attacker) == []


def test_fork_bomb(attacker, bystander, repo):
    r = attacker.exec(FORK_BOMB, timeout=3)
    assert r.timed_out
    still_fine(attacker, bystander, repo)


def test_background_fork_bomb(attacker, bystander, repo):
    r = attacker.exec(f"({FORK_BOMB} >/dev/null 2>&1 &); sleep 1; echo started", timeout=10)
    assert "started" in r.output
    # the next call still runs (the process table of this sandbox is full, not the host's)
    out = attacker.exec("echo next", timeout=10).output
    assert "next" in out.splitlines()
    if "process limit" in out:  # the bomb is still trying: the note says the limit was hit
        assert "process or thread start(s) were refused" in out or "were killed" in out
    still_fine(attacker, bystander, repo)


def test_memory_bomb(attacker, bystander, repo):
    r = attacker.exec("python -c \"a = [b'x' * (1 << 20) for _ in range(2048)]\"", timeout=30)
    assert r.exit_code != 0 and not r.timed_out
    still_fine(attacker, bystander, repo)


def test_infinite_loop(attacker, bystander, repo):
    t = time.monotonic()
    r = attacker.exec("python -c 'while True: pass'", timeout=1)
    assert r.timed_out and time.monotonic() - t < 10
    still_fine(attacker, bystander, repo)


def test_huge_print(attacker, bystander, repo):
    r = attacker.exec("python -c \"import sys\nfor _ in range(100): sys.stdout.write('x' * 1_000_000)\"",
                      timeout=60)
    assert r.truncated and len(r.output) < attacker.limits.max_output_bytes + 200
    still_fine(attacker, bystander, repo)


def test_no_network(attacker, bystander, repo):
    r = attacker.exec(
        "python -c \"import socket\n"
        "for host in [('1.1.1.1', 80), ('8.8.8.8', 53), ('172.17.0.1', 2375)]:\n"
        "    try:\n        socket.create_connection(host, timeout=2); print('CONNECTED', host)\n"
        "    except OSError as e:\n        print('blocked', e)\n"
        "try:\n    socket.getaddrinfo('pypi.org', 443); print('RESOLVED')\n"
        "except OSError as e:\n    print('blocked', e)\"", timeout=30)
    assert "CONNECTED" not in r.output and "RESOLVED" not in r.output, r.output
    assert r.output.count("blocked") == 4, r.output
    r = attacker.exec("python -c \"import socket; print(socket.if_nameindex())\"", timeout=10)
    assert "eth" not in r.output, r.output  # only loopback
    still_fine(attacker, bystander, repo)


def test_writing_outside_the_workspace(attacker, bystander, repo, tmp_path):
    host_file = tmp_path / "host.txt"
    host_file.write_text("original")
    os.chmod(tmp_path, 0o777)
    os.chmod(host_file, 0o666)  # even a world-writable host file is out of reach
    r = attacker.exec(f"for p in /usr/x /etc/x /x /var/x /home/x {host_file} {repo}/pkg/calc.py; do "
                      f"echo pwned > $p 2>/dev/null && echo WROTE $p; done; echo done", timeout=10)
    assert "WROTE" not in r.output, r.output
    assert host_file.read_text() == "original"
    assert "pwned" not in (repo / "pkg" / "calc.py").read_text()
    for p in ("/usr/x", "/etc/x", "/x"):
        assert not os.path.exists(p)
    assert attacker.exec(f"echo ok > {WORKDIR}/inside && echo ok > /tmp/inside && cat inside").output == "ok\n"
    still_fine(attacker, bystander, repo)


def test_reading_host_files(attacker, bystander, repo, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    os.chmod(secret, 0o644)
    this_file = os.path.abspath(__file__)  # the host's source tree is not visible
    r = attacker.exec(f"cat {secret} /etc/shadow /root/.bash_history {this_file} 2>&1; "
                      f"cat /proc/1/environ 2>&1 | head -c 200", timeout=10)
    assert "TOPSECRET" not in r.output
    assert "root:" not in r.output  # /etc/shadow entries
    assert "still_fine" not in r.output
    still_fine(attacker, bystander, repo)


def test_killing_everything_from_inside(attacker, bystander, repo):
    """`kill -9 -1` and killing PID 1 (the Docker exec server): the sandbox answers after."""
    attacker.exec("kill -9 -1; kill -9 1; python -c 'import os; os.kill(1, 9)'; echo survived",
                      timeout=10)
    assert attacker.exec("echo still here", timeout=10).output == "still here\n"
    assert host_alive()
    if hasattr(attacker, "id"):  # Docker: same container, same server (PID 1) answering
        assert attacker._rpc({"op": "ping"}, 5)["pid"] == 1
    still_fine(attacker, bystander, repo)


def test_ptrace_of_the_server_is_denied(attacker, repo):
    if not hasattr(attacker, "id"):
        pytest.skip("Docker only: the local backend has no server process")
    r = attacker.exec("cat /proc/1/mem 2>&1 | head -c 100; ls -l /proc/1/fd 2>&1 | head -3", timeout=10)
    assert "Permission denied" in r.output, r.output
