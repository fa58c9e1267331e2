"""Tiny fixture suites for the task tests: a 2-file repository and task files built in a tmp dir;
and SWE-bench instances made from two real releases of a library (`release_instance`)."""
from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import zipfile
from base64 import urlsafe_b64encode
from pathlib import Path

import yaml

from fixrl.tasks.format.materialize import diff_files

REPO_FILES = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add_public():\n    assert add(2, 2) == 4\n",
}

BUG = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a + b
+    return a - b
"""

FIX = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""

HIDDEN = """\
from calc import add, mul


def test_add():
    assert add(1, 2) == 3


def test_mul():
    assert mul(2, 3) == 6
"""

HIDDEN_TESTS = ["tests/test_hidden.py::test_add", "tests/test_hidden.py::test_mul"]


def fix_task(task_id: str = "add-sign", **over) -> dict:
    task = {
        "id": task_id,
        "repo": "repo",
        "issue": "add(1, 2) returns -1; I expected 3.",
        "bug": BUG,
        "fix": FIX,
        "check": {
            "files": {"tests/test_hidden.py": HIDDEN},
            "command": "python -m pytest -q tests/test_hidden.py",
            "tests": list(HIDDEN_TESTS),
            "timeout": 30,
        },
        "tags": ["family:arith"],
    }
    for key, value in over.items():
        if value is None:
            task.pop(key, None)
        elif isinstance(value, dict) and isinstance(task.get(key), dict):
            task[key] = {**task[key], **value}
        else:
            task[key] = value
    return task


QUESTION_CHECK = """\
import os, sys
answer = os.environ["FIXRL_ANSWER"].strip()
with open("/tmp/fixrl_answer.txt") as f:
    assert f.read().strip() == answer
sys.exit(0 if answer == "add" else 1)
"""


def question_task(task_id: str = "which-fn", **over) -> dict:
    task = {
        "id": task_id,
        "repo": "repo",
        "kind": "question",
        "issue": "Which function of calc.py subtracts when it should add? Answer with its name.",
        "bug": BUG,
        "answer": "add",
        "check": {"files": {"check_answer.py": QUESTION_CHECK}, "command": "python check_answer.py",
                  "timeout": 30},
    }
    task.update(over)
    return task


def write_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    for rel, text in (REPO_FILES if files is None else files).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def make_suite(tmp: Path, tasks: list[dict], suite: dict | None = None,
               repo_files: dict[str, str] | None = None) -> Path:
    """A suite directory under tmp: repo/, suite.yaml (if given), tasks/<id>.yaml."""
    root = Path(tmp) / "suite"
    write_repo(root / "repo", repo_files)
    (root / "tasks").mkdir(parents=True, exist_ok=True)
    if suite is not None:
        (root / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    for task in tasks:
        (root / "tasks" / f"{task['id']}.yaml").write_text(yaml.safe_dump(copy.deepcopy(task), sort_keys=False))
    return root


GIT_IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def release_instance(checkout: Path, base_src: Path, new_src: Path, patch: dict[str, str],
                     test_patch: dict[str, str], added: tuple[str, ...] = (), **fields) -> Path:
    """A SWE-bench instance made from two unpacked releases: `base_src` copied to `checkout` and
    committed as its one commit (the instance's `base_commit`); `patch` and `test_patch` the
    diffs taking each mapped path of the base (key) to the new release's text at the value's path
    (a release may move files: dateutil's `src/` layout); a path in `added` is new in the new
    release. `fields`: the instance's other fields. Returns the instance file, beside `checkout`."""
    shutil.copytree(base_src, checkout)
    env = {**os.environ, **GIT_IDENTITY}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", f"release {base_src.name}"]):
        subprocess.run(["git", *cmd], cwd=checkout, env=env, check=True, capture_output=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True,
                          check=True).stdout.strip()

    def change(paths: dict[str, str]) -> str:
        old = {p: None if p in added else (base_src / p).read_text(encoding="utf-8") for p in paths}
        return diff_files(old, {p: (new_src / new).read_text(encoding="utf-8") for p, new in paths.items()})

    path = checkout.parent / "instance.json"
    path.write_text(json.dumps({**fields, "base_commit": base, "patch": change(patch),
                                "test_patch": change(test_patch)}))
    return path


# ---------------------------------------------------------------- pytest plugins (tests of plugin parity)

PROBE_PLUGIN = "import pytest\n\n\n@pytest.fixture\ndef probe_fixture():\n    return 42\n"
EVIL_PLUGIN = "import pytest\n\n\n@pytest.fixture\ndef evil_fixture():\n    return 'loaded'\n"


def _record(name: str, data: bytes) -> str:
    digest = urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(path: Path, module: str = "fixrl_probe_plugin", source: str = PROBE_PLUGIN,
                entry: str = "probe") -> Path:
    """`module` 1.0 (`fixrl_probe_plugin`: one module with a fixture), registered as the
    `pytest11` plugin `entry`."""
    info = f"{module}-1.0.dist-info"
    files = {
        f"{module}.py": source.encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 1.0\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: fixrl-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": f"[pytest11]\n{entry} = {module}\n".encode(),
    }
    record = "\n".join([_record(n, d) for n, d in files.items()] + [f"{info}/RECORD,,", ""])
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, data in {**files, f"{info}/RECORD": record.encode()}.items():
            z.writestr(name, data)
    return path


def probe_plugin_wheel() -> Path:
    """The probe plugin's wheel at a fixed path: an environment's tag hashes its spec, so a
    second run builds nothing."""
    return write_wheel(Path.home() / ".cache" / "fixrl" / "test-wheels" / "fixrl_probe_plugin-1.0-py3-none-any.whl")


def drop_workspace_plugin(ws: Path) -> None:
    """What an agent could write into the workspace: a distribution whose `pytest11` entry points
    name its own module (one under the environment's plugin's name)."""
    (ws / "evil_plugin.py").write_text(EVIL_PLUGIN)
    info = ws / "evil-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nevil = evil_plugin\nprobe = evil_plugin\n")
