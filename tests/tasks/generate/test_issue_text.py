"""Issue texts written from failing tests: the rules, checked on texts written from real pytest
failures (a buggy package and tests in the styles real suites use, run here with the
generator's own plugin) and on every issue of a suite generated from a small repository.

The rules (`assert_issue_rules`): an issue names a public function of the package in a backticked
call; every argument of that call is a value (a literal, a repr, a lambda, a builtin or the
package's own name, or a name the issue defines); it names what was expected; it never shows
the bug or the fix."""
from __future__ import annotations

import ast
import json
import os
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fixrl.tasks.generate.issue import (
    Dropped,
    Failure,
    Symptom,
    Target,
    issue_for,
    parse_test_file,
    symptom,
    write_issue,
)
from fixrl.tasks.generate.pipeline import GEN_DIR, PLUGIN, PLUGIN_SOURCE, generate

# ---------------------------------------------------------------- the rules


def _code_spans(text: str, blocks: bool = True) -> list[str]:
    """The issue's backticked spans, and its code blocks (the test's own code) when `blocks`."""
    found = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    rest = re.sub(r"```python\n.*?```", "", text, flags=re.S)
    return re.findall(r"`([^`\n]+)`", rest) + (found if blocks else [])


def _defined(spans: list[str]) -> set[str]:
    """Names the issue itself defines: `x = ...` setups, and defs in its code blocks."""
    out = set()
    for s in spans:
        try:
            tree = ast.parse(s)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
    return out


_MODULES = set(sys.stdlib_module_names)


def _is_value(node: ast.AST, allowed: set[str], bound: frozenset = frozenset()) -> bool:
    """A literal, a repr, a lambda, or a name the reader can know (builtin, the package's,
    the issue's own)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Lambda):
        return True
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_is_value(e, allowed, bound) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is None or _is_value(k, allowed, bound) for k in node.keys) and \
            all(_is_value(v, allowed, bound) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _is_value(node.operand, allowed, bound)
    if isinstance(node, ast.BinOp):
        return _is_value(node.left, allowed, bound) and _is_value(node.right, allowed, bound)
    if isinstance(node, ast.Starred):
        return _is_value(node.value, allowed, bound)
    if isinstance(node, ast.Call):
        return _is_value(node.func, allowed, bound) and all(_is_value(a, allowed, bound) for a in node.args) \
            and all(_is_value(k.value, allowed, bound) for k in node.keywords)
    if isinstance(node, ast.Name):
        return node.id in allowed or node.id in bound or node.id in dir(__builtins__) or \
            hasattr(__import__("builtins"), node.id)
    if isinstance(node, ast.Attribute):
        base = node
        while isinstance(base, ast.Attribute):
            base = base.value
        if isinstance(base, ast.Name):
            return base.id in _MODULES or base.id in allowed
        return _is_value(base, allowed, bound)  # `'aeiou'.__contains__`
    return isinstance(node, (ast.GeneratorExp, ast.ListComp))


def _last(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _dotted_root(node: ast.AST) -> str | None:
    """`toolz` for `toolz.curried.reduce`; None for a bare name or anything else."""
    if not isinstance(node, ast.Attribute):
        return None
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def api_calls(text: str, public: set[str]) -> list[ast.AST]:
    """What names the package in the issue's code spans: calls whose function is one of
    `public` (by its last name), decorators of the test's code that are, imports of the package."""
    out: list[ast.AST] = []
    inline = set(_code_spans(text, blocks=False))
    for s in _code_spans(text):
        try:
            tree = ast.parse(s)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and s in inline and \
                    (_last(node.func) in public or (_dotted_root(node.func) or "") in public):
                out.append(node)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                out.extend(d for d in node.decorator_list if _last(d) in public)
            elif isinstance(node, ast.Import) and any(a.name.split(".")[0] in public for a in node.names):
                out.append(node)
    return out


def assert_issue_rules(text: str, public: set[str], package: str, forbidden: list[str] = ()) -> None:
    spans = _code_spans(text)
    calls = api_calls(text, public)
    assert calls, f"no call of the package's public functions {sorted(public)} in: {text}"
    allowed = _defined(spans) | public | {package}
    for call in calls:
        if not isinstance(call, ast.Call):
            continue
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            assert _is_value(arg, allowed), f"`{ast.unparse(arg)}` is not a value in `{ast.unparse(call)}`: {text}"
    assert re.search(r"was expected|does not raise `\w+", text), f"no expected value in: {text}"
    for line in forbidden:
        if len(line.strip()) >= 6:
            assert line.strip() not in text, (line, text)


def test_rules_reject_what_the_old_issues_showed():
    public = {"singularize", "reduceby"}
    with pytest.raises(AssertionError, match="not a value"):
        assert_issue_rules("Calling `inflection.singularize(plural)` returns `'children'`, but `singular` was "
                           "expected.", public, "inflection")
    with pytest.raises(AssertionError, match="no call of the package"):
        assert_issue_rules("Calling `s.add(i)` raises `TypeError`.", public, "toolz")
    with pytest.raises(AssertionError, match="no expected value"):
        assert_issue_rules("Calling `reduceby(len, [1])` raises `TypeError`.", public, "toolz")
    assert_issue_rules("After `mf = reduceby(len, [1])`, calling `mf(2)` returns `1`, but `2` was expected.",
                       public, "toolz")


