"""The supervisor: the one process of the check that never imports repository code. It forks
the judged process (guard, then pytest), reads its events, writes the report and prints its
frame (the check package's docstring says how a verdict is made)."""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import select
import shutil
import sys
import time
import traceback
import types

import pytest

from ..env_plugins import environment_plugins
from ..warmup import preload_pytest, warm_pytest
from .addopts import repository_addopts
from .base import EVENTS_NAME, EXIT_GRACE, FRAME_TAG, JUNIT_NAME, LAUNCHER_PREFIX, REPORT_NAME, _abspath
from .guard import _install_guard, _watched_classes
from .plugin import _Plugin
from .verdict import build_report

preload_pytest()  # imported by every run anyway: before any fork, not in each check


def supervise(args, workdir, pythonpath=(), changed=None, hidden=(), guard=True, own=None, originals=None,
              addopts=None, select=True):
    """Run pytest with `args` on the working directory in a judged child process; write the
    report (see the module docstring) and print its frame last; the child's exit status.
    `changed`: repository path -> guard categories its original uses; `hidden`: the check's
    own files (repository paths); `guard`: False runs without the audit hook and wrappers
    (only `fixrl bench check` does, to measure what the guard costs); `own`: unchanged
    repository files -> the categories they perform themselves (see `_attribute`);
    `originals`: changed files -> class qualname -> the original comparison methods' sources
    (`equal._original_in_mro`); `addopts`: the command's own `-o addopts=` value, None when it
    has none (the repository's configuration then gives them: `addopts.repository_addopts`);
    `select`: False when the run names the tests it judges (they are never deselected)."""
    _make_private(workdir)
    args = [*repository_addopts(args, os.getcwd(), addopts, select), *args]
    fifo = os.path.join(workdir, EVENTS_NAME)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    hold = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # no EOF between the child's writes
    out_r, out_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the judged process
        code = 70
        try:
            code = _judged(args, workdir, pythonpath, changed or {}, hidden, out_w, guard, own or {}, originals or {})
        except BaseException:  # noqa: BLE001 - the judged run's own crash, shown in its output
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(out_w)
    try:
        events, status = _collect(pid, rfd, out_r)
    finally:
        for fd in (rfd, hold, out_r):
            os.close(fd)
    report = build_report(events, status)
    body = json.dumps(report, sort_keys=True).encode()
    fd = os.open(os.path.join(workdir, REPORT_NAME), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(body)
    sys.stdout.flush()
    sys.stderr.flush()
    _write_all(1, b"\n\x00%s %s %d\x00\n" % (FRAME_TAG.encode(), hashlib.sha256(body).hexdigest().encode(),
                                              len(body)))
    return report["exit_code"]


def _make_private(workdir):
    os.makedirs(workdir, mode=0o700, exist_ok=True)
    os.chmod(workdir, 0o700)
    for name in os.listdir(workdir):  # the launcher's files go as soon as they have been read
        if name.startswith(LAUNCHER_PREFIX):
            shutil.rmtree(os.path.join(workdir, name))
    os.mkfifo(os.path.join(workdir, EVENTS_NAME), 0o600)
    # Created here, so nothing else (a FIFO, a link) can stand at the JUnit path when pytest
    # writes it; removing or replacing it is tampering.
    os.close(os.open(os.path.join(workdir, JUNIT_NAME), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:  # non-dumpable: same-uid code cannot open /proc/<supervisor>/fd/1 or ptrace it
        import ctypes  # noqa: PLC0415 - only the supervisor needs it, before any code under test runs

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except Exception:  # noqa: BLE001 - a forking sandbox's interpreter already is
        pass


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _collect(pid, rfd, out_r):
    """Forward the judged process's output (NUL bytes dropped) and read its events until it
    exited; (events, wait status or None)."""
    events, pending, status, exited_at = [], b"", None, None
    os.set_blocking(out_r, False)
    out_open = True
    wait = 0.0005
    while True:
        fds = [rfd] + ([out_r] if out_open else [])
        # Output open and the process running: wake on what it writes. Its output closed (it is
        # exiting) or it exited (leftovers may still write): poll, soon.
        if out_open and status is None:
            timeout = 0.02
        else:
            timeout, wait = wait, min(wait * 2, 0.01)
        ready, _, _ = select.select(fds, [], [], timeout)
        if rfd in ready:
            pending = _read_events(rfd, pending, events)
        if out_r in ready:
            out_open = _forward(out_r)
        if status is None:
            got, st = os.waitpid(pid, os.WNOHANG)
            if got:
                status, exited_at = st, time.monotonic()
        if status is not None and (not out_open or time.monotonic() - exited_at > EXIT_GRACE):
            _read_events(rfd, pending + b"\n", events)
            return events, status


def _read_events(fd, pending, events):
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        pending += chunk
    *lines, pending = pending.split(b"\n")
    for line in lines:
        if line.strip():
            try:
                events.append(json.loads(line))
            except ValueError:
                events.append({"e": "garbled"})
    return pending


def _forward(fd):
    try:
        chunk = os.read(fd, 1 << 16)
    except BlockingIOError:
        return True
    if not chunk:
        return False
    _write_all(1, chunk.replace(b"\x00", b""))
    return True


def _judged(args, workdir, pythonpath, changed, hidden, out_w, guard, own, originals):
    """In the forked child: output to the supervisor's pipe only, the guard, then pytest."""
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    os.closerange(3, 1 << 20)  # the FIFO's ends and every descriptor of the supervisor's
    root = _abspath(os.getcwd(), "/")
    spec = {
        "root": root, "workdir": _abspath(workdir, root),
        "changed": {_abspath(p, root): frozenset(c) for p, c in changed.items()},
        "hidden": {_abspath(p, root) for p in hidden},
        "own": {_abspath(p, root): frozenset(c) for p, c in own.items()},
        "originals": {_abspath(p, root): classes for p, classes in originals.items()},
    }
    plugin = _Plugin()
    plugin.emit = _install_guard(spec, active=guard)
    return _run_pytest(args, pythonpath, plugin)


def _clean_env():
    # Variables a shell sets (a one-shot run starts from `bash -c`, a forked one does not) go,
    # so that the environment is the same however the runner was started.
    for key in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PWD", "OLDPWD", "SHLVL", "_"):
        os.environ.pop(key, None)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    sys.dont_write_bytecode = True


def _environment_plugin_modules():
    """The environment's pytest plugins (`env_plugins`), imported now: before the workspace is
    on sys.path, so neither a module nor an entry point the workspace holds can stand in for
    one (`-p NAME` would look NAME up among the entry points on sys.path, the workspace's too)."""
    return [importlib.import_module(name) for name in environment_plugins()]


_CONFIGURES = {}
"""Environment plugin module name -> its own pytest_configure (a warm-up's run bracketed it)."""


def _run_pytest(args, pythonpath, plugin):
    _clean_env()
    extra = _environment_plugin_modules()
    for module in extra:
        configure = _CONFIGURES.setdefault(module.__name__, getattr(module, "pytest_configure", None))
        if configure is not None:
            module.pytest_configure = plugin.bracketed(configure)
    sys.path[0:0] = [os.getcwd(), *(_abspath(p, os.getcwd()) for p in pythonpath)]
    # The same argv whatever started the runner (a launcher's config, a zygote's prelude): no
    # check file's name, no marker of which run this is; the same for the interpreter's own
    # argv and its __main__ (the launcher's module, or the zygote's).
    sys.argv[:] = [pytest.__file__]
    if getattr(sys, "orig_argv", None):  # Python 3.10+ (an environment's may be older)
        sys.orig_argv[:] = [sys.orig_argv[0], pytest.__file__]
    sys.modules["__main__"] = types.ModuleType("__main__")
    code = pytest.main(list(args), plugins=[plugin, *extra])
    sys.stdout.flush()
    sys.stderr.flush()
    return int(code)


def before_fork():
    """In a forking sandbox's interpreter, once: the pytest warm-up (`warmup.warm_pytest`) with
    the check's own plugin and arguments, without the guard."""
    warm_pytest(lambda test, tmp: _run_pytest(["-q", test, "-p", "no:cacheprovider", "--junitxml=" + tmp + "/j.xml"],
                                              (), _Plugin()), "t/test_fixrl_warm.py")


def launch(config_json):
    """The one-shot launcher's entry: `python LAUNCHER CONFIG_JSON` (see tasks.check.run)."""
    config = json.loads(config_json)
    here = _abspath(config["workdir"], os.getcwd())
    # The launcher's directories (its package's copy, in the private directory) leave sys.path.
    sys.path[:] = [p for p in sys.path if not (_abspath(p or ".", os.getcwd()) + "/").startswith(here + "/")]
    return supervise(**config)


_watched_classes()  # once, at import: a forking sandbox's interpreter does it before it forks
