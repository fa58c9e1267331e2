"""tasks.check.guard: what a changed file may do at run time, read from its original's (and the
reference fix's) AST -- names built at run time count for nothing."""
from __future__ import annotations

from fixrl.tasks.check.guard import CATEGORIES, GuardSpec, categories, spec_between, spec_for


def test_categories_from_imports_attributes_and_names():
    assert categories("def f(x):\n    return x + 1\n") == frozenset()
    assert categories("import subprocess\nsubprocess.run(['ls'])\n") >= {"process"}
    assert categories("import os\nos.system('ls')\n") == {"process"}
    assert categories("import sys\nf = sys._getframe(1)\n") == {"frames"}
    assert categories("from inspect import currentframe\n") >= {"frames", "code"}
    assert categories("import gc\n") == {"heap"}
    assert categories("import threading\nthreading.Thread(target=print).start()\n") == {"threads"}
    assert categories("class P:\n    def __eq__(self, o):\n        return True\n") == {"dunders"}
    assert categories("from dataclasses import dataclass\n") >= {"dunders", "exec"}
    assert categories("x = eval('1')\n") == {"exec"}
    assert "exec" not in categories("import re\nre.compile('x')\n")  # a method called compile is not the builtin


def test_names_built_at_run_time_count_for_nothing():
    text = "import os\ndef f():\n    return getattr(getattr(os, 'sy' + 's'), '_get' + 'frame')(1)\n"
    assert "frames" not in categories(text)


def test_unparseable_text_allows_everything():
    assert categories("def f(:\n") == frozenset(CATEGORIES)


def test_spec_for_and_the_wire_form(tmp_path):
    spec = spec_for({"pkg/a.py": ("import gc\n", "import gc\nimport signal\n"), "pkg/new.py": (None, None),
                     "README.md": ("x", "y")})
    assert spec.changed == {"pkg/a.py": frozenset({"heap", "signals"}), "pkg/new.py": frozenset()}
    assert spec.to_wire() == {"pkg/a.py": ["heap", "signals"], "pkg/new.py": []}
    assert GuardSpec().to_wire() == {}
    before, after = tmp_path / "b", tmp_path / "a"
    for root, text in ((before, "def f():\n    return 1\n"), (after, "import gc\ndef f():\n    return 2\n")):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "m.py").write_text(text)
        (root / "pkg" / "same.py").write_text("x = 1\n")
    assert spec_between(before, after).changed == {"pkg/m.py": frozenset({"heap"})}
