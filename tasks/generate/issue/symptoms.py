"""A failing test read as a symptom: the kind of failure (a comparison, a raise, a truth
test, a unittest assertion, a doctest) and the sentence a user would write about it."""
from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable

from fixrl.tasks.generate.issue.records import Dropped, Failure, Symptom, Unshowable
from fixrl.tasks.generate.issue.render import Reader, ReplaceNames, bind_arguments
from fixrl.tasks.generate.issue.source import (
    BUILTIN_NAMES,
    RAISES,
    Frame,
    TestFile,
    call_name,
    choose,
    clip,
    dotted_name,
    exception_text,
    in_package,
    is_public,
    package_file,
    printable,
    raised_names,
    returned_expr,
)

# ---------------------------------------------------------------------------------------------
# Sentences

_COMPARE_WORDS = {"<": "below", "<=": "at most", ">": "above", ">=": "at least"}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _verb(r: Reader, shown: ast.expr) -> tuple[str, str]:
    """('Calling ', 'returns') for a call of the package, ('', 'gives') for other expressions
    (`sorted(f(x))`)."""
    if isinstance(shown, ast.Name):
        return "", "is"
    if not isinstance(shown, ast.Call):
        return "", "gives"
    alias = isinstance(shown.func, ast.Name) and r.from_api(shown.func.id) is not None
    direct = alias or any(c[0] is shown for c in r.api_calls(shown))
    return ("Calling ", "returns") if direct else ("", "gives")


def _comparison(r: Reader, call_text: str, call: ast.expr, op: str, actual: str, expected: str, api_left: bool) -> str:
    lead, verb = _verb(r, call)
    head = f"{lead}`{call_text}` {verb} `{actual}`"
    if op in ("==", "is"):
        return f"{head}, but `{expected}` was expected."
    if op in ("!=", "is not"):
        return f"{head}, but anything other than `{expected}` was expected."
    if op in _COMPARE_WORDS:
        op = op if api_left else _FLIP[op]
        return f"{head}, but a value {_COMPARE_WORDS[op]} `{expected}` was expected."
    if op == "in":
        return f"{head}, but one of `{expected}` was expected." if api_left else \
            f"{head}, but a value containing `{expected}` was expected."
    if op == "not in":
        return f"{head}, but a value not in `{expected}` was expected." if api_left else \
            f"{head}, but a value without `{expected}` was expected."
    raise Unshowable(f"an assert with `{op}`")


def _unknown_actual(r: Reader, call_text: str, call: ast.expr, op: str, expected: str, api_left: bool) -> str:
    """The sentence for a failed comparison whose compared value was not recorded: only what
    its failing says (`==` failed: a value other than the expected one)."""
    flipped = op if api_left else _FLIP.get(op, op)
    got = {"==": f"a value other than `{expected}`", "is": f"an object other than `{expected}`",
           "!=": f"a value equal to `{expected}`", "is not": f"`{expected}` itself",
           "in": f"a value not in `{expected}`" if api_left else f"a value without `{expected}`",
           "not in": f"a value in `{expected}`" if api_left else f"a value containing `{expected}`"}.get(op)
    if got is None and flipped in _COMPARE_WORDS:
        got = f"a value not {_COMPARE_WORDS[flipped]} `{expected}`"
    if got is None:
        raise Unshowable(f"an assert with `{op}`")
    lead, verb = _verb(r, call)
    want = _comparison(r, call_text, call, op, "", expected, api_left).split(", but ", 1)[1]
    return f"{lead}`{call_text}` {verb} {got}, but {want}"


_UNITTEST_OPS = {
    "assertEqual": "==", "assertEquals": "==", "failUnlessEqual": "==", "assertListEqual": "==",
    "assertTupleEqual": "==", "assertDictEqual": "==", "assertSetEqual": "==", "assertSequenceEqual": "==",
    "assertMultiLineEqual": "==", "assertCountEqual": "==", "assertAlmostEqual": "==",
    "assertAlmostEquals": "==", "assertNotEqual": "!=", "assertNotEquals": "!=", "assertIs": "is",
    "assertIsNot": "is not", "assertIn": "in", "assertNotIn": "not in", "assertGreater": ">",
    "assertGreaterEqual": ">=", "assertLess": "<", "assertLessEqual": "<=",
}
_UNITTEST_UNARY = {"assertTrue": "a true value", "failUnless": "a true value", "assert_": "a true value",
                   "assertFalse": "a false value", "failIf": "a false value", "assertIsNone": "`None`",
                   "assertIsNotNone": "a value other than `None`"}


