"""The edit rules (tasks.check.rules): every trick of the issue refused under the rule it breaks,
ordinary fixes accepted, what the original file already does allowed; the rules in the task
format (suite, task, errors); `fixrl tasks validate` and `fixrl tasks rules-check` (old name
`policy-check`) judging the reference fix."""
from __future__ import annotations

import json
import textwrap

import pytest
from suitekit import fix_task, make_suite

from fixrl.harness.cli import main as fixrl
from fixrl.sandbox import SandboxPool
from fixrl.tasks import TaskError, load_suite, validate_task
from fixrl.tasks.check.rules import judge_change, judge_changes, reference_violations, repo_modules
from fixrl.tasks.format.schema import RULE_NAMES, EditRules

ORIGINAL = '''\
"""Small numeric helpers."""
import math
import re


def clamp(x, lo, hi):
    """Clamp x into [lo, hi]."""
    return max(lo, max(x, hi))


class Box:
    def __init__(self, v):
        self.v = v
'''
BUGGY_LINE = "    return max(lo, max(x, hi))\n"
REPO = frozenset({"math", "re", "collections", "os", "pkg"})


def judge(body: str, original: str = ORIGINAL, edit_rules: EditRules | None = None, path: str = "pkg/core.py"):
    new = original.replace(BUGGY_LINE, textwrap.indent(textwrap.dedent(body), "    "))
    assert new != original
    return judge_change(path, original, new, edit_rules or EditRules(), REPO)


def rules(body: str, **kw) -> set[str]:
    return {v.rule for v in judge(body, **kw)}


# ---------------------------------------------------------------- ordinary fixes pass

FIXES = {
    "operator": "return max(lo, min(x, hi))\n",
    "branch": "if x < lo:\n    return lo\nif x > hi:\n    return hi\nreturn x\n",
    "local helper": "def bound(v, a, b):\n    return a if v < a else b if v > b else v\nreturn bound(x, lo, hi)\n",
    "module the file imports": "return math.floor(min(max(x, lo), hi))\n",
    "module the repository imports": "import collections\nreturn collections.Counter([x]).most_common()[0][0]\n",
    "string methods": "return ' '.join(str(v).strip().lower() for v in (x, lo, hi)).split()[0]\n",
    "comprehensions": "vals = sorted({v for v in (lo, x, hi)})\nreturn [v for v in vals][1] if lo <= hi else x\n",
    "f-string and format": "msg = f'{x} not in [{lo}, {hi}]'\nassert lo <= hi, msg + ' {}'.format(lo)\n"
                           "return min(max(x, lo), hi)\n",
    "getattr with a literal name": "return getattr(x, 'real', x) if lo <= x <= hi else min(max(x, lo), hi)\n",
    "benign dunder": "return min(max(x, lo), hi) if type(x).__name__ else x\n",
    "walrus and lambda": "if (y := min(x, hi)) is not None:\n    return (lambda v: max(lo, v))(y)\nreturn x\n",
    # the false 0s of issue 31: pure standard-library modules none of the repository imported
    "import math elsewhere": "import statistics\nreturn statistics.median([lo, x, hi])\n",
    "from functools import reduce": "from functools import reduce\nreturn reduce(min, [hi, max(x, lo)])\n",
    "import operator": "import operator\nreturn hi if operator.gt(x, hi) else max(x, lo)\n",
    "dataclass": "from dataclasses import dataclass\n@dataclass(frozen=True)\nclass Span:\n    lo: int\n"
                 "    hi: int\ns = Span(lo, hi)\nreturn min(max(x, s.lo), s.hi)\n",
    "getattr with a parameter": "def pick(o, name):\n    return getattr(o, name)\n"
                                "return min(max(pick(x, 'real'), lo), hi)\n",
    "getattr with a parameter another function also has": "def pick(o, name):\n    return getattr(o, name)\n"
                                                           "def other(name):\n    return name + '!'\n"
                                                           "return min(max(pick(x, 'real'), lo), hi)\n",
    "getattr over a module constant of names": "NAMES = ('real', 'imag')\nfor name in NAMES:\n"
                                                "    assert hasattr(x, name)\nreturn min(max(x, lo), hi)\n",
    "getattr over dataclass fields": "import dataclasses\n@dataclasses.dataclass\nclass P:\n    a: int = 0\n"
                                     "p = P()\nassert all(getattr(p, f.name) == 0 for f in dataclasses.fields(p))\n"
                                     "return min(max(x, lo), hi)\n",
    "getattr over a literal tuple": "for name in ('real', 'imag'):\n    assert hasattr(x, name)\n"
                                    "return min(max(x, lo), hi)\n",
    "format on a literal-bound name": "fmt = '{} not in [{}, {}]'\nassert lo <= hi, fmt.format(x, lo, hi)\n"
                                      "return min(max(x, lo), hi)\n",
    "format field of a plain attribute": "assert lo <= hi, '{0.real}'.format(x)\nreturn min(max(x, lo), hi)\n",
    "modules and mro on own objects": "class Plan:\n    def __init__(self):\n        self.modules = [lo, hi]\n"
                                      "assert type(x).mro()\nreturn min(max(x, Plan().modules[0]), hi)\n",
    "__main__ string": "if __name__ == '__main__':\n    print(x)\nreturn min(max(x, lo), hi)\n",
    "helper class with __len__ and __iter__": "class Pair:\n    def __init__(self, a, b):\n        self.ab = (a, b)\n"
                                              "    def __len__(self):\n        return 2\n"
                                              "    def __iter__(self):\n        return iter(self.ab)\n"
                                              "a, b = Pair(lo, hi)\nreturn min(max(x, a), b)\n",
    "open a data file to read": "with open(__file__.rsplit('/', 1)[0] + '/limits.txt', encoding='utf-8') as fh:\n"
                                "    fh.read()\nreturn min(max(x, lo), hi)\n",
    "reading __class__": "return min(max(x, lo), hi) if x.__class__.__name__ else x\n",
}


