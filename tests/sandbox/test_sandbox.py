"""The Sandbox contract on both backends: exec, timeouts, output caps, files, reset."""
from __future__ import annotations

import os
import shutil
import time

import pytest
from sandboxkit import leftovers, make_repo

from fixrl.sandbox import WORKDIR, ExecResult, Sandbox, SandboxError, open_sandbox


def test_exec_runs_pytest_in_workdir(sb):
    assert isinstance(sb, Sandbox)
    r = sb.exec("pwd && python -m pytest -q test_calc.py", timeout=60)
    assert isinstance(r, ExecResult)
    assert r.exit_code == 0, r.output
    assert "1 passed" in r.output
    expected = sb.ws if getattr(sb, "isolation", None) == "none" else WORKDIR
    assert r.output.splitlines()[0] == expected
    assert not r.timed_out and not r.truncated and r.seconds > 0
    assert sb.exec("./run.sh").output == "ran\n"  # the executable bit survived the copy


def test_exec_reports_exit_status_and_both_streams(sb):
    r = sb.exec("echo out; echo err >&2; exit 3", timeout=10)
    assert r.exit_code == 3
    assert "out" in r.output and "err" in r.output
    r = sb.exec("python -c 'import os; os.kill(os.getpid(), 9)'", timeout=10)
    assert r.exit_code == 137  # killed by a signal: 128 + 9, as a shell reports it


def test_timeout_kills_the_whole_group(sb):
    t = time.monotonic()
    r = sb.exec("sleep 30 & sleep 30; echo never", timeout=1)
    assert r.timed_out and r.exit_code == -1
    assert "never" not in r.output
    assert time.monotonic() - t < 10
    assert sb.exec("echo again", timeout=10).output == "again\n"
    assert leftovers(sb) == []


def test_output_is_capped_with_a_marker(sb):
    cap = sb.limits.max_output_bytes
    r = sb.exec("python -c \"import sys; sys.stdout.write('a' * 1000 + 'x' * 10_000_000 + 'z' * 1000)\"",
                timeout=60)
    assert r.exit_code == 0
    assert r.truncated
    assert "bytes of output truncated" in r.output
    assert len(r.output) <= cap + 200
    assert r.output.startswith("a" * 1000) and r.output.endswith("z" * 1000)  # head and tail kept


def test_local_output_never_in_memory_whole(repo):
    """100 MB printed; the host process's allocations stay far below that."""
    import tracemalloc

    with open_sandbox(repo, backend="local") as sb:
        tracemalloc.start()
        try:
            r = sb.exec("python -c \"print('x' * 100_000_000)\"", timeout=60)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert r.truncated and r.exit_code == 0
    assert peak < 5_000_000, f"peak {peak} bytes while reading a 100 MB output"


def test_files_and_changed_files(sb, repo):
    assert sb.read_file("pkg/calc.py") == (repo / "pkg" / "calc.py").read_text()
    assert sb.read_file(f"{WORKDIR}/pkg/calc.py") == sb.read_file("pkg/calc.py")
    with pytest.raises(FileNotFoundError):
        sb.read_file("nope.py")
    sb.write_file("pkg/calc.py", "def answer():\n    return 1  # same behaviour\n")
    sb.write_file("new/dir/file.txt", "hello")
    r = sb.exec("rm run.sh && touch pkg/calc.py && python -c 'import pkg.calc' && "
                "mkdir -p __pycache__ && echo x > __pycache__/junk.pyc && cat new/dir/file.txt")
    assert r.output == "hello", r.output
    assert sb.changed_files() == {
        "new/dir/file.txt": "hello",
        "pkg/calc.py": "def answer():\n    return 1  # same behaviour\n",
        "run.sh": None,
    }
    sb.write_file("pkg/calc.py", (repo / "pkg" / "calc.py").read_text())  # back to the original
    assert "pkg/calc.py" not in sb.changed_files()
    sb.write_file("/tmp/answer.txt", "42")
    assert sb.read_file("/tmp/answer.txt") == "42"
    assert sb.exec("cat /tmp/answer.txt").output == "42" or getattr(sb, "isolation", "") == "none"


def test_reset_restores_everything(sb, repo):
    original = {p: (repo / p).read_text() for p in ("pkg/calc.py", "test_calc.py", "run.sh")}
    sb.exec("echo 'def answer(): return 5' > pkg/calc.py; rm test_calc.py; chmod -x run.sh; "
            "rm -rf pkg/__init__.py; mkdir extra && echo x > extra/y; ln -s /etc/passwd link; "
            "echo tmp > /tmp/t; sleep 300 >/dev/null 2>&1 &")
    assert sb.changed_files()
    sb.reset()
    assert sb.changed_files() == {}
    for p, text in original.items():
        assert sb.read_file(p) == text
    r = sb.exec("ls -A; test -x run.sh && echo exec; ls -A /tmp", timeout=10)
    # nothing of the interpreter lies in the sandbox's /tmp, even for a checkout under /tmp
    assert r.output.split() == ["pkg", "run.sh", "test_calc.py", "exec"]
    assert sb.exec("python -m pytest -q", timeout=60).exit_code == 0
    assert leftovers(sb) == []


