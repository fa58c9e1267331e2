"""ForkingSandbox: calls forked from a long-lived interpreter, under the local sandbox's
isolation, with nothing of one call surviving into the next."""
from __future__ import annotations

import time

import pytest
from sandboxkit import SMALL, host_alive

from fixrl.sandbox import forking
from fixrl.sandbox.forking import ForkingSandbox, ZygoteDied

PRELUDE = '''
import os, sys, time, subprocess
STARTED = time.time()


def run(code, result=0):
    exec(code, dict(globals()))
    sys.stdout.flush()
    return result
'''


@pytest.fixture(scope="module")
def fsb(tmp_path_factory):
    from sandboxkit import make_repo

    repo = make_repo(tmp_path_factory.mktemp("repo"))
    with ForkingSandbox(repo, SMALL) as sb:
        if not sb.forking:
            pytest.skip("bubblewrap does not work here")
        yield sb


def call(sb, code: str, result: int = 0, **kw):
    return sb.fork_python(PRELUDE, "run", {"code": code, "result": result}, **kw)


def test_a_call_runs_in_the_workspace_with_env_and_output(fsb):
    r = call(fsb, "print(os.getcwd(), os.environ['FOO'], open('pkg/calc.py').read().split()[-1])", 3,
             env={"FOO": "bar"})
    assert (r.exit_code, r.timed_out) == (3, False)
    assert r.output.strip() == "/workspace bar 1"
    before = fsb.forks
    r = call(fsb, "raise ValueError('boom')")
    assert r.exit_code == 70 and "ValueError: boom" in r.output
    assert fsb.forks == before + 1


def test_calls_share_the_interpreter_not_their_state(fsb):
    """The prelude ran once (its start time is the same in every call); what a call changes
    in its memory is gone in the next."""
    a = call(fsb, "print(STARTED); sys.modules['marker'] = 1")
    b = call(fsb, "print(STARTED, 'marker' in sys.modules)")
    assert b.output.split() == [a.output.strip(), "False"]


def test_workspace_code_never_in_the_interpreter(fsb, tmp_path):
    """The interpreter started with the workspace on disk and never on sys.path: a module
    there that shadows the standard library is not what the prelude imported."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "subprocess.py").write_text("raise SystemExit('shadowed')\n")
    with ForkingSandbox(ws, SMALL) as sb:
        r = call(sb, "print(subprocess.__file__.startswith('/workspace'))")
    assert r.exit_code == 0 and r.output.strip() == "False"


def test_timeout_kills_the_call_and_the_next_one_runs(fsb):
    t0 = time.monotonic()
    r = call(fsb, "time.sleep(600)", timeout=1.0)
    assert r.timed_out and r.exit_code == -1
    assert time.monotonic() - t0 < 15
    assert call(fsb, "print('next')").output.strip() == "next"


def test_leftover_processes_are_swept(fsb):
    """A daemon left by one call (double fork, new session) is dead before the next starts."""
    r = call(fsb, "subprocess.Popen(['sh', '-c', 'while :; do date +%N >> /tmp/beat; sleep 0.01; done'], "
                  "start_new_session=True); time.sleep(0.2)")
    assert r.exit_code == 0
    listing = call(fsb, "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")
    pids = eval(listing.output)
    assert len(pids) == 3, pids  # bubblewrap's init, the interpreter, this call


def test_the_interpreter_cannot_be_read_or_traced(fsb):
    """Its memory and its file descriptors (the request pipe) are out of a call's reach."""
    for what in ("open('/proc/%d/mem' % os.getppid(), 'rb')", "os.listdir('/proc/%d/fd' % os.getppid())"):
        r = call(fsb, what)
        assert r.exit_code == 70 and "PermissionError" in r.output, what


def test_sysv_ipc_objects_do_not_outlive_a_call(fsb):
    make = ("import ctypes; libc = ctypes.CDLL(None); "
            "assert libc.shmget(4242, 4096, 0o1600) >= 0 and libc.msgget(4243, 0o1600) >= 0; "
            "print(len(open('/proc/sysvipc/shm').read().splitlines()))")
    assert call(fsb, make).output.strip() == "2"  # header + the segment
    r = call(fsb, "print(len(open('/proc/sysvipc/shm').read().splitlines()), "
                  "len(open('/proc/sysvipc/msg').read().splitlines()))")
    assert r.output.split() == ["1", "1"]


def test_killing_the_interpreter_is_zygote_died_then_it_restarts(fsb):
    with pytest.raises(ZygoteDied):
        call(fsb, "os.kill(os.getppid(), 9); time.sleep(5)")
    assert call(fsb, "print('again')").output.strip() == "again"
    assert host_alive()


def test_stopping_the_interpreter_is_zygote_died(fsb, monkeypatch):
    monkeypatch.setattr(forking, "REPLY_GRACE", 1.0)
    t0 = time.monotonic()
    with pytest.raises(ZygoteDied):
        call(fsb, "import signal; os.kill(os.getppid(), signal.SIGSTOP)", timeout=0.5)
    assert time.monotonic() - t0 < 10
    assert call(fsb, "print('again')").output.strip() == "again"


def test_output_is_capped(fsb):
    r = call(fsb, "sys.stdout.write('x' * 100_000)")
    assert r.truncated and "truncated" in r.output and len(r.output) < 9_000


def test_reset_and_exec_still_work(fsb, tmp_path):
    call(fsb, "open('pkg/calc.py', 'w').write('changed')")
    assert fsb.read_file("pkg/calc.py") == "changed"
    fsb.reset()
    assert "return 1" in fsb.read_file("pkg/calc.py")
    assert fsb.exec("echo hi").output.strip() == "hi"


def test_closed_sandbox_refuses_and_leaves_no_process(repo):
    sb = ForkingSandbox(repo, SMALL)
    if not sb.forking:
        sb.close()
        pytest.skip("bubblewrap does not work here")
    call(sb, "pass")
    zygote = sb._zygote
    sb.close()
    assert zygote.poll() is not None
    from fixrl.sandbox import SandboxError

    with pytest.raises(SandboxError):
        call(sb, "pass")


def test_a_failing_warm_up_is_logged_and_calls_still_run(repo):
    """`_before_fork` runs once before serving; its failure is the log's, not the calls'."""
    prelude = PRELUDE + "\nWARM = []\n\ndef _before_fork():\n    WARM.append(1)\n    raise RuntimeError('warm-up broke')\n"
    with ForkingSandbox(repo, SMALL) as sb:
        if not sb.forking:
            pytest.skip("bubblewrap does not work here")
        r = sb.fork_python(prelude, "run", {"code": "print(WARM)"})
        assert r.exit_code == 0 and r.output.strip() == "[1]"
        assert "warm-up broke" in sb._log_tail()