@pytest.mark.parametrize("name", sorted(FIXES))
def test_ordinary_fixes_pass(name):
    assert judge(FIXES[name]) == [], name


def test_what_the_original_does_is_allowed():
    original = ORIGINAL.replace("import math\n", "import math\nimport os\nimport sys\n").replace(
        "        self.v = v\n", "        self.v = v\n\n    def __eq__(self, other):\n        return self.v == other.v\n"
        "\n    def __getattr__(self, name):\n        return getattr(self.v, name)\n")
    ok = ["return sys.maxsize if x > hi else os.sep and max(lo, min(x, hi))\n",
          "class Pair:\n    def __eq__(self, other):\n        return True\nreturn Pair()\n",
          "name = 'real'\nreturn getattr(x, name)\n",
          "return x.__getattr__('v')\n"]
    for body in ok:
        assert judge(body, original=original) == [], body
    # the repository importing os is not enough for a file that did not
    assert rules("import os\nreturn os.sep\n") == {"imports"}


def test_a_dunder_the_original_defines_may_be_defined_again():
    original = ORIGINAL + "\n    def __eq__(self, other):\n        return True\n"
    new = original.replace("        return True\n", "        return self.v == other.v\n") + \
        "\n    def __lt__(self, other):\n        return self.v < other.v\n"
    assert judge_change("pkg/core.py", original, new, EditRules(), REPO) == []


# ---------------------------------------------------------------- tricks refused