# ---------------------------------------------------------------------------------------------
# The kinds of failure

def _api(r: Reader, shown: ast.expr) -> tuple[str, dict]:
    """(name as written, description) of the package's public function `shown` exercises: a
    call in it, or the call that made a local it calls (`mf(2)` after `mf = memoize(f)`)."""
    found: list[tuple[str, dict]] = []
    for _, d, dotted in r.api_calls(shown):
        local = r.local_def(dotted)
        decorators = [x for x in (r.resolve(e) for e in local.decorator_list) if x and package_file(x[0])] \
            if local is not None else []
        if decorators:  # `@memoize def double(x)`: the package's part is the decorator
            found.extend((w, x) for x, w in decorators)
            continue
        own = ((in_package(d) or d).get("qualname") or "").rsplit(".", 1)[-1]
        # `cache.getsizeof(x)`: the method itself; `mf(2)`, `c.info()` with a lambda: what made them
        method = d.get("kind") == "method" or ("." in dotted and own.isidentifier())
        made = r.from_api(dotted.split(".", 1)[0]) if not method else None
        found.extend((x[2], x[1]) for x in (r.api_calls(made) if made is not None else [(None, d, dotted)]))
    for n in ast.walk(shown):
        made = r.from_api(n.id) if isinstance(n, ast.Name) else None
        found.extend((x[2], x[1]) for x in (r.api_calls(made) if made is not None else []))
    if not found:
        raise Unshowable("the failing statement calls nothing of the package")
    public = [x for x in found if is_public(*x)]
    if not public:
        raise Unshowable("the test calls only private functions of the package")
    if len(public) < len(found):  # `w = _Wrapper(10)` before a public `w.wrap(s)`: still not the API
        raise Unshowable("the test calls a private function of the package")
    return public[0]


def _sym(r: Reader, shown: ast.expr, text: str) -> Symptom:
    dotted, d = _api(r, shown)
    try:  # `self.flag` rendered as `True`: "`True` gives `True`" says nothing of the package
        ast.literal_eval(r.render(shown))
        raise Unshowable("the asserted expression shows only as its value")
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    callee = ((in_package(d) or d).get("qualname") or dotted).rsplit(".", 1)[-1]
    return Symptom(r.render(shown), dotted, callee, package_file(d) or "", text, r.context())


def _no_raise(r: Reader, body: list[ast.AST] | ast.expr, expected: str) -> Symptom:
    nodes = body if isinstance(body, list) else [body]
    calls = [c for n in nodes for c in r.api_calls(n)]
    if not calls:
        raise Unshowable("the `raises` block calls nothing of the package")
    call = calls[-1][0]
    text = r.render(call)
    return _sym(r, call, f"Calling `{text}` does not raise `{expected}`, but it should.")


_RAISES_WITH_REGEX = {"assertRaisesRegex", "assertRaisesRegexp"}


def _raises_call(node: ast.Call) -> ast.expr | None:
    """`raises(E, lambda: f(x))` / `raises(E, f, x)` / `assertRaisesRegex(E, regex, f, x)` ->
    `f(x)`."""
    at = 2 if call_name(node) in _RAISES_WITH_REGEX else 1
    if len(node.args) <= at:
        return None
    fn = node.args[at]
    if isinstance(fn, ast.Lambda) and not fn.args.args:
        return fn.body
    # placed where the `raises` call is: the synthesised call is ordered by its line like any other
    return ast.copy_location(ast.Call(func=fn, args=node.args[at + 1:], keywords=[
        k for k in node.keywords if k.arg not in ("match", "msg", "expected_regex")]), node)


def _expected_raise(r: Reader, stmt: ast.AST) -> str | None:
    """The exception a `with pytest.raises(E)` / `raises(E, lambda: ...)` around `stmt` expects."""
    node = stmt
    while node is not None and node is not r.tf.tree:
        if isinstance(node, ast.With):
            for item in node.items:
                e = item.context_expr
                if isinstance(e, ast.Call) and call_name(e) in RAISES and e.args:
                    return ast.unparse(e.args[0])
        if isinstance(node, ast.Call) and call_name(node) in RAISES and node.args:
            return ast.unparse(node.args[0])
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        node = r.tf.parent.get(node)
    return None