def test_reset_sees_edits_that_hide_their_tracks(sb, repo):
    """Same size, mtime set back: still restored (ctime cannot be set back)."""
    sb.exec("python -c \"import os; p='pkg/calc.py'; st=os.stat(p); d=open(p).read(); "
            "open(p,'w').write(d.replace('1', '7')); os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))\"")
    assert "7" in sb.read_file("pkg/calc.py")
    assert sb.changed_files() == {"pkg/calc.py": "def answer():\n    return 7\n"}
    sb.reset()
    assert sb.read_file("pkg/calc.py") == (repo / "pkg" / "calc.py").read_text()


def test_reset_with_a_new_workspace(sb, repo, repo2):
    sb.exec("echo stale > stale.txt")
    sb.reset(repo2)
    assert "return 2" in sb.read_file("pkg/calc.py")
    assert sb.changed_files() == {}
    with pytest.raises(FileNotFoundError):
        sb.read_file("stale.txt")
    sb.reset(repo)
    assert "return 1" in sb.read_file("pkg/calc.py")


def test_reset_to_the_same_workspace_restores_it_and_sees_the_hosts_changes(tmp_path):
    """A pool resets a sandbox to the workspace it already holds (the generator's every run):
    what the commands changed is restored, and a change of the host directory is seen."""
    repo = make_repo(tmp_path / "repo")
    with open_sandbox(repo, backend="local") as sb:
        sb.exec("echo 'def answer(): return 5' > pkg/calc.py; rm test_calc.py; chmod -x run.sh; "
                "rm -rf pkg; mkdir -p pkg/new && echo x > pkg/new/y; echo z > added.txt")
        sb.write_file("pkg/calc.py", "def answer():\n    return 9\n")
        sb.reset(repo)
        assert sb.changed_files() == {}
        assert sb.exec("test -x run.sh && ls -A . pkg").output.split() == [
            ".:", "pkg", "run.sh", "test_calc.py", "pkg:", "__init__.py", "calc.py"]
        assert sb.exec("python -m pytest -q", timeout=60).exit_code == 0
        (repo / "pkg" / "calc.py").write_text("def answer():\n    return 3\n")
        shutil.rmtree(repo / "pkg" / "__pycache__", ignore_errors=True)
        sb.reset(repo)
        assert sb.read_file("pkg/calc.py") == "def answer():\n    return 3\n" and sb.changed_files() == {}


def test_host_workspace_is_never_modified(sb, repo):
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    sb.exec("echo changed > pkg/calc.py; rm test_calc.py; echo x > added.txt")
    sb.write_file("pkg/__init__.py", "x = 1\n")
    after = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    assert before == after


def test_symlinks_do_not_leak_host_files(sb):
    sb.exec("ln -s /etc/shadow shadow; ln -s / root")
    with pytest.raises(PermissionError):
        sb.read_file("shadow")
    with pytest.raises(OSError):
        sb.write_file("root/etc/fixrl-test-owned", "x")
    assert not os.path.exists("/etc/fixrl-test-owned")


def test_closed_sandbox_raises(repo):
    sb = open_sandbox(repo, backend="local")
    sb.close()
    sb.close()  # idempotent
    with pytest.raises(SandboxError):
        sb.exec("true")


def test_unknown_backend(repo):
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        open_sandbox(repo, backend="vm")


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_missing_workspace_is_a_clear_error(request, backend, tmp_path):
    if backend == "docker":
        request.getfixturevalue("docker_available")
    with pytest.raises(SandboxError, match="does not exist"):
        open_sandbox(tmp_path / "missing", backend=backend)


def test_model_garbage_never_breaks_the_sandbox(sb):
    """Commands, paths and contents straight from model output: results or ordinary
    exceptions, never a SandboxError, and the sandbox keeps working."""
    r = sb.exec("echo a\x00b")
    assert r.exit_code == 126 and "NUL" in r.output
    r = sb.exec("echo '\ud800x'")  # a lone surrogate, as json.loads can produce
    assert r.exit_code == 0 and r.output.endswith("x\n")
    assert sb.exec("x" * 200_000).exit_code == 126
    sb.write_file("odd.txt", "a\ud800b")
    assert sb.read_file("odd.txt") == "a?b"
    with pytest.raises(ValueError):
        sb.read_file("a\x00b")
    with pytest.raises(FileNotFoundError):
        sb.read_file("\udcff")
    with pytest.raises(OSError):
        sb.read_file("pkg")  # a directory
    assert sb.exec("echo fine").output == "fine\n"


def test_local_without_bubblewrap_never_runs_commands_as_root(repo):
    """The fallback path: rlimits and timeouts only, and as root either a uid of its own or a
    clear refusal (never sandboxed code running as root)."""
    from fixrl.sandbox.local import LocalSandbox

    try:
        sb = LocalSandbox(repo, isolation="none")
    except SandboxError as e:
        assert os.geteuid() == 0 and "bubblewrap" in str(e)
        return
    with sb:
        assert sb.isolation == "none"
        r = sb.exec("id -u; python -c 'print(1 + 1)'", timeout=30)
        uid, two = r.output.split()
        assert two == "2"
        assert os.geteuid() != 0 or int(uid) != 0
        r = sb.exec("sleep 30", timeout=1)
        assert r.timed_out