TRICKS = {
    # names assembled from pieces
    "pieces": ('f = getattr(x, "_get" + "frame")\nreturn f\n', "computed-names"),
    "chr": ("return getattr(x, chr(95) * 2 + 'class' + chr(95) * 2)\n", "computed-names"),
    "bytes decode": ("return getattr(x, b'_getframe'.decode())\n", "computed-names"),
    "reversed": ("return getattr(x, 'emarf_teg_'[::-1])\n", "computed-names"),
    "f-string name": ("n = 'frame'\nreturn getattr(x, f'_get{n}')\n", "computed-names"),
    "join": ("return getattr(x, ''.join(['_get', 'frame']))\n", "computed-names"),
    "setattr variable": ("k = x.name\nsetattr(x, k, 1)\nreturn x\n", "computed-names"),
    "getattr, a name also bound to a computed value": ("k = 'v'\nif x:\n    k = '_' * 2\nreturn getattr(x, k)\n",
                                                       "computed-names"),
    "getattr through a parameter given a computed name": (
        "def pick(o, name):\n    return getattr(o, name)\nreturn pick(x, '_' * 2 + 'class' + '_' * 2)\n",
        "computed-names"),
    "getattr over a constant of names that is also computed": (
        "NAMES = ('real',)\nif x:\n    NAMES = ['_' * 2 + 'class__']\nfor n in NAMES:\n    getattr(x, n)\nreturn x\n",
        "computed-names"),
    "getattr over dataclass fields renamed": (
        "import dataclasses\n@dataclasses.dataclass\nclass P:\n    a: int = 0\n"
        "for f in dataclasses.fields(P):\n    f.name = '_' * 2 + 'class__'\n"
        "return [getattr(x, g.name) for g in dataclasses.fields(P)]\n", "computed-names"),
    "getattr with .name of something else": ("for f in x.items:\n    getattr(x, f.name)\nreturn x\n",
                                             "computed-names"),
    "getattr through a parameter rebound in the function": (
        "def pick(o, name):\n    name = '_' * 2 + name\n    return getattr(o, name)\nreturn pick(x, 'class__')\n",
        "computed-names"),
    "getattr through a parameter, the function passed on": (
        "def pick(o, name):\n    return getattr(o, name)\nf = pick\nreturn f(x, 'real')\n", "computed-names"),
    "getattr through a dunder's parameter": (
        "class A:\n    def __format__(self, spec):\n        return getattr(x, spec)\nreturn format(A(), 'v')\n",
        "computed-names"),
    "format on a parameter": ("def show(fmt):\n    return fmt.format(x)\nreturn show('{0}')\n", "computed-names"),
    "hasattr starred": ("a = (x, 'v')\nreturn hasattr(*a)\n", "computed-names"),
    # aliasing
    "getattr alias": ("g = getattr\nreturn g(x, 'real')\n", "computed-names"),
    "getattr through a default": ("def f(o, g=getattr):\n    return g(o, 'real')\nreturn f(x)\n",
                                  "computed-names"),
    "getattr passed on": ("import functools\nreturn functools.reduce(getattr, ['a', 'b'], x)\n", "computed-names"),
    "walrus alias": ("if (g := getattr):\n    return g(x, 'y')\nreturn x\n", "computed-names"),
    "builtins alias": ("from builtins import getattr as g\nreturn g(x, 'a')\n", "imports"),
    "os as o": ("import os as o\nreturn o.system('true')\n", "exec"),
    "from os import system": ("from os import system as s\nreturn s('true')\n", "exec"),
    "attrgetter": ("import operator\nreturn operator.attrgetter('a' + 'b')(x)\n", "computed-names"),
    "methodcaller alias": ("from operator import methodcaller as mc\nn = x.name\nreturn mc(n)(x)\n",
                           "computed-names"),
    "attrgetter dunder path": ("import operator\nreturn operator.attrgetter('f.__globals__')(x)\n", "introspection"),
    # classes equal to everything
    "class with __eq__": ("class A:\n    def __eq__(self, o):\n        return True\nreturn A()\n",
                          "comparison-dunders"),
    "lambda __eq__": ("class A:\n    __eq__ = lambda s, o: True\nreturn A()\n", "comparison-dunders"),
    "existing class gains __eq__": ("Box.__eq__ = lambda s, o: True\nreturn Box(x)\n", "comparison-dunders"),
    "type() with a namespace": ('return type("X", (), {"__eq__": lambda s, o: True})()\n', "comparison-dunders"),
    "type() with computed keys": ('d = {"__e" + "q__": lambda s, o: True}\nreturn type("X", (object,), d)()\n',
                                  "comparison-dunders"),
    "setattr __hash__": ('setattr(Box, "__hash__", lambda s: 0)\nreturn Box(x)\n', "introspection"),
    "setattr __eq__": ('setattr(Box, "__eq__", lambda s, o: True)\nreturn Box(x)\n', "comparison-dunders"),
    "total_ordering": ("import functools\n@functools.total_ordering\nclass A:\n    pass\nreturn A()\n",
                       "comparison-dunders"),
    "__contains__": ("class A:\n    def __contains__(self, item):\n        return True\nreturn A()\n",
                     "comparison-dunders"),
    "__del__ finalizer": ("class A:\n    def __del__(self):\n        pass\nreturn A()\n", "introspection"),
    "weakref.finalize": ("import weakref\nweakref.finalize(x, print)\nreturn x\n", "imports"),
    # interpreter state
    "object.__getattribute__": ("return object.__getattribute__(x, 'v')\n", "introspection"),
    "frames": ("try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    return e.__traceback__.tb_frame.f_back\n",
               "introspection"),
    "generator frame": ("g = (v for v in [x])\nreturn g.gi_frame.f_locals\n", "introspection"),
    "code object": ("return clamp.__code__.co_consts\n", "introspection"),
    "subclasses": ("return ().__class__.__base__.__subclasses__()\n", "introspection"),
    "globals of a function": ("return clamp.__globals__['__builtins__']\n", "introspection"),
    "sys.modules through os": ("import os\nreturn os.sys.modules\n", "exec"),
    "sys through another module": ("return re.sys.modules['builtins']\n", "introspection"),
    "private module alias": ("import random\nreturn random._os.getpid()\n", "introspection"),
    "format string": ("return '{0.__globals__}'.format(clamp)\n", "introspection"),
    "format built at run time": ("t = chr(123) + '0.' + 'f_glo' + 'bals' + chr(125)\nreturn t.format(clamp)\n",
                                 "computed-names"),
    "match class pattern": ("match x:\n    case object(__dict__=c):\n        return c\nreturn x\n", "introspection"),
    "vars subscript": ("return vars(x)['v']\n", "computed-names"),
    "globals subscript": ("return globals()['__builtins__']\n", "computed-names"),
    "locals in a comprehension": ("return [locals() for _ in [x]]\n", "computed-names"),
    "decorator": ("@getattr\ndef f():\n    pass\nreturn x\n", "computed-names"),
    # imports
    "import sys": ("import sys\nreturn sys.maxsize\n", "imports"),
    "import inside a comprehension": ("return [__import__('sys') for _ in [x]]\n", "exec"),
    "importlib": ("import importlib\nreturn importlib.import_module('sys')\n", "imports"),
    "linecache": ("import linecache\nreturn linecache.getline('t.py', 1)\n", "imports"),
    "ctypes": ("import ctypes\nreturn ctypes.c_int(x).value\n", "imports"),
    "module the repository does not have": ("import yaml\nreturn yaml.safe_load(str(x))\n", "imports"),
    "stdlib module outside the pure set": ("import io\nreturn io.StringIO(str(x)).read()\n", "imports"),
    "relative import of an impure module": ("from . import sys\nreturn sys\n", "imports"),
    "from-import of os through a repository module": ("from pkg.compat import os\nreturn os\n", "imports"),
    "Popen through a repository module's attribute": ("from . import compat\nreturn compat.Popen(['true'])\n",
                                                       "exec"),
    "from-import of eval through a repository module": ("from .compat import eval as e\nreturn e('1')\n", "exec"),
    "import a.b as c": ("import importlib.util as u\nreturn u\n", "imports"),
    "private name of a pure module": ("import random\nreturn random._os\n", "introspection"),
    "string.Formatter": ("import string\nreturn string.Formatter().get_field('0', [x], {})\n", "introspection"),
    "typing.get_type_hints": ("from typing import get_type_hints\nreturn get_type_hints(x)\n", "introspection"),
    "look-alike letters in a string": ("return getattr(x, '__\uff43lass__')\n", "introspection"),
    "assigning __class__": ("x.__class__ = Box\nreturn x\n", "introspection"),
    "unittest.mock.ANY": ("from unittest.mock import ANY\nreturn ANY\n", "imports"),
    "builtin rebound at the top": ("return exec('x = 1')\n", "exec"),
    "star import from os": ("from os import *\nreturn system('true')\n", "exec"),
    "raise SystemExit": ("raise SystemExit(0)\n", "exec"),
    # generated code, processes, files
    "exec a string": ("exec('import sys; sys.exit(0)')\n", "exec"),
    "eval": ("return eval('x')\n", "exec"),
    "compile": ("return compile('1', 'f', 'eval')\n", "exec"),
    # reading a file is allowed (the runtime guard refuses test files); writing is not
    "open to write": ("open('pkg/other.py', 'w').write('')\nreturn x\n", "exec"),
    "open with a computed mode": ("m = x.mode\nreturn open('data.txt', m).read()\n", "exec"),
    "open of a descriptor": ("return open(3).read()\n", "exec"),
    "open passed on": ("f = open\nreturn f('data.txt', 'w')\n", "exec"),
    "exit": ("exit(0)\n", "exec"),
    "quit": ("quit()\n", "exec"),
    "breakpoint": ("breakpoint()\n", "exec"),
    "builtins via __builtins__": ("return __builtins__['ex' + 'ec']\n", "introspection"),
}