_EXCEPTION_NAME = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*$")


def _check_expected_exception(wanted: str, exc: dict) -> None:
    """Unshowable unless "raises X, but `wanted` was expected" says something true and readable:
    `wanted` names an exception class (not a variable of a parametrised test, not a tuple), and
    not the class that was raised (pytest.raises caught nothing it expected: the failure is
    elsewhere, e.g. in a `match=` or a statement the raise interrupted)."""
    if not _EXCEPTION_NAME.match(wanted):
        raise Unshowable(f"the expected exception `{wanted}` is not a class name")
    if wanted.rsplit(".", 1)[-1] == (exc.get("type") or ""):
        raise Unshowable(f"the test expected the `{wanted}` that was raised")


def _header(stmt: ast.AST) -> ast.AST:
    """The part of a statement that runs on its own line(s): not the bodies of a compound one."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return stmt.iter
    if isinstance(stmt, (ast.If, ast.While)):
        return stmt.test
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return ast.Tuple([i.context_expr for i in stmt.items], ast.Load())
    if isinstance(stmt, ast.Try):
        return ast.Tuple([], ast.Load())
    return stmt


def _raised(r: Reader, stmt: ast.AST, exc: dict) -> Symptom:
    into = next((f for f in r.after if f.kind == "repo"), None)
    if isinstance(stmt, (ast.Import, ast.ImportFrom)) and into is not None:
        text = ast.unparse(stmt)
        return Symptom(text, text.split()[1], text.split()[1].split(".")[-1], into.path or "",
                       f"`{text}` raises `{exception_text(exc)}`, but the import was expected to succeed.")
    head = _header(stmt)
    calls = r.api_calls(head)
    if calls:
        match = [c for c in calls if into is not None and
                 ((in_package(c[1]) or c[1]).get("qualname") or "").rsplit(".", 1)[-1] == into.func]
        # `f(None)(g)` raising in `f` itself: the call of `f`, not of what it returned
        match.sort(key=lambda c: isinstance(c[0].func, ast.Call))
        shown: ast.expr = (match or calls)[0][0]
        lead = f"Calling `{r.render(shown)}` raises"
    else:
        # raised by the test's own code on what the package returned: `r = f(x); r["a"]`
        shown = head.value if isinstance(head, (ast.Expr, ast.Assign, ast.AugAssign)) else \
            head.test if isinstance(head, ast.Assert) else head
        if isinstance(shown, ast.Compare) and len(shown.ops) == 1:
            shown = shown.left if r.observed(shown.left) is not None else shown.comparators[0]
        elif isinstance(shown, ast.Call) and call_name(shown).startswith("assert"):
            # `self.assertEqual(cached.info(), 1)` raising in the test's own code: the operand
            shown = next((a for a in shown.args if r.observed(a) is not None), shown)
        if not isinstance(shown, ast.expr) or r.observed(shown) is None:
            raise Unshowable("the failing statement calls nothing of the package")
        lead = f"`{r.render(shown)}` raises"
    sentence = f"{lead} `{exception_text(exc)}`"
    wanted = _expected_raise(r, stmt)
    if wanted:
        _check_expected_exception(wanted, exc)
        sentence += f", but `{wanted}` was expected."
    elif isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1:
        left, right = stmt.test.left, stmt.test.comparators[0]
        other = right if any(n is shown for n in ast.walk(left)) else left
        expected = r.value(None, other, exact=True) if r.observed(other) is None else None
        sentence += f", but `{expected}` was expected." if expected else ", but no error was expected."
    else:
        sentence += ", but no error was expected."
    return _sym(r, shown, sentence)


def _compare(r: Reader, test: ast.Compare, records: list[dict], message: str) -> Symptom:
    if len(test.ops) != 1:
        raise Unshowable("a chained comparison")
    left, right = test.left, test.comparators[0]
    shown_left, shown_right = r.observed(left), r.observed(right)
    if shown_left is None and shown_right is None:
        raise Unshowable("the assertion calls nothing of the package")
    api_left = shown_left is not None
    shown = shown_left if api_left else shown_right
    other = right if api_left else left
    rec = next((c for c in reversed(records) if c.get("path") == r.frame.path and c.get("line") == r.frame.line),
               None)
    op = ast.unparse(ast.Compare(left=ast.Constant(0), ops=test.ops, comparators=[ast.Constant(0)]))[2:-2]
    if rec is not None:
        actual = r.value(rec["left"] if api_left else rec["right"], None, exact=False)
        expected = r.value(rec["right"] if api_left else rec["left"], other, exact=True)
    else:
        sides = _explained_sides(message)
        if sides is None:
            # no operands recorded (a test module pytest did not rewrite): what the failed
            # comparison itself says of the call's value, against the expected side
            expected = r.value(None, other, exact=True)
            if expected is None:
                raise Unshowable("no compared values recorded")
            return _sym(r, shown, _unknown_actual(r, r.render(shown), shown, op.strip(), expected, api_left))
        actual, expected = (sides if api_left else sides[::-1])
        if not printable(expected):
            expected = r.value(None, other, exact=True)
    if actual is None or expected is None:
        raise Unshowable("a compared value has no printable form")
    if actual == expected and op.strip() not in ("!=", "is not"):
        raise Unshowable("the compared values print the same")
    text = r.render(shown)
    return _sym(r, shown, _comparison(r, text, shown, op.strip(), actual, expected, api_left))


def _explained_sides(message: str) -> tuple[str, str] | None:
    """(left, right) from pytest's `assert L == R` line, when no operands were recorded."""
    first = message.strip().split("\n", 1)[0]
    first = first[len("AssertionError: "):] if first.startswith("AssertionError: ") else first
    if not first.startswith("assert "):
        return None
    try:
        expr = ast.parse(first[len("assert "):], mode="eval").body
    except SyntaxError:
        return None
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        return ast.unparse(expr.left), ast.unparse(expr.comparators[0])
    return None


