"""Files that are not files: a FIFO, a Unix socket, a device, a link to a device, planted by code
in the sandbox, are refused by every backend's read_file (and skipped by changed_files)
without blocking; nothing a host thread does waits on them."""
from __future__ import annotations

import threading

import pytest

from fixrl.sandbox import NotRegularFileError, open_sandbox
from fixrl.sandbox.forking import ForkingSandbox

PLANT = ("mkfifo /workspace/fifo /tmp/fifo && ln -s /dev/zero /workspace/zero && ln -s /dev/zero /tmp/zero && "
         "python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"/workspace/sock\")'")


def _within(seconds: float, fn):
    """fn()'s result or exception, raising AssertionError if it has not returned in time (a
    blocked read would hang the host thread forever)."""
    box: list = []

    def run():
        try:
            box.append(("ok", fn()))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box.append(("raised", e))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert box, f"{fn} blocked for {seconds}s"
    return box[0]


@pytest.fixture(params=["local", "forking", pytest.param("docker", marks=pytest.mark.docker)])
def planted(request, repo):
    if request.param == "docker":
        request.getfixturevalue("docker_available")
    sb = ForkingSandbox(repo) if request.param == "forking" else open_sandbox(repo, backend=request.param)
    try:
        res = sb.exec(PLANT, timeout=30)
        assert res.exit_code == 0, res.output
        yield sb
    finally:
        sb.close()


@pytest.mark.parametrize("path", ["fifo", "/tmp/fifo", "sock", "zero", "/tmp/zero"])
def test_read_file_refuses_without_blocking(planted, path):
    kind, value = _within(20, lambda: planted.read_file(path))
    assert kind == "raised", f"{path} was read: {value!r}"[:200]
    # a link leaving the sandbox is refused before it is opened; everything else by its type
    assert isinstance(value, (NotRegularFileError, PermissionError)), repr(value)


def test_changed_files_skips_them_without_blocking(planted):
    kind, changed = _within(30, planted.changed_files)
    assert kind == "ok", changed
    assert "fifo" not in changed and "sock" not in changed
    assert changed.get("zero") == "/dev/zero"  # a symlink's change is its target text, never the device