@pytest.mark.parametrize("name", sorted(TRICKS))
def test_tricks_are_refused_under_their_rule(name):
    body, rule = TRICKS[name]
    if name == "builtin rebound at the top":  # `exec = exec` must not make `exec` the module's own
        new = ORIGINAL.replace(BUGGY_LINE, "    " + body).replace("import re\n", "import re\nexec = exec\n")
        found = judge_change("pkg/core.py", ORIGINAL, new, EditRules(), REPO)
    else:
        found = judge(body)
    assert rule in {v.rule for v in found}, (name, [str(v) for v in found])
    v = max((v for v in found if v.rule == rule), key=lambda v: v.line)  # the changed function's line
    assert v.path == "pkg/core.py" and v.line >= 7 and v.message, v
    assert str(v).startswith(f"{rule}: pkg/core.py:{v.line}: ")


def test_a_parameter_fed_getattr_is_judged_at_its_callers_in_other_changed_files():
    picker = "def pick(o, name):\n    return getattr(o, name)\n"
    caller = "from .a import pick\n\n\ndef f(x):\n    return pick(x, {})\n"
    old = "def f(x):\n    return x\n"

    def judged(arg):
        return [(v.rule, v.path) for v in judge_changes({"pkg/a.py": (None, picker),
                                                         "pkg/b.py": (old, caller.format(arg))}, EditRules(), REPO)]
    assert judged("'real'") == []
    assert judged("'_' * 2 + 'class' + '_' * 2") == [("computed-names", "pkg/b.py")]
    assert judged("x.name") == [("computed-names", "pkg/b.py")]