# ---------------------------------------------------------------- a buggy package and its tests

PACKAGE = {
    "words/__init__.py": "from words.core import *  # noqa\nfrom words.core import _irregular  # noqa\n",
    "words/extra.py": "RATIO = 1 / 0\n",
    "words/utils.py": textwrap.dedent('''\
        def raises(err, thunk):
            try:
                thunk()
                return False
            except err:
                return True
        '''),
    "words/core.py": textwrap.dedent('''\
        __all__ = ["Bag", "pluralize", "ordinal", "reduceby", "memoize", "Tally", "parse_count", "clamp", "initials",
                   "is_plural", "split_first", "TABLE"]
        _IRREGULAR = {"child": "children", "person": "people"}


        def _irregular(word):
            # the bug: a misspelt table lookup
            return {k: v + "s" for k, v in _IRREGULAR.items()}.get(word)


        def pluralize(word):
            return _irregular(word) or word + "s"


        def is_plural(word):
            return word.endswith("S")


        def ordinal(n):
            return "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd"}.get(n % 10, "th")


        def reduceby(key, binop, seq, init):
            out = {}
            for item in seq:
                k = key(item)
                out[k] = binop(out.get(k, 0), item)
            return out


        def memoize(f):
            cache = {}

            def memof(*args):
                if args not in cache:
                    cache[args] = f(*args) + 1
                return cache[args]
            return memof


        class Tally:
            def __init__(self, start=0):
                self.items = [start]

            def add(self, x):
                self.items.append(x)

            def total(self):
                return sum(self.items[1:])


        def parse_count(text):
            if not text.isdigit() and not text.startswith("-"):
                raise TypeError("not a number: " + text)
            return int(text)


        def clamp(v, lo, hi):
            return max(lo, v)


        def initials(name):
            """The first letter of each word.

            >>> full = "Ada King Lovelace"
            >>> initials(full)
            'AKLX'
            """
            return "".join(p[0] for p in name.split())


        def split_first(text):
            head, _, tail = text.partition(" ")
            return head, tail.upper()

        class Bag:
            def __init__(self, *items):
                self.items = list(items)

            def add(self, x):
                self.items.append(x)

            def __contains__(self, x):
                return x in self.items[1:]

            def count(self, x):
                return self.items[1:].count(x)

            @staticmethod
            def size_of(item):
                return 2

            def __repr__(self):
                return type(self).__name__ + "(" + ", ".join(map(repr, self.items)) + ")"

        class _Box:
            def __init__(self, word):
                self.word = word

            def plural(self):
                return pluralize(self.word)


        TABLE = {w: pluralize(w) for w in ("child", "cat")}
        '''),
    "tests/common.py": textwrap.dedent('''\
        def assert_equal(expected, result):
            print("Expected:", expected)
            assert expected == result
        '''),
    "tests/test_words.py": textwrap.dedent('''\
        import unittest
        from operator import add

        import pytest

        import words
        from words import Bag, Tally, memoize, reduceby
        from words.utils import raises
        from words.core import _Box
        from common import assert_equal

        PAIRS = [("child", "children"), ("cat", "cats")]
        ORDINALS = [(1, "st"), (2, "nd"), (3, "rd")]


        def iseven(x):
            return x % 2 == 0


        @pytest.mark.parametrize("singular,plural", PAIRS)
        def test_parametrized_expected_on_the_left(singular, plural):
            assert plural == words.pluralize(singular)


        def test_loop():
            for n, suffix in ORDINALS:
                assert words.ordinal(n) == suffix


        def test_result_in_a_variable():
            result = words.ordinal(23)
            assert result == "rd"


        def test_helper_raises_inside_the_package():
            def set_add(s, i):
                s.add(i)
                return s
            assert reduceby(iseven, set_add, [1, 2, 3, 4], set) == {True: {2, 4}, False: {1, 3}}


        def test_stdlib_function_argument():
            assert reduceby(iseven, add, [1, 2, 3], lambda: 10) == {False: 14, True: 12}


        def test_local_made_by_the_package():
            def f(x, y=0):
                return x + y
            mf = memoize(f)
            assert mf(2, 3) == f(2, 3)


        def test_method_of_an_object():
            t = Tally()
            t.add(2)
            t.add(3)
            t.add(-1)
            assert t.total() == 5


        def test_pytest_raises_not_raised():
            with pytest.raises(ValueError):
                words.parse_count("-4")


        def test_pytest_raises_other_exception():
            with pytest.raises(ValueError):
                words.parse_count("x")


        def test_pytest_raises_other_message():
            with pytest.raises(TypeError, match="^invalid"):
                words.parse_count("")


        @pytest.mark.parametrize("error", [ValueError])
        def test_pytest_raises_a_parameter(error):
            with pytest.raises(error):
                words.parse_count("x")


        def test_raises_helper():
            assert raises(ValueError, lambda: words.parse_count("x"))


        def test_multi_line_assert():
            assert (
                words.pluralize("person")
                == "people"
            )


        def test_other_comparisons():
            assert words.clamp(12, 0, 10) <= 10


        def test_membership():
            assert words.pluralize("child") in ("children", "kids")


        def test_truthiness():
            assert words.is_plural("cats")


        def test_wrapped_call():
            assert sorted(words.initials("Ada King Lovelace")) == ["A", "K", "L", "X"]


        @pytest.mark.parametrize("fn", [words.pluralize])
        def test_function_in_a_parameter(fn):
            assert fn("child") == "children"


        def test_decorated_helper():
            @memoize
            def double(x):
                return 2 * x
            assert double(2) == 4


        def test_unpacked_result():
            first, rest = words.split_first("a b c")
            assert rest == "b c"


        def test_import_fails():
            import words.extra  # noqa: F401


        class TestAttributes:
            D = dict
            NUMBERS = [1, 2, 3, 4]

            def test_class_attributes(self):
                D = self.D
                assert reduceby(iseven, add, self.NUMBERS, int) == D({True: 6})


        class Nasty:
            def __repr__(self):
                raise RuntimeError("no repr")

            def __getattr__(self, name):
                raise RuntimeError("no attributes")


        def test_nasty_local():
            n = Nasty()
            big = list(range(100000))
            assert words.pluralize("child") == "children", (n, len(big))


        def test_passes():
            assert words.ordinal(1) == "st"


        def test_no_call_of_the_package():
            assert words.TABLE["child"] == "children"


        def test_private_only():
            assert words._irregular("child") == "children"


        @pytest.fixture
        def tally():
            t = Tally()
            t.add(4)
            return t


        def test_fixture(tally):
            assert tally.total() == 5


        def test_test_code_raises_on_what_came_back():
            counts = reduceby(iseven, add, [2, 4], int)
            assert counts[False] == 0


        def test_not_equal():
            assert words.initials("ada lovelace") != "al"


        class TestUnittestStyle(unittest.TestCase):
            def test_assert_equal(self):
                self.assertEqual(words.pluralize("child"), "children")

            def test_assert_true(self):
                self.assertTrue(words.is_plural("dogs"))

            def setUp(self):
                self.tally = Tally()

            def test_own_attribute(self):
                self.tally.add(1)
                self.assertEqual(self.tally.total(), 2)

            def test_assert_raises(self):
                with self.assertRaises(ValueError):
                    words.parse_count("-1")
        def test_assert_in_a_shared_helper():
            expected = "children"
            result = words.pluralize("child")
            assert_equal(expected, result)
        def test_object_changed_after_it_was_made():
            bag = Bag(1)
            bag.add(2)
            assert 1 in bag
        def test_calls_in_earlier_asserts():
            bag = Bag(1)
            assert bag.add(2) is None
            assert 1 in bag
        def test_object_held_by_another():
            inner = Bag(1)
            outer = Bag(inner)
            outer.add(inner.add(2))
            assert 1 in inner
        class MyBag(Bag):
            pass
        def test_object_of_the_tests_own_class():
            bag = MyBag(1)
            assert bag.size_of(None) == 1
        def test_package_object_from_a_loop():
            for bag in (Bag(1), Bag(1, 1)):
                assert bag.count(1) >= 1
        def test_private_class_in_the_setup():
            box = _Box("child")
            assert box.plural() == "children"
        class TestCaseAttributes(unittest.TestCase):
            Kind = Tally
            DECORATOR = staticmethod(memoize)
            REDUCE = staticmethod(reduceby)
            def decorator(self, func, **kwargs):
                return self.DECORATOR(func, **kwargs)
            def reduce(self, key, seq):
                return self.REDUCE(key, add, seq, int)
            def test_one_line_helper_raising_in_the_package(self):
                self.reduce(lambda x: x % 2, None)
            def test_class_attribute_naming_a_class(self):
                t = self.Kind(5)
                t.add(1)
                self.assertEqual(t.total(), 6)
            def test_one_line_helper_method(self):
                double = self.decorator(lambda x: 2 * x)
                self.assertEqual(double(2), 4)
        class TestMoreUnittestForms(unittest.TestCase):
            def test_assert_regex(self):
                self.assertRegex(words.pluralize("child"), "^children$")
            def test_assert_is_instance(self):
                self.assertIsInstance(words.split_first("a b"), list)
            def test_assert_raises_regex_callable(self):
                self.assertRaisesRegex(ValueError, "negative", words.parse_count, "-4")
        class TestBoundMethods(unittest.TestCase):
            def setUp(self):
                self.bag = Bag(1)
                self.count = self.bag.count
            def test_bound_method_set_in_setup(self):
                self.assertEqual(self.count(1), 1)
        class CountingBag(Bag):
            pass
        def test_method_of_the_tests_own_subclass():
            bag = CountingBag(1, 1)
            n = bag.count(1)
            def unused():
                return words.ordinal(1)
            assert n == 2 or not unused
        def test_local_subclass_passes():
            class LocalBag(Bag):
                pass
            assert LocalBag(1).count(1) == 0
        def test_local_subclass_of_the_same_name():
            class LocalBag(Bag):
                def size(self):
                    return 0
            with pytest.raises(ValueError):
                LocalBag(1).count(1)
        def test_attribute_of_what_the_package_made():
            t = Tally(3)
            assert not t.items
        def parse_twice(text):
            words.parse_count(text)
            return words.parse_count(text)
        def test_raises_through_a_local_helper():
            with pytest.raises(ValueError):
                parse_twice("-4")
        @pytest.mark.parametrize("key", [object()])
        def test_unprintable_argument(key):
            words.parse_count(key)
        '''),
}