_WHERE = re.compile(r"^\s*\+\s+where (.*) = (?:<(?:function|bound method|built-in function) ([\w.]+)[^>]*>|([\w.]+))\(")


def _where_value(message: str, callee: str) -> str | None:
    """The value pytest shows for a call of `callee` in its `where X = f(...)` lines."""
    for line in message.split("\n"):
        m = re.match(_WHERE, line)
        if m and (m.group(2) or m.group(3)).rsplit(".", 1)[-1] == callee:
            return m.group(1).strip()
    return None


def _truth(r: Reader, test: ast.expr, message: str) -> Symptom:
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    target = test.operand if negated else test
    if isinstance(target, ast.Call) and call_name(target) in RAISES and not negated:
        call = _raises_call(target)
        if call is not None:
            return _no_raise(r, call, ast.unparse(target.args[0]))
    shown = r.observed(target)
    if shown is None:
        raise Unshowable("the assertion calls nothing of the package")
    first = message.strip().split("\n", 1)[0]
    first = first[len("AssertionError: "):] if first.startswith("AssertionError: ") else first
    value = first[len("assert not "):] if negated and first.startswith("assert not ") else \
        first[len("assert "):] if first.startswith("assert ") else None
    want = "a false value" if negated else "a true value"
    text = r.render(shown)
    lead, verb = _verb(r, shown)
    if value is None:
        # no explanation (a test module pytest did not rewrite, or the assert's own message):
        # the failed `assert x` itself says x was false
        return _sym(r, shown, f"{lead}`{text}` {verb} a {'true' if negated else 'false'} value, but {want} was "
                              "expected.")
    sentence = f"{lead}`{text}` {verb} `{clip(value)}`, but {want} was expected."
    calls = r.api_calls(shown)
    if calls and calls[0][0] is not shown:
        inner = _where_value(message, call_name(calls[0][0]))
        if inner is not None:
            sentence += f" (`{r.render(calls[0][0])}` returns `{clip(inner)}`.)"
    return _sym(r, shown, sentence)