def test_relaxing_a_rule_drops_only_that_rule():
    body = "import sys\nreturn getattr(sys, 'max' + 'size')\n"
    assert rules(body) == {"imports", "computed-names"}
    assert rules(body, edit_rules=EditRules(relax=["imports"], reason="r")) == {"computed-names"}
    assert rules(body, edit_rules=EditRules(relax=list(RULE_NAMES), reason="r")) == set()
    assert rules("import io\nreturn io.StringIO(x)\n", edit_rules=EditRules(allow_imports=["io"], reason="r")) == set()


def test_files_rule():
    p = EditRules()
    new = ORIGINAL.replace(BUGGY_LINE, "    return min(x, hi)\n")
    assert [v.rule for v in judge_change("tests/test_core.py", ORIGINAL, new, p)] == ["files"]
    assert [v.rule for v in judge_change("setup.cfg", "[x]\n", "[y]\n", p)] == ["files"]
    assert judge_change("pkg/core.py", ORIGINAL, None, p) == []  # deleting a source file
    narrow = EditRules(files=["pkg/core.py"])
    assert judge_change("pkg/core.py", ORIGINAL, new, narrow) == []
    assert [v.rule for v in judge_change("pkg/other.py", ORIGINAL, new, narrow)] == ["files"]
    assert judge_change("pkg/helpers.py", None, "def h():\n    return 1\n", p) == []
    for bad in ("pkg/json.py", "pkg/sitecustomize.py", "pkg/__pycache__/m.py", "pkg/data.txt"):
        assert [v.rule for v in judge_change(bad, None, "x = 1\n", p)] == ["files"], bad
    assert rules("return min(x, hi)\n") == set()
    deep = EditRules(files=["src/**/*.py"])
    assert judge_change("src/a/b/c.py", "x = 1\n", "x = 2\n", deep) == []
    assert judge_change("src/c.py", "x = 1\n", "x = 2\n", deep) == []
    assert [v.rule for v in judge_change("lib/c.py", "x = 1\n", "x = 2\n", deep)] == ["files"]