@pytest.fixture(scope="module")
def failures(tmp_path_factory) -> dict[str, Failure]:
    """The package's tests run once by pytest with the generator's plugin: node id -> record."""
    root = tmp_path_factory.mktemp("words")
    for path, text in PACKAGE.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / GEN_DIR).mkdir()
    (root / GEN_DIR / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE)
    report = root / GEN_DIR / "report.json"
    env = {**os.environ, "FIXRL_GEN_REPORT": str(report), "PYTHONPATH": str(root / GEN_DIR)}
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", PLUGIN, "-p", "no:cacheprovider", "tests",
                    "--doctest-modules", "words/core.py"],
                   cwd=root, env=env, capture_output=True, timeout=120)
    tests = json.loads(report.read_text())["tests"]
    out = {n.split("::", 1)[-1]: Failure.from_record(n, t) for n, t in tests.items() if t["outcome"] == "failed"}
    out["_root"] = root  # type: ignore[assignment]
    out["_outcomes"] = {n.split("::", 1)[-1]: t["outcome"] for n, t in tests.items()}  # type: ignore[assignment]
    return out


def _read(root: Path):
    """As the generator reads: a missing file is None."""
    return lambda path: parse_test_file((root / path).read_text()) if (root / path).is_file() else None


def said(failures, name: str) -> Symptom | Dropped:
    return symptom(failures[name], _read(failures["_root"]))