def _unittest(r: Reader, call: ast.Call) -> Symptom:
    method = call_name(call)
    ext = next((f for f in r.after if f.kind == "ext"), None)
    values = _unittest_operands(ext.args if ext else {})
    if method in _UNITTEST_OPS and len(call.args) >= 2:
        op = _UNITTEST_OPS[method]
        shown_left, shown_right = r.observed(call.args[0]), r.observed(call.args[1])
        if shown_left is None and shown_right is None:
            raise Unshowable("the assertion calls nothing of the package")
        api_left = shown_left is not None
        shown = shown_left if api_left else shown_right
        other = call.args[1] if api_left else call.args[0]
        a, e = (0, 1) if api_left else (1, 0)
        actual = r.value(values[a], None, exact=False) if len(values) > 1 else None
        expected = r.value(values[e] if len(values) > 1 else None, other, exact=True)
        if actual is None or expected is None:
            raise Unshowable("a compared value has no printable form")
        if actual == expected and op not in ("!=", "is not"):
            raise Unshowable("the compared values print the same")
        return _sym(r, shown, _comparison(r, r.render(shown), shown, op, actual, expected, api_left))
    if method in _UNITTEST_UNARY and call.args:
        shown = r.observed(call.args[0])
        if shown is None:
            raise Unshowable("the assertion calls nothing of the package")
        actual = r.value(values[0], None, exact=False) if values else None
        if actual is None:
            raise Unshowable("no value recorded for the asserted expression")
        lead, verb = _verb(r, shown)
        return _sym(r, shown, f"{lead}`{r.render(shown)}` {verb} `{actual}`, but {_UNITTEST_UNARY[method]} "
                              "was expected.")
    if method in _UNITTEST_REGEX and len(call.args) >= 2:
        shown = r.observed(call.args[0])
        if shown is None:
            raise Unshowable("the assertion calls nothing of the package")
        actual = r.value(values[0], None, exact=False) if len(values) > 1 else None
        pattern = r.value(values[1] if len(values) > 1 else None, call.args[1], exact=True)
        if actual is None or pattern is None:
            raise Unshowable("a compared value has no printable form")
        lead, verb = _verb(r, shown)
        return _sym(r, shown, f"{lead}`{r.render(shown)}` {verb} `{actual}`, but a value "
                              f"{_UNITTEST_REGEX[method]} the regular expression `{pattern}` was expected.")
    if method in _UNITTEST_TYPES and len(call.args) >= 2:
        shown = r.observed(call.args[0])
        if shown is None:
            raise Unshowable("the assertion calls nothing of the package")
        actual = r.value(values[0], None, exact=False) if values else None
        kind = r.render(call.args[1])
        if actual is None:
            raise Unshowable("no value recorded for the asserted expression")
        lead, verb = _verb(r, shown)
        return _sym(r, shown, f"{lead}`{r.render(shown)}` {verb} `{actual}`, but {_UNITTEST_TYPES[method]} "
                              f"`{kind}` was expected.")
    if method in RAISES:
        inner = _raises_call(call)
        if inner is not None:
            return _no_raise(r, inner, ast.unparse(call.args[0]))
    raise Unshowable(f"unittest's `{method}`")


_UNITTEST_REGEX = {"assertRegex": "matching", "assertRegexpMatches": "matching", "assertNotRegex": "not matching",
                   "assertNotRegexpMatches": "not matching"}
_UNITTEST_TYPES = {"assertIsInstance": "an instance of", "assertNotIsInstance": "anything but an instance of"}
_UNITTEST_PAIRS = [("first", "second"), ("member", "container"), ("text", "expected_regex"),
                   ("text", "unexpected_regex"), ("obj", "cls"), ("expr1", "expr2"), ("a", "b"), ("list1", "list2"),
                   ("tuple1", "tuple2"), ("d1", "d2"), ("set1", "set2"), ("seq1", "seq2"), ("expr",), ("obj",)]


def _unittest_operands(args: dict) -> list[dict]:
    """The operands a unittest assert method received, in its parameters' order (a record read
    back from a journal may have its keys sorted: `container` before `member`)."""
    for names in _UNITTEST_PAIRS:
        if all(n in args for n in names):
            return [args[n] for n in names]
    return [d for k, d in args.items() if k not in ("self", "msg")]


def _assertion(r: Reader, stmt: ast.AST, detail: dict) -> Symptom:
    message = (detail.get("exc") or {}).get("message") or ""
    if isinstance(stmt, ast.Assert):
        test = stmt.test
        if isinstance(test, ast.Compare):
            return _compare(r, test, detail.get("compares") or [], message)
        if isinstance(test, ast.BoolOp):
            raise Unshowable("an assert of `and` / `or`")
        return _truth(r, test, message)
    expr = stmt.value if isinstance(stmt, ast.Expr) else stmt
    if isinstance(expr, ast.Call) and call_name(expr).startswith(("assert", "fail")):
        return _unittest(r, expr)
    raise Unshowable("an assertion error outside an assert")