def test_a_module_that_defines_its_own_compile_may_call_it():
    original = ORIGINAL + "\n\ndef compile(pattern):\n    return re.compile(pattern)\n"
    new = original.replace(BUGGY_LINE, "    compile('x')\n    return max(lo, min(x, hi))\n")
    assert judge_change("pkg/core.py", original, new, EditRules(), REPO) == []


def test_future_imports_are_always_allowed():
    new = "from __future__ import annotations\n" + ORIGINAL.replace(BUGGY_LINE, "    return min(max(x, lo), hi)\n")
    assert judge_change("pkg/core.py", ORIGINAL, new, EditRules(), REPO) == []


@pytest.mark.parametrize("cookie", ["unicode_escape", "raw_unicode_escape", "utf-7"])
def test_a_coding_declaration_is_judged_as_python_decodes_it(cookie):
    # read as UTF-8 the payload is one comment line; the interpreter decodes it into code
    hidden = {"utf-7": "+AAo-import gc+AAo-"}.get(cookie, "\\u000aimport gc\\u000a")
    new = f"# coding: {cookie}\n# {hidden}\n" + ORIGINAL.replace(BUGGY_LINE, "    return min(max(x, lo), hi)\n")
    assert any("gc" in v.message for v in judge_change("pkg/core.py", ORIGINAL, new, EditRules(), REPO)), cookie
    honest = "# -*- coding: latin-1 -*-\n" + ORIGINAL.replace(BUGGY_LINE, "    return min(max(x, lo), hi)\n")
    assert judge_change("pkg/core.py", ORIGINAL, honest, EditRules(), REPO) == []


def test_a_file_that_does_not_parse_is_not_judged():
    assert judge_change("pkg/core.py", ORIGINAL, ORIGINAL + "\ndef broken(:\n", EditRules()) == []


