"""Small repositories in the package layouts real projects use, each with bug-fix tasks, for the
tests that judge checks across layouts and sandbox reuse.

- `src`: a `src/` layout (pytest's `pythonpath = src`), tests in a top-level `tests/` folder
  without `__init__.py`;
- `nested`: a package with its tests inside it (`pkg/tests/__init__.py`, as toolz does);
- `toptests`: a top-level module, a top-level `tests/` package with a conftest fixture, and a
  test file whose base name (`test_core.py`) is also the `src` layout's;
- `rootmod`: one module and one test module at the top (as inflection does).

Each task's check runs its test file; the bug breaks some of its tests and the fix restores them.
"""
from __future__ import annotations

import difflib
from pathlib import Path

import yaml

LAYOUTS: dict[str, dict] = {
    "src": {
        "files": {
            "pyproject.toml": '[project]\nname = "lay-a"\nversion = "0"\n\n'
                              '[tool.pytest.ini_options]\npythonpath = ["src"]\ntestpaths = ["tests"]\n',
            "src/lay_a/__init__.py": "from lay_a.core import scale, shift\n",
            "src/lay_a/core.py": "def scale(x, k):\n    return x * k\n\n\ndef shift(x, d):\n    return x + d\n",
            "tests/test_core.py": "from lay_a import scale, shift\n\n\ndef test_scale():\n"
                                  "    assert scale(3, 2) == 6\n\n\ndef test_shift():\n    assert shift(3, 2) == 5\n",
        },
        "module": "src/lay_a/core.py",
        "bugs": {"scale": ("return x * k", "return x + k"), "shift": ("return x + d", "return x - d")},
        "command": "python -m pytest -q tests/test_core.py",
        "tests": ["tests/test_core.py::test_scale", "tests/test_core.py::test_shift"],
    },
    "nested": {
        "files": {
            "lay_b/__init__.py": "",
            "lay_b/mod.py": "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n\n\n"
                            "def span(xs):\n    return max(xs) - min(xs)\n",
            "lay_b/tests/__init__.py": "",
            "lay_b/tests/test_mod.py": "from lay_b.mod import clamp, span\n\n\nclass TestMod:\n"
                                       "    def test_clamp(self):\n        assert clamp(5, 0, 3) == 3\n\n"
                                       "    def test_span(self):\n        assert span([4, 1, 9]) == 8\n",
        },
        "module": "lay_b/mod.py",
        "bugs": {"clamp": ("min(x, hi)", "min(x, lo)"), "span": ("max(xs) - min(xs)", "max(xs) + min(xs)")},
        "command": "python -m pytest -q lay_b/tests",
        "tests": ["lay_b/tests/test_mod.py::TestMod::test_clamp", "lay_b/tests/test_mod.py::TestMod::test_span"],
    },
    "toptests": {
        "files": {
            "lay_c.py": "def pick(xs, i):\n    return xs[i]\n\n\ndef last(xs):\n    return xs[-1]\n",
            "tests/__init__.py": "",
            "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef letters():\n    return list('abc')\n",
            "tests/test_core.py": "from lay_c import last, pick\n\n\ndef test_pick(letters):\n"
                                  "    assert pick(letters, 1) == 'b'\n\n\ndef test_last(letters):\n"
                                  "    assert last(letters) == 'c'\n",
        },
        "module": "lay_c.py",
        "bugs": {"pick": ("return xs[i]", "return xs[i - 1]"), "last": ("return xs[-1]", "return xs[0]")},
        "command": "python -m pytest -q tests",
        "tests": ["tests/test_core.py::test_pick", "tests/test_core.py::test_last"],
    },
    "rootmod": {
        "files": {
            "lay_d.py": "def double(x):\n    return 2 * x\n\n\ndef halve(x):\n    return x // 2\n",
            "test_lay_d.py": "import pytest\n\nfrom lay_d import double, halve\n\n\n"
                             "@pytest.mark.parametrize('x', [1, 2])\ndef test_double(x):\n"
                             "    assert double(x) == x + x\n\n\n"
                             "def test_halve():\n    assert halve(9) == 4\n",
        },
        "module": "lay_d.py",
        "bugs": {"double": ("return 2 * x", "return 3 * x"), "halve": ("x // 2", "x // 3")},
        "command": "python -m pytest -q test_lay_d.py",
        "tests": ["test_lay_d.py::test_double[1]", "test_lay_d.py::test_double[2]", "test_lay_d.py::test_halve"],
    },
}


def _diff(old: str, new: str, path: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))


def write_layout_suite(root: Path, layout: str) -> Path:
    """A suite at `root`: repo/ in `layout`, one task per planted bug, the check running the
    layout's tests, with the test files copied in as (hidden) check files."""
    spec = LAYOUTS[layout]
    for rel, text in spec["files"].items():
        (root / "repo" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "repo" / rel).write_text(text)
    (root / "tasks").mkdir(parents=True)
    (root / "suite.yaml").write_text(yaml.safe_dump({"name": f"layout-{layout}", "defaults": {
        "repo": "repo", "public_tests": spec["command"]}}))
    clean = spec["files"][spec["module"]]
    test_files = sorted({t.split("::")[0] for t in spec["tests"]})
    for fn, (old, new) in spec["bugs"].items():
        assert old in clean
        buggy = clean.replace(old, new, 1)
        task = {"id": f"{layout}-{fn}", "function": fn, "file": spec["module"],
                "issue": f"`{fn}` returns wrong values.",
                "bug": _diff(clean, buggy, spec["module"]), "fix": _diff(buggy, clean, spec["module"]),
                "check": {"command": spec["command"], "tests": list(spec["tests"]), "timeout": 60,
                          "files": {f: spec["files"][f] for f in test_files}}}
        (root / "tasks" / f"{task['id']}.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    return root