def _with_body(r: Reader, stmt: ast.AST) -> list[ast.AST] | None:
    """The body of the `with pytest.raises(...)` at or around `stmt`."""
    node = stmt
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(node, ast.With) and any(
                isinstance(i.context_expr, ast.Call) and call_name(i.context_expr) in RAISES for i in node.items):
            return node.body
        node = r.tf.parent.get(node)
    return None


def _doctest(example: dict, read: Callable[[str], TestFile | None]) -> Symptom:
    """A failing example of a docstring (pytest's doctest items): the example is already the
    call with values; examples before it that bind names are its setup."""
    source = (example.get("source") or "").strip()
    want, got = (example.get("want") or "").strip(), (example.get("got") or "").strip()
    name = example.get("name") or ""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise Unshowable("a doctest example that does not parse") from e
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    if not calls or "\n" in source:
        raise Unshowable("a doctest example that is not a single call")
    setup = []
    for before in example.get("before") or []:
        try:
            if not all(isinstance(n, ast.Expr) for n in ast.parse(before).body):
                setup.append(before.strip())
        except SyntaxError:
            continue
    if got.startswith("Traceback") or "Error" in got.split("\n")[-1].split(":")[0]:
        happened = f"raises `{clip(got.splitlines()[-1].strip())}`"
    else:
        happened = f"gives `{clip(got)}`" if got else "prints nothing"
    owner = name.rsplit(".", 1)[-1]
    expected = f"`{clip(want)}`" if want else "no output"
    text = f"The example `{source}` from the docstring of `{owner}` {happened}, but {expected} was expected."
    module = name.rsplit(".", 1)[0].replace(".", "/")
    file = next((p for p in (f"{module}.py", f"{module}/__init__.py", f"src/{module}.py",
                             f"src/{module}/__init__.py") if read(p) is not None), "")
    return Symptom(source, call_name(calls[0]), owner, file, text, tuple(setup))


_REGEX_MISMATCH = re.compile(
    r"^Regex pattern did not match\.\s*\n\s*(?:Regex|Expected regex): (.*)\n\s*(?:Input|Actual message): (.*)")


def _raises_failure(r: Reader, stmt: ast.AST, exc: dict) -> Symptom | None:
    """A `pytest.raises` / `assertRaises` that failed: nothing raised, or a message that does
    not match; None for any other failure."""
    message = exc.get("message") or ""
    if exc.get("type") not in ("Failed", "AssertionError"):
        return None
    body = _with_body(r, stmt)
    if body is None and isinstance(stmt, (ast.Expr, ast.Assign)) and isinstance(stmt.value, ast.Call) \
            and call_name(stmt.value) in RAISES:
        inner = _raises_call(stmt.value)
        body = [inner] if inner is not None else None
    if body is None:
        return None
    expected = raised_names(message)
    if expected is not None:
        return _no_raise(r, body, expected)
    m = re.match(_REGEX_MISMATCH, message)
    calls = [c for n in body for c in r.api_calls(n)]
    if m is None or not calls:
        return None
    wanted = _expected_raise(r, body[0]) or "the exception"
    call = calls[-1][0]
    return _sym(r, call, f"Calling `{r.render(call)}` raises `{wanted}` with the message `{clip(m.group(2))}`, "
                         f"but a message matching `{clip(m.group(1))}` was expected.")


def _read(failure: Failure, read: Callable[[str], TestFile | None]) -> Symptom:
    detail = failure.detail
    if not detail:
        raise Unshowable("no failure detail was recorded")
    if detail.get("doctest"):
        return _doctest(detail["doctest"][0], read)
    frames = [Frame.of(f) for f in detail.get("frames") or []]
    i = choose(frames)
    if i is None:
        raise Unshowable("the failure is not in a test file")
    if _in_one_line_helper(frames, i, read):
        i -= 1  # `self.decorator(f)` raising inside `return self.DECORATOR(f)`: the caller's call, inlined
    frame = frames[i]
    tf = read(frame.path or "")
    if not isinstance(tf, TestFile):
        raise Unshowable("the test file does not parse")
    scope = tf.scope(frame.first, frame.func, frame.line)
    stmt = tf.statement(scope, frame.line) if scope is not None else None
    if stmt is None:
        raise Unshowable("the failing statement is not in a test function")
    r = Reader(frame, frames[i + 1:], tf, scope, read)
    exc = detail.get("exc") or {}
    found = _raises_failure(r, stmt, exc)
    if found is not None:
        return found
    into_package = any(f.kind == "repo" for f in r.after)
    if exc.get("type") == "AssertionError" and not into_package:
        helped = _through_helper(frames, i, stmt, read, detail)
        return helped if helped is not None else _assertion(r, stmt, detail)
    return _raised(r, stmt, exc)