def test_repo_modules(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("import json\nfrom collections import abc\nfrom . import core\n")
    (tmp_path / "tests" / "test_x.py").write_text("import pytest\nimport unittest\n")
    (tmp_path / "setup.py").write_text("import setuptools\n")
    (tmp_path / "src" / "lib").mkdir(parents=True)
    (tmp_path / "src" / "lib" / "util.py").write_text("import re\n")
    assert repo_modules(tmp_path) == {"json", "collections", "pkg", "setuptools", "setup", "src", "lib", "util",
                                      "re"}


# ---------------------------------------------------------------- the task format

CHEATING_FIX = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,3 @@
 def add(a, b):
-    return a - b
+    import sys
+    return a + b if sys else 0
"""


def test_rules_in_suite_and_task(tmp_path):
    root = make_suite(tmp_path, [fix_task("a"), fix_task("b", rules={"relax": ["exec"]}),
                                 fix_task("c", rules={"files": ["calc.py"]})],
                      suite={"rules": {"relax": ["imports"], "allow_imports": ["json"], "reason": "r"}})
    suite = load_suite(root)
    a, b, c = (suite.get(i) for i in "abc")
    assert a.rules.relax == ["imports"] and a.rules.allow_imports == ["json"] and a.rules.files == ["**/*.py"]
    assert b.rules.relax == ["exec"] and b.rules.allow_imports == ["json"]  # field by field
    assert c.rules.files == ["calc.py"] and c.rules.relax == ["imports"]


@pytest.mark.parametrize("where", ["task", "suite"])
def test_widening_the_rules_asks_for_a_reason(tmp_path, where, capsys):
    widen = {"relax": ["exec"]}
    if where == "task":
        root = make_suite(tmp_path, [fix_task("a", rules=widen)])
    else:
        root = make_suite(tmp_path, [fix_task("a")], suite={"rules": {"allow_imports": ["io"]}})
    assert load_suite(root).get("a").rules.reason == ""  # an earlier suite still loads
    fixrl(["tasks", "rules-check", str(root)])
    assert "a widens its rules without a reason: add `reason:`" in capsys.readouterr().out
    ok = make_suite(tmp_path / "2", [fix_task("a", rules={**widen, "reason": "the fix calls eval on a literal"})])
    assert load_suite(ok).get("a").rules.reason == "the fix calls eval on a literal"


@pytest.mark.parametrize("where", ["task", "suite"])
def test_unknown_rule_names_the_field_and_the_rules(tmp_path, where):
    if where == "task":
        root = make_suite(tmp_path, [fix_task("a", rules={"relax": ["import"]})])
    else:
        root = make_suite(tmp_path, [fix_task("a")], suite={"rules": {"relax": ["import"]}})
    with pytest.raises(TaskError) as e:
        load_suite(root)
    text = str(e.value)
    assert "rules.relax" in text and "'import'" in text and all(r in text for r in RULE_NAMES), text
    root2 = make_suite(tmp_path / "2", [fix_task("a", rules={"relaxx": []})])
    with pytest.raises(TaskError, match=r"rules.relaxx.*unknown field.*did you mean 'relax'"):
        load_suite(root2)


def test_reference_violations_and_rules_check(tmp_path, capsys):
    root = make_suite(tmp_path, [fix_task("ok"), fix_task("cheat", fix=CHEATING_FIX),
                                 fix_task("relaxed", fix=CHEATING_FIX, rules={"relax": ["imports"], "reason": "needs json"})])
    suite = load_suite(root)
    assert reference_violations(suite.get("ok")) == []
    assert reference_violations(suite.get("relaxed")) == []
    [v] = reference_violations(suite.get("cheat"))
    assert (v.rule, v.path, v.line) == ("imports", "calc.py", 2), v
    assert fixrl(["tasks", "rules-check", str(root), "--json"]) == 1
    new_name = capsys.readouterr().out
    assert fixrl(["tasks", "policy-check", str(root), "--json"]) == 1  # the old name still works
    assert capsys.readouterr().out == new_name
    out = json.loads(new_name)
    assert out["summary"] == {"suite": "suite", "fix_tasks": 3, "rejected": 1, "broken": 0, "widened": 1}
    assert out["widened"] == {"relaxed": "needs json"}
    assert list(out["rejected"]) == ["cheat"] and out["rejected"]["cheat"][0].startswith("imports: calc.py:2: ")


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(1, backend="local") as p:
        yield p


def test_validate_refuses_a_reference_fix_that_breaks_the_rules(pool, tmp_path):
    root = make_suite(tmp_path, [fix_task("cheat", fix=CHEATING_FIX),
                                 fix_task("relaxed", fix=CHEATING_FIX, rules={"relax": ["imports"], "reason": "needs json"})])
    suite = load_suite(root)
    bad = validate_task(suite.get("cheat"), pool, repeats=1)
    assert not bad.ok and len(bad.reasons) == 1, bad.reasons
    assert "edit rules" in bad.reasons[0] and "imports: calc.py:2:" in bad.reasons[0]
    assert "relax: [imports]" in bad.reasons[0]
    good = validate_task(suite.get("relaxed"), pool, repeats=1)
    assert good.ok and not any("edit rules" in r for r in good.reasons + good.warnings), good


# ---------------------------------------------------------------- no false rejections

def _rejected(suite_dir) -> dict[str, list[str]]:
    suite = load_suite(suite_dir)
    out = {t.id: [str(v) for v in reference_violations(t)] for t in suite.tasks}
    return {k: v for k, v in out.items() if v}


def test_no_reference_fix_of_the_builtin_suite_is_rejected():
    from fixrl.tasks.suites import BUILTIN_SUITE

    assert _rejected(BUILTIN_SUITE) == {}


@pytest.mark.slow
def test_no_reference_fix_of_the_gym_suite_is_rejected():
    from fixrl.tasks.suites import GYM_SUITE

    assert _rejected(GYM_SUITE) == {}
