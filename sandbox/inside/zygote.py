"""The forking sandbox's interpreter (the "zygote"): `python ZYGOTE_PY PRELUDE_PY`.

Started by `sandbox.forking.ForkingSandbox` under the sandbox's bubblewrap, cgroup, uid and
rlimits. It runs the caller's prelude file once (as module `fixrl_prelude`, with its package
directory on sys.path only while it runs, so a prelude can import this package's modules), then
the prelude's `_before_fork()` if it defines one (a warm-up: its errors go to the log), then
answers requests on stdin (one JSON line each, one JSON line back on stdout): each is a fork
that runs one function of the prelude in the request's working directory, with its
environment, its output in a file and a CPU limit, and exits with the function's return
value. sandbox.forking's docstring says what it guarantees between requests and what not.

The serving loop keeps its state (descriptors, the current request) in function frames, not in
module globals a child could read. A child must look like a one-shot run of the same function
(the check vs the `test` tool): no interpreter flags (its own directory leaves sys.path here,
not by -P), the prelude module is not in its sys.modules, and its output file has no name
while it runs (an unnamed O_TMPFILE file in /tmp, copied to the request's path only after the
child and everything it started are gone). Standard library only.
"""
import ctypes
import gc
import json
import os
import signal
import sys
import time
import traceback
import types


def _others():
    me = os.getpid()
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]


def _sweep(child):
    """SIGKILL everything in the namespace but init and us; reap our child."""
    status = None
    for _ in range(2000):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if status is None and child:
            try:
                pid, st = os.waitpid(child, os.WNOHANG)
                if pid:
                    status = st
            except ChildProcessError:
                status = status if status is not None else -1
        if (status is not None or not child) and not _others():
            return status
        time.sleep(0.002)
    return status


def _clear_ipc():
    """SysV IPC objects outlive their processes (the namespace is ours until we exit)."""
    libc = ctypes.CDLL(None)
    for kind, remove in (("shm", lambda i: libc.shmctl(i, 0, None)), ("msg", lambda i: libc.msgctl(i, 0, None)),
                         ("sem", lambda i: libc.semctl(i, 0, 0))):
        try:
            with open("/proc/sysvipc/" + kind) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            remove(int(row.split()[1]))  # IPC_RMID


def _child(prelude, req, fds):
    """In the fork: output to the request's file, the request's limits, environment and
    directory, then the prelude's function."""
    null, fd = fds[2], fds[3]
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.dup2(null, 0)
    for f in fds:
        os.close(f)
    sys.modules.pop("fixrl_prelude", None)  # a one-shot run has no such module
    os.setsid()
    had = "resource" in sys.modules
    import resource  # noqa: PLC0415 - here, and gone again: a one-shot run has not imported it

    resource.setrlimit(resource.RLIMIT_CPU, (req["cpu"], req["cpu"]))
    if not had:
        del sys.modules["resource"]
    os.environ.clear()
    os.environ.update(req["env"])
    os.chdir(req["cwd"])
    return vars(prelude)[req["entry"]](**req["kwargs"])


def _open_output(path):
    """The child's output file, unnamed while the child runs (no `.fixrl-out-*` in /tmp for
    code under test to see): (descriptor, named). A filesystem without O_TMPFILE gets the
    named file at once."""
    try:
        return os.open(os.path.dirname(path), os.O_TMPFILE | os.O_RDWR, 0o600), False
    except (AttributeError, OSError):
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600), True


def _name_output(fd, path):
    """Copy the unnamed output file to its request's path (the host reads it from there); a
    file code under test planted at that path goes first. A copy, not linkat through
    /proc/self/fd: that is refused across bubblewrap's bind mount of /tmp (EXDEV)."""
    try:
        os.unlink(path)
    except OSError:
        pass
    dest = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        size, done = os.fstat(fd).st_size, 0
        while done < size:
            try:
                step = os.copy_file_range(fd, dest, size - done, done, done)
            except OSError:  # a filesystem without it: plain reads and writes
                chunk = os.pread(fd, min(size - done, 1 << 20), done)
                step = os.pwrite(dest, chunk, done) if chunk else 0
            if step <= 0:
                break
            done += step
    finally:
        os.close(dest)


def _one(prelude, req, fds):
    """One request: fork, wait (up to its timeout), sweep the namespace; the reply."""
    start = time.monotonic()
    out, named = _open_output(req["out"])
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            code = int(_child(prelude, req, (*fds, out)))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    deadline = start + req["timeout"]
    status, timed_out, pause = None, False, 0.0005
    while status is None:
        pid2, st = os.waitpid(pid, os.WNOHANG)
        if pid2:
            status = st
        elif time.monotonic() >= deadline:
            timed_out = True
            break
        else:
            time.sleep(pause)
            pause = min(pause * 2, 0.01)
    swept = _sweep(0 if status is not None else pid)
    _clear_ipc()
    try:
        if not named:
            _name_output(out, req["out"])
    except OSError:
        traceback.print_exc()  # no output file: the host reads that as no output
    finally:
        os.close(out)
    status = status if status is not None else swept
    if timed_out or status is None or status < 0:
        code = -1
    elif os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
    else:
        code = 128 + os.WTERMSIG(status)
    return {"exit_code": code, "timed_out": timed_out, "seconds": time.monotonic() - start}


def _serve(prelude, fds):
    """Answer requests until the host closes the pipe."""
    rfd, wfd = fds[0], fds[1]
    buf = b""
    while True:
        while b"\n" not in buf:
            chunk = os.read(rfd, 1 << 16)
            if not chunk:
                os._exit(0)
            buf += chunk
        line, buf = buf.split(b"\n", 1)
        reply = _one(prelude, json.loads(line), fds)
        os.write(wfd, (json.dumps(reply) + "\n").encode())
        if _others():  # survived the sweep: end the namespace with us, the next call starts anew
            os._exit(3)


def _load(path):
    """The prelude file run as module `fixrl_prelude`, compiled under its own file name; this
    package's directory is on sys.path only while it runs."""
    prelude = types.ModuleType("fixrl_prelude")
    prelude.__file__ = path
    sys.modules["fixrl_prelude"] = prelude
    lib = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, lib)
    try:
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        exec(code, vars(prelude))
    finally:
        sys.path.remove(lib)
    return prelude


def main(prelude_path):
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: same-uid processes cannot ptrace us
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != here]  # what -P would do
    os.chdir("/")
    fds = (os.dup(0), os.dup(1), os.open("/dev/null", os.O_RDWR))  # requests, replies, /dev/null
    os.dup2(fds[2], 0)
    os.dup2(fds[2], 1)
    prelude = _load(prelude_path)
    warm = vars(prelude).get("_before_fork")
    if warm is not None:  # the prelude's warm-up, if it has one
        try:
            warm()
        except BaseException:
            traceback.print_exc()
    gc.collect()
    gc.freeze()  # the prelude's objects: never scanned again by a child's collections, nor copied
    os.write(fds[1], b'{"ready": true}\n')
    _serve(prelude, fds)


if __name__ == "__main__":
    main(sys.argv[1])