PUBLIC = {"Bag", "size_of", "pluralize", "ordinal", "reduceby", "memoize", "Tally", "total", "parse_count", "clamp", "initials",
          "is_plural", "split_first"}

CASES = {
    "test_parametrized_expected_on_the_left[child-children]":
        "Calling `words.pluralize('child')` returns `'childrens'`, but `'children'` was expected.",
    "test_loop": "Calling `words.ordinal(3)` returns `'th'`, but `'rd'` was expected.",
    "test_result_in_a_variable": "Calling `words.ordinal(23)` returns `'th'`, but `'rd'` was expected.",
    "test_helper_raises_inside_the_package":
        "Calling `reduceby(iseven, set_add, [1, 2, 3, 4], set)` raises `AttributeError: 'int' object has no "
        "attribute 'add'`, but `{True: {2, 4}, False: {1, 3}}` was expected.",
    "test_stdlib_function_argument":
        "Calling `reduceby(iseven, operator.add, [1, 2, 3], lambda: 10)` returns `{False: 4, True: 2}`, but "
        "`{False: 14, True: 12}` was expected.",
    "test_local_made_by_the_package": "Calling `mf(2, 3)` returns `6`, but `5` was expected.",
    "test_method_of_an_object": "Calling `t.total()` returns `4`, but `5` was expected.",
    "test_pytest_raises_not_raised": "Calling `words.parse_count('-4')` does not raise `ValueError`, but it should.",
    "test_pytest_raises_other_exception":
        "Calling `words.parse_count('x')` raises `TypeError: not a number: x`, but `ValueError` was expected.",
    "test_pytest_raises_other_message":
        "Calling `words.parse_count('')` raises `TypeError` with the message `'not a number: '`, but a message "
        "matching `'^invalid'` was expected.",
    "test_raises_helper":
        "Calling `words.parse_count('x')` raises `TypeError: not a number: x`, but `ValueError` was expected.",
    "test_multi_line_assert":
        "Calling `words.pluralize('person')` returns `'peoples'`, but `'people'` was expected.",
    "test_other_comparisons": "Calling `words.clamp(12, 0, 10)` returns `12`, but a value at most `10` was expected.",
    "test_membership":
        "Calling `words.pluralize('child')` returns `'childrens'`, but one of `('children', 'kids')` was expected.",
    "test_truthiness": "Calling `words.is_plural('cats')` returns `False`, but a true value was expected.",
    "test_wrapped_call": "`sorted(words.initials('Ada King Lovelace'))` gives `['A', 'K', 'L']`, but "
                         "`['A', 'K', 'L', 'X']` was expected.",
    "words.core.initials": "The example `initials(full)` from the docstring of `initials` gives `'AKL'`, but "
                           "`'AKLX'` was expected.",
    "test_function_in_a_parameter[pluralize]":
        "Calling `pluralize('child')` returns `'childrens'`, but `'children'` was expected.",
    "test_decorated_helper": "Calling `double(2)` returns `5`, but `4` was expected.",
    "test_unpacked_result": "`rest` is `'B C'`, but `'b c'` was expected.",
    "test_import_fails":
        "`import words.extra` raises `ZeroDivisionError: division by zero`, but the import was expected to succeed.",
    "TestAttributes::test_class_attributes":
        "Calling `reduceby(iseven, operator.add, [1, 2, 3, 4], int)` returns `{False: 4, True: 6}`, but `{True: 6}` "
        "was expected.",
    "test_fixture": "Calling `tally.total()` returns `4`, but `5` was expected.",
    "test_test_code_raises_on_what_came_back": "`counts[False]` raises `KeyError: False`, but `0` was expected.",
    "test_not_equal": "Calling `words.initials('ada lovelace')` returns `'al'`, but anything other than `'al'` was "
                      "expected.",
    "TestUnittestStyle::test_assert_equal":
        "Calling `words.pluralize('child')` returns `'childrens'`, but `'children'` was expected.",
    "TestUnittestStyle::test_assert_true":
        "Calling `words.is_plural('dogs')` returns `False`, but a true value was expected.",
    "TestUnittestStyle::test_assert_raises":
        "Calling `words.parse_count('-1')` does not raise `ValueError`, but it should.",
    # the assert is in the suite's own helper (tabulate's `assert_equal` in test/common.py),
    # outside pytest's assertion rewriting: the caller's values, the call that made `result`
    "test_assert_in_a_shared_helper":
        "Calling `words.pluralize('child')` returns `'childrens'`, but `'children'` was expected.",
    # a class attribute naming the package's class (cachetools' `Cache = LRUCache`): its public name
    "TestCaseAttributes::test_class_attribute_naming_a_class": "Calling `t.total()` returns `1`, but `6` was expected.",
    # the test class's one-line helper (cachetools' `self.decorator(maxsize=2)`) returning a
    # call of a `staticmethod` class attribute: the call it makes
    "TestCaseAttributes::test_one_line_helper_method": "Calling `double(2)` returns `5`, but `4` was expected.",
    # ... raising inside the package (cachetools' `self.decorator(lambda n: n)`): the caller's
    # call inlined, where the lambda is the test's own
    "TestCaseAttributes::test_one_line_helper_raising_in_the_package":
        "Calling `words.core.reduceby(lambda x: x % 2, operator.add, None, int)` raises `TypeError: 'NoneType' "
        "object is not iterable`, but no error was expected.",
    # an attribute of the package's object (configargparse's `ns.verbose`): the attribute after
    # the object's making, never its bare value ("`[3]` gives `[3]`")
    "test_attribute_of_what_the_package_made": "`t.items` gives `[3]`, but a false value was expected.",
    # a method of an object the test case made in setUp (configargparse's `self.parse`): called
    # on an object of its class, never on the class itself (`Bag.count(1)` is another call)
    "TestBoundMethods::test_bound_method_set_in_setup":
        "Calling `bag.count(1)` returns `0`, but `1` was expected.",
    # unittest's regex and type assertions, and assertRaisesRegex's callable after the regex
    "TestMoreUnittestForms::test_assert_regex":
        "Calling `words.pluralize('child')` returns `'childrens'`, but a value matching the regular expression "
        "`'^children$'` was expected.",
    "TestMoreUnittestForms::test_assert_is_instance":
        "Calling `words.split_first('a b')` returns `('a', 'B')`, but an instance of `list` was expected.",
    "TestMoreUnittestForms::test_assert_raises_regex_callable":
        "Calling `words.parse_count('-4')` does not raise `ValueError`, but it should.",
    # an object changed after it was made: the name after its making, never the constructor
    "test_object_changed_after_it_was_made": "`bag` is `Bag(1, 2)`, but a value containing `1` was expected.",
    # a staticmethod of the object (cachetools' `cache.getsizeof`) on an object of the test's
    # own class (its `TTLTestCache`): the method, after the object's making and the class
    "test_object_of_the_tests_own_class": "Calling `bag.size_of(None)` returns `2`, but `1` was expected.",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_symptom_shows_values(failures, name):
    s = said(failures, name)
    assert isinstance(s, Symptom), s
    assert s.text == CASES[name]
    issue = write_issue([s], random.Random(0))
    assert_issue_rules(issue, PUBLIC | {"words"}, "words")


def test_capture_never_changes_an_outcome(failures):
    """A local whose repr and attributes raise, a huge one: the test still fails for its own
    reason, the others keep theirs, and the symptom is still written."""
    outcomes = failures["_outcomes"]
    assert outcomes["test_passes"] == "passed"
    assert outcomes["test_nasty_local"] == "failed"
    names = failures["test_nasty_local"].detail["frames"][0]["names"]
    assert names["n"]["repr"] is None and names["big"]["cut"] is True
    assert said(failures, "test_nasty_local").text == \
        "Calling `words.pluralize('child')` returns `'childrens'`, but `'children'` was expected."


def test_context_shows_setup_and_helpers(failures):
    s = said(failures, "test_helper_raises_inside_the_package")
    assert s.context == ("def iseven(x):\n    return x % 2 == 0", "def set_add(s, i):\n    s.add(i)\n    return s")
    assert (s.api, s.callee, s.file) == ("reduceby", "reduceby", "words/core.py")
    s = said(failures, "test_local_made_by_the_package")
    assert s.context == ("mf = memoize(f)", "def f(x, y=0):\n    return x + y")
    assert (s.api, s.callee) == ("memoize", "memoize")
    s = said(failures, "test_method_of_an_object")  # every call that changed the object
    assert s.context == ("t = Tally()", "t.add(2)", "t.add(3)", "t.add(-1)")
    assert (s.api, s.callee) == ("t.total", "total")
    s = said(failures, "test_decorated_helper")  # the package's part is the decorator
    assert (s.api, s.callee, s.context) == ("memoize", "memoize", ("@memoize\ndef double(x):\n    return 2 * x",))
    s = said(failures, "test_unpacked_result")
    assert s.context == ("first, rest = words.split_first('a b c')",)
    s = said(failures, "words.core.initials")  # a doctest: the examples before it that bind names
    assert s.context == ('full = "Ada King Lovelace"',) and s.file == "words/core.py"
    s = said(failures, "test_fixture")
    assert s.context == ("@pytest.fixture\ndef tally():\n    t = Tally()\n    t.add(4)\n    return t",)
    s = said(failures, "test_test_code_raises_on_what_came_back")
    assert s.context == ("counts = reduceby(iseven, operator.add, [2, 4], int)", "def iseven(x):\n    return x % 2 == 0")
    assert "After `counts = reduceby(iseven, operator.add, [2, 4], int)`, `counts[False]` raises" in \
        write_issue([s], random.Random(0))


def test_test_case_attributes_show_the_package_calls_they_make(failures):
    s = said(failures, "TestCaseAttributes::test_class_attribute_naming_a_class")
    assert s.context == ("t = words.core.Tally(5)", "t.add(1)")
    s = said(failures, "test_object_changed_after_it_was_made")
    assert s.context == ("bag = Bag(1)", "bag.add(2)")
    s = said(failures, "test_calls_in_earlier_asserts")  # calls inside earlier asserts changed it too
    assert s.context == ("bag = Bag(1)", "bag.add(2)") and s.text.startswith("`bag` is `Bag(1, 2)`")
    s = said(failures, "test_object_of_the_tests_own_class")
    assert s.context == ("bag = MyBag(1)", "class MyBag(Bag):\n    pass") and s.callee == "size_of"
    s = said(failures, "TestBoundMethods::test_bound_method_set_in_setup")  # made in setUp: its class, arguments elided
    assert s.context == ("bag = words.core.Bag(...)",) and s.api == "words.core.Bag.count"
    assert write_issue([s], random.Random(0)).endswith(
        "After `bag = words.core.Bag(...)`, calling `bag.count(1)` returns `0`, but `1` was expected. "
        "`count` is defined in `words/core.py`.")
    s = said(failures, "TestCaseAttributes::test_one_line_helper_method")
    assert s.context == ("double = words.core.memoize(lambda x: 2 * x)",)
    assert (s.api, s.callee, s.file) == ("words.core.memoize", "memoize", "words/core.py")


def test_unittest_operands_read_back_with_sorted_keys(failures):
    """A record read back from the generator's journal has its keys sorted (`first`, `msg`,
    `second`): the expected value is still `second`, never `msg`'s `None`."""
    f = failures["TestUnittestStyle::test_assert_equal"]
    sorted_back = Failure.from_record(f.nodeid, json.loads(json.dumps(
        {"message": f.message, "entries": f.entries, "detail": f.detail}, sort_keys=True)))
    assert symptom(sorted_back, _read(failures["_root"])).text == CASES["TestUnittestStyle::test_assert_equal"]


@pytest.mark.parametrize("name,text", [
    ("test_loop", "Calling `words.ordinal(3)` returns a value other than `'rd'`, but `'rd'` was expected."),
    ("test_other_comparisons",
     "Calling `words.clamp(12, 0, 10)` returns a value not at most `10`, but a value at most `10` was expected."),
    ("test_membership", "Calling `words.pluralize('child')` returns a value not in `('children', 'kids')`, but one of "
                        "`('children', 'kids')` was expected."),
    ("test_truthiness", "Calling `words.is_plural('cats')` returns a false value, but a true value was expected."),
])
def test_failed_assert_without_recorded_values(failures, name, text):
    """A test module pytest did not rewrite reports a bare `AssertionError` and no operands: the
    sentence says only what the failed comparison itself does (before: no issue at all)."""
    f = failures[name]
    detail = json.loads(json.dumps(f.detail))
    detail["compares"], detail["exc"]["message"] = [], ""
    bare = Failure(f.nodeid, "AssertionError", f.entries, detail)
    assert symptom(bare, _read(failures["_root"])).text == text
    assert_issue_rules(write_issue([symptom(bare, _read(failures["_root"]))], random.Random(0)),
                       PUBLIC | {"words"}, "words")


def test_private_helper_is_shown_by_the_public_call(failures):
    s = said(failures, "test_parametrized_expected_on_the_left[child-children]")
    assert (s.api, s.callee) == ("words.pluralize", "pluralize")


@pytest.mark.parametrize("name,why", [
    ("test_no_call_of_the_package", "the assertion calls nothing of the package"),
    ("test_private_only", "the test calls only private functions of the package"),
    ("TestUnittestStyle::test_own_attribute", "the test uses attributes of its test case"),
    ("test_private_class_in_the_setup", "the test calls a private function of the package"),
    # its repr was read after the failure, and need not rebuild it (cachetools' LFU copies)
    ("test_package_object_from_a_loop", "a variable has no printable value"),
    # changed through `outer` (cachetools' stacked decorators): its own setup shows another object
    ("test_object_held_by_another", "the object may have changed through another one"),
    ("test_raises_through_a_local_helper", "the `raises` block calls nothing of the package"),
    ("test_unprintable_argument[key0]", "a variable has no printable value"),
    # "raises `TypeError: ...`, but `error` was expected": a variable, not an exception's name
    ("test_pytest_raises_a_parameter[ValueError]", "the expected exception `error` is not a class name"),
])
def test_dropped_with_a_reason(failures, name, why):
    assert said(failures, name) == Dropped(why)


def test_issue_for_ranks_the_buggy_function_first_and_counts_reasons(failures):
    read = _read(failures["_root"])
    both = [failures["test_loop"], failures["test_membership"]]
    text, why = issue_for(both, read, random.Random(1), target=Target("pluralize", "words/core.py"))
    assert why == "" and "`words.pluralize('child')`" in text.split("Also")[0]
    assert text.endswith("`pluralize` is defined in `words/core.py`.")
    dropped = [failures["test_no_call_of_the_package"], failures["test_private_only"],
               failures["test_no_call_of_the_package"]]
    assert issue_for(dropped, read, random.Random(1)) == (None, "the assertion calls nothing of the package")
    assert issue_for([], read, random.Random(1)) == (None, "no failing test was recorded")
    assert issue_for([Failure("t.py::x")], read, random.Random(1)) == (None, "no failure detail was recorded")


def test_issue_never_shows_a_forbidden_line(failures):
    read = _read(failures["_root"])
    f = [failures["test_helper_raises_inside_the_package"]]
    assert issue_for(f, read, random.Random(0), forbidden=["    s.add(i)"]) == \
        (None, "every issue would show the changed line")
    text, _ = issue_for(f, read, random.Random(0), forbidden=["out[k] = binop(out.get(k, 0), item)"])
    assert "```python\ndef iseven(x):" in text


# ---------------------------------------------------------------- a generated suite

SHOP = '''\
"""A tiny shop: prices, carts and discounts."""


def _round(x):
    return int(x * 100 + 0.5) / 100


def price(unit, qty, discount=0.0):
    if qty < 0:
        raise ValueError("negative quantity")
    return _round(unit * qty * (1 - discount))


def bulk_discount(qty):
    if qty >= 100:
        return 0.2
    if qty >= 10:
        return 0.1
    return 0.0


class Cart:
    def __init__(self):
        self.lines = []

    def add(self, unit, qty):
        self.lines.append((unit, qty))

    def total(self):
        return _round(sum(price(u, q, bulk_discount(q)) for u, q in self.lines))


def cheapest(items, key=None):
    best = None
    for item in items:
        value = key(item) if key else item
        if best is None or value < best[0]:
            best = (value, item)
    return best[1] if best else None
'''

SHOP_TESTS = '''\
import unittest

import pytest

from shop import Cart, bulk_discount, cheapest, price

CASES = [(2.0, 3, 0.0, 6.0), (1.5, 10, 0.1, 13.5), (0.1, 3, 0.0, 0.3)]


@pytest.mark.parametrize("unit,qty,discount,want", CASES)
def test_price(unit, qty, discount, want):
    assert price(unit, qty, discount) == want


def test_price_negative():
    with pytest.raises(ValueError):
        price(1.0, -1)


def test_bulk_discount():
    for qty, want in [(1, 0.0), (10, 0.1), (99, 0.1), (100, 0.2)]:
        assert want == bulk_discount(qty)


def test_cart():
    cart = Cart()
    cart.add(2.0, 1)
    cart.add(1.0, 10)
    total = cart.total()
    assert total == 11.0


def by_name(item):
    return item[0]


def test_cheapest():
    items = [("pear", 3), ("apple", 5), ("fig", 1)]
    assert cheapest(items, key=lambda i: i[1]) == ("fig", 1)
    assert cheapest(items, key=by_name) == ("apple", 5)
    assert cheapest([]) is None


class TestCartUnittest(unittest.TestCase):
    def test_empty(self):
        self.assertEqual(Cart().total(), 0)

    def test_big_order(self):
        cart = Cart()
        cart.add(1.0, 100)
        self.assertAlmostEqual(cart.total(), 80.0)
'''


@pytest.fixture(scope="module")
def shop_suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("shop")
    repo = root / "shop-repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "shop.py").write_text(SHOP)
    (repo / "tests" / "test_shop.py").write_text(SHOP_TESTS)
    out = root / "suite"
    report = generate(repo, "python -m pytest -q tests", out, max_tasks=12, seed=0, workers=2, validate=False,
                      progress=False)
    return out, report


@pytest.mark.slow
def test_every_generated_issue_follows_the_rules(shop_suite):
    from fixrl.tasks import load_suite

    out, report = shop_suite
    suite = load_suite(out)
    public = {"price", "bulk_discount", "Cart", "add", "total", "cheapest"}
    assert len(suite.tasks) >= 8
    for t in suite.tasks:
        changed = [x[1:] for x in t.bug.splitlines() if x[:1] in "+-" and not x.startswith(("+++", "---"))]
        assert_issue_rules(t.issue, public, "shop", changed)
    # every kept bug got an issue, or is counted with its reason
    no_issue = sum(s.no_issue for s in report.per_op.values())
    assert sum(report.no_issue_reasons.values()) == no_issue
    assert no_issue <= report.kept // 4, report.no_issue_reasons


# ---------------------------------------------------------------- the plain sentence

# What a failing test no specific form can show still says, from the run alone: the package's
# public function the test reaches and the run's own report. Each of these gave no issue before.
FALLBACKS = {
    # a test case's attribute set in setUp: the method the failing statement calls, and
    # unittest's own report of the comparison
    "TestUnittestStyle::test_own_attribute": "A test of `words.core.Tally.total` fails its check: "
                                             "`AssertionError: 1 != 2`.",
    # a `raises` block that reaches the package through the test file's own helper
    "test_raises_through_a_local_helper": "A call of `words.parse_count` does not raise `ValueError`, but it should.",
    # a method of the test's own subclass of the package's class (marshmallow's `class
    # Schema2(Schema)` and `schema.validate(...)`), named by the package's class; never a call in
    # a function the test defines and does not call (a validator's `raise ValidationError(...)`)
    "test_method_of_the_tests_own_subclass": "A test of `words.Bag.count` fails its check: `assert (1 == 2 or",
    # ... the test's own class of that name (marshmallow's many local `class MySchema(Schema)`)
    "test_local_subclass_of_the_same_name": "A call of `words.core.Bag.count` does not raise `ValueError`, but it should.",
    # an argument with no printable value: the entry the traceback shows, and the exception
    "test_unprintable_argument[key0]": "Calling `words.core.parse_count` raises `AttributeError: 'object' object has "
                                       "no attribute 'isdigit'`, but no error was expected.",
}


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_plain_sentence_when_no_value_can_be_shown(failures, name):
    read = _read(failures["_root"])
    assert isinstance(said(failures, name), Dropped)
    text, why = issue_for([failures[name]], read, random.Random(0))
    assert why == "" and FALLBACKS[name] in text, text


def test_plain_sentence_only_when_no_specific_one(failures):
    """A bug with one test that shows values and one that does not: only the specific one."""
    read = _read(failures["_root"])
    text, _ = issue_for([failures["test_unprintable_argument[key0]"], failures["test_loop"]], read,
                        random.Random(0))
    assert "words.ordinal(3)" in text and "isdigit" not in text


def test_plain_sentence_from_the_crash_line_alone(failures):
    """A failure whose details were not captured (the capture keeps the first ones of a run):
    pytest's crash line and traceback entries still name the exception and the entry."""
    f = failures["test_unprintable_argument[key0]"]
    bare = Failure(f.nodeid, "AttributeError: 'object' object has no attribute 'isdigit'", f.entries, None)
    text, why = issue_for([bare], _read(failures["_root"]), random.Random(0))
    assert "`words.core.parse_count` raises `AttributeError: 'object' object has no attribute 'isdigit'`" in text
    # nothing to name: no sentence, and the specific forms' reason is kept
    assert issue_for([Failure(f.nodeid, "AttributeError: x", [], None)], _read(failures["_root"]),
                     random.Random(0)) == (None, "no failure detail was recorded")


def test_described_failures_come_before_the_limit(failures):
    """The capture describes the first failures of a run only: a bug breaking hundreds of tests
    has its described ones anywhere in its list, and they are the ones read."""
    read = _read(failures["_root"])
    bare = [Failure(f"tests/test_words.py::t{i}", "AssertionError", [], None) for i in range(50)]
    text, why = issue_for([*bare, failures["test_loop"]], read, random.Random(0), limit=40)
    assert why == "" and "`words.ordinal(3)` returns `'th'`" in text


def test_plain_sentence_never_shows_the_changed_line(failures):
    read = _read(failures["_root"])
    f = [failures["test_unprintable_argument[key0]"]]
    assert issue_for(f, read, random.Random(0), forbidden=["object has no attribute 'isdigit'"]) == \
        (None, "every issue would show the changed line")