def _in_one_line_helper(frames: list[Frame], i: int, read: Callable[[str], TestFile | None]) -> bool:
    """True when frame `i` runs a test class's one-line helper method (`Reader.inlined`) that
    the test frame before it called as `self.<name>(...)`."""
    if i == 0 or frames[i - 1].kind != "test":
        return False
    inner, outer = _frame_statement(frames[i], read), _frame_statement(frames[i - 1], read)
    if inner is None or outer is None or not isinstance(inner[1], (ast.FunctionDef, ast.AsyncFunctionDef)) or \
            returned_expr(inner[1]) is None:
        return False
    return any(isinstance(n, ast.Call) and dotted_name(n.func) == f"self.{frames[i].func}" for n in ast.walk(outer[2]))


def _frame_statement(frame: Frame, read: Callable[[str], TestFile | None]) -> tuple | None:
    """(parsed file, scope, statement) of a test frame, or None."""
    tf = read(frame.path or "")
    if not isinstance(tf, TestFile):
        return None
    scope = tf.scope(frame.first, frame.func, frame.line)
    stmt = tf.statement(scope, frame.line) if scope is not None else None
    return (tf, scope, stmt) if stmt is not None else None


def _through_helper(frames: list[Frame], i: int, stmt: ast.AST, read: Callable[[str], TestFile | None],
                    detail: dict) -> Symptom | None:
    """An assert failing inside the test suite's own helper (`assert_equal(expected, result)`
    in a `common.py`), told as the caller's assert: the helper's parameters replaced by the
    arguments the caller passed, read in the caller's frame (where `result = tabulate(...)`
    was bound); None when the failure is not of that shape."""
    helper = frames[i]
    if i == 0 or frames[i - 1].kind != "test" or not isinstance(stmt, ast.Assert):
        return None
    fn = _frame_statement(helper, read)
    caller = _frame_statement(frames[i - 1], read)
    if fn is None or caller is None or not isinstance(fn[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    calls = [n for n in ast.walk(_header(caller[2])) if isinstance(n, ast.Call) and call_name(n) == helper.func]
    values = bind_arguments(fn[1], calls[0]) if len(calls) == 1 else None
    used = {n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name)}
    if values is None or not used <= set(values) | BUILTIN_NAMES:
        return None  # the assert reads the helper's own locals: not the caller's values
    test = ReplaceNames(values).visit(copy.deepcopy(stmt.test))
    new = ast.copy_location(ast.Assert(test=test, msg=None), calls[0])
    at = frames[i - 1]
    compares = [{**c, "path": at.path, "line": at.line} for c in detail.get("compares") or []
                if c.get("path") == helper.path and c.get("line") == helper.line]
    if not compares and isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1:
        # a helper outside pytest's assertion rewriting records no operands: its locals are them
        sides = [helper.names.get(n.id) if isinstance(n, ast.Name) else None
                 for n in (stmt.test.left, stmt.test.comparators[0])]
        if all(sides):
            compares = [{"path": at.path, "line": at.line, "left": sides[0], "right": sides[1]}]
    r = Reader(at, frames[i:], caller[0], caller[1], read)
    return _assertion(r, new, {**detail, "compares": compares})


def symptom(failure: Failure, read: Callable[[str], TestFile | None]) -> Symptom | Dropped:
    """What a user would say about this failing test, or why it cannot be said simply.
    `read(path)` gives the parsed test file (`parse_test_file`) or None."""
    try:
        return _read(failure, read)
    except Unshowable as e:
        return Dropped(e.reason)
    except (SyntaxError, ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as e:
        return Dropped(f"unreadable failure record ({type(e).__name__})")
