"""The plain issue sentence for a failing test no specific form can show with values: which
public function of the package the test exercises, and what the run itself reported -- the
exception it raised with its message, the exception it should have raised and did not, or the
first line of the failed assertion's own report (pytest's `assert 1 == 2`, unittest's
`'a' != 'b'`). Every part of it is read from the run or the package's source, never guessed:

    Calling `configargparse.ArgumentParser.parse_args` raises `TypeError: 'NoneType' object is
    not iterable`, but no error was expected.
    A test of `marshmallow.Schema.load` fails its check: `AssertionError: 1 != 2`.

The function named is the package's entry the test called (the first package frame below the
test's in the traceback), else the package's public function or class the failing statement
(or, failing that, the test before it) calls, directly or through a helper the test file
defines. A private entry (a test calling `_helper` itself) is never named; with no public one
to name, the failure gives no sentence.

What this does not guarantee: the arguments the test passed (no values are shown: that is what
the specific forms in `symptoms` are for), nor that the failed check is about the named
function's own result (the sentence says only that a test of it fails)."""
from __future__ import annotations

import ast
import re
from collections.abc import Callable

from fixrl.tasks.generate.issue.records import Dropped, Failure, Symptom
from fixrl.tasks.generate.issue.source import (
    RAISES,
    Frame,
    TestFile,
    call_name,
    choose,
    clip,
    dotted_name,
    exception_text,
    in_package,
    package_file,
    public_name,
    raised_names,
)

_CRASH = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)(?::\s?(.*))?$")
_CHECK_FAILED = ("AssertionError", "Failed")


def _exception(failure: Failure) -> dict:
    """The exception as the capture recorded it, else as pytest's crash line states it
    (`TypeError: message`; the capture keeps details for the first failures of a run only)."""
    exc = (failure.detail or {}).get("exc")
    if isinstance(exc, dict) and exc.get("type"):
        return exc
    first = failure.message.strip().split("\n", 1)[0]
    if first.startswith("assert "):
        return {"type": "AssertionError", "module": "builtins", "message": failure.message.strip()}
    m = _CRASH.match(first)
    if m is None:
        return {}
    module, _, name = m.group(1).rpartition(".")
    rest = failure.message.strip().split("\n", 1)[1:]
    return {"type": name, "module": module or "builtins", "message": "\n".join([m.group(2) or "", *rest]).strip()}


def _frames(failure: Failure) -> list[Frame]:
    """The traceback's frames: the capture's (with names), else pytest's entries (paths, lines)."""
    frames = (failure.detail or {}).get("frames")
    if frames:
        return [Frame.of(f) for f in frames]
    return [Frame.of({"path": p, "line": line}) for p, line in failure.entries]


def _module_of(path: str) -> str:
    parts = path[:-3].split("/") if path.endswith(".py") else path.split("/")
    if parts and parts[0] in ("src", "lib"):
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _qualname_at(tf: TestFile, line: int, first: int) -> str | None:
    """The qualified name of the innermost function of a package file spanning `line` (the one
    starting at `first` when that is known), classes included (`Schema.load`)."""
    best = None
    for node in ast.walk(tf.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno <= line <= (node.end_lineno or node.lineno):
            starts = {node.lineno, *(d.lineno for d in node.decorator_list)}
            if first and first not in starts:
                continue
            if best is None or node.lineno >= best.lineno:
                best = node
    if best is None:
        return None
    names, node = [best.name], tf.parent.get(best)
    while node is not None and not isinstance(node, ast.Module):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None  # a nested function: no name a user could call
        if isinstance(node, ast.ClassDef):
            names.append(node.name)
        node = tf.parent.get(node)
    return ".".join(reversed(names))


def _private(dotted: str) -> bool:
    return any(p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in dotted.split("."))


def _public_api(qualified: str) -> str | None:
    """`m.Foo.__init__` -> `m.Foo`, `m.Foo.__getitem__` kept; None when a part is private."""
    if qualified.endswith(".__init__"):
        qualified = qualified[: -len(".__init__")]
    return None if _private(qualified) else qualified


def _entry(frames: list[Frame], read: Callable[[str], TestFile | None]) -> tuple[str, str, str] | None:
    """(public name, file, bare name) of the package function the test called, when the
    failure passed through the package: the first package frame below the last test frame that
    called into it. A private entry (`_helper` called by the test itself) gives None."""
    i = choose(frames)
    start = i + 1 if i is not None else 0
    entry = next((f for f in frames[start:] if f.kind == "repo"), None)
    if entry is None or not entry.path:
        return None
    tf = read(entry.path)
    qual = _qualname_at(tf, entry.line, entry.first) if isinstance(tf, TestFile) else None
    if qual is None:
        return None
    api = _public_api(f"{_module_of(entry.path)}.{qual}")
    return (api, entry.path, qual.rsplit(".", 1)[-1]) if api else None


def _named_in_test(frame: Frame, read: Callable[[str], TestFile | None]) -> tuple[str, str, str] | None:
    """(public name, file, bare name) of the package function or class the failing statement
    calls, else the last one the test calls before it (from the test frame's recorded names)."""
    tf = read(frame.path or "")
    if not isinstance(tf, TestFile):
        return None
    scope = tf.scope(frame.first, frame.func, frame.line)
    if scope is None:
        return None
    stmt = tf.statement(scope, frame.line)
    # the failing statement's calls (a `with` block's body too: "DID NOT RAISE" is reported at
    # its `with` line), then those before it
    at = _run_calls(stmt) if stmt is not None else []
    calls = [n for n in _run_calls(scope) if n.lineno < (stmt or scope).lineno]
    for group in (at, calls):
        for call in sorted(group, key=lambda n: (n.lineno, n.col_offset), reverse=True):
            found = _package_callable(frame, call, read) or _through_local_helper(frame, tf, call, read) \
                or _test_class_method(frame, tf, scope, call, read)
            if found is not None:
                return found
    return None


def _run_calls(node: ast.AST) -> list[ast.Call]:
    """The calls `node` makes itself: not those in the bodies of functions, classes and
    lambdas it defines (a validator's `raise ValidationError(...)` runs only if called), nor in
    a `raise` (the exception the test makes is not what it tests)."""
    out: list[ast.Call] = []

    def walk(n: ast.AST) -> None:
        for child in ast.iter_child_nodes(n):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Raise)):
                continue
            if isinstance(child, ast.Call):
                out.append(child)
            walk(child)

    if isinstance(node, ast.Call):
        out.append(node)
    walk(node)
    return out


def _test_class_method(frame: Frame, tf: TestFile, scope: ast.AST, call: ast.Call,
                       read: Callable[[str], TestFile | None]) -> tuple[str, str, str] | None:
    """The package's method called on an object of a class the test file defines as a subclass
    of the package's class (`schema.validate(...)` with `class Schema2(Schema)`, or
    `VSchema().load(...)`) and does not override: named by the package's class."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr.startswith("_"):
        return None
    base = func.value
    if isinstance(base, ast.Call):  # `VSchema().load(...)`: the class called
        cls_name = dotted_name(base.func)
    else:
        d = frame.names.get(dotted_name(base) or "") or {}
        cls_name = (d.get("qualname") or "").rsplit(".", 1)[-1] \
            if d.get("kind") == "value" and d.get("file") == frame.path else None
    # the test's own `class MySchema(Schema)` before the call, else the file's only one of that name
    local = [n for n in ast.walk(scope) if isinstance(n, ast.ClassDef) and n.name == cls_name
             and n.lineno < call.lineno]
    classes = local[-1:] or [n for n in tf.tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name]
    if len(classes) != 1 or any(isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef)) and x.name == func.attr
                                for x in classes[0].body):
        return None
    for b in classes[0].bases:
        d = frame.names.get(dotted_name(b) or "") or {}
        parent = public_name(d) if d.get("kind") == "class" and package_file(d) and \
            read(package_file(d) or "") is not None else None
        # a class statement at the top of the test file: its names are not the test's, its imports are
        parent = parent or _imported(tf, dotted_name(b) or "", read)
        api = _public_api(f"{parent}.{func.attr}") if parent else None
        if api:
            return api, "", func.attr
    return None


def _through_local_helper(frame: Frame, tf: TestFile, call: ast.Call, read: Callable[[str], TestFile | None]
                          ) -> tuple[str, str, str] | None:
    """The package's public function a helper the test file defines calls (`parse_twice(x)`
    with `def parse_twice(t): return words.parse_count(t)`): the helper's calls resolved through
    the test file's imports of the package's modules (the helper's names are not recorded)."""
    d = frame.names.get(dotted_name(call.func) or "") or {}
    if d.get("kind") != "function" or d.get("file") != frame.path:
        return None
    fn = tf.function_at(int(d.get("line") or 0))
    if fn is None:
        return None
    for node in sorted((n for n in ast.walk(fn) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset)):
        name = _imported(tf, dotted_name(node.func) or "", read)
        if name is not None:
            # the file the name is defined in is not known (a package re-exports): none is said
            return name, "", name.rsplit(".", 1)[-1]
    return None


def _imported(tf: TestFile, dotted: str, read: Callable[[str], TestFile | None]) -> str | None:
    """`words.parse_count` for `words.parse_count` (after `import words`) or `parse_count` (after
    `from words import parse_count`) when the module is the repository's and no part is private."""
    imported = {a.asname or a.name: a.name for n in ast.walk(tf.tree) if isinstance(n, ast.Import) for a in n.names}
    head, _, rest = dotted.partition(".")
    name = f"{imported[head]}.{rest}" if head in imported and rest else \
        f"{tf.imported_from[head]}.{dotted}" if head in tf.imported_from else None
    if name is None or _private(name) or _module_file(name.rsplit(".", 1)[0], read) is None:
        return None
    return name


def _module_file(module: str, read: Callable[[str], TestFile | None]) -> str | None:
    """The repository file of a module the test imports (`words.core` -> `words/core.py`), or
    None when the repository does not define it (the standard library, an installed package)."""
    base = module.replace(".", "/")
    for path in (f"{base}.py", f"{base}/__init__.py", f"src/{base}.py", f"src/{base}/__init__.py"):
        if read(path) is not None:
            return path
    return None


def _package_callable(frame: Frame, call: ast.Call, read: Callable[[str], TestFile | None]
                      ) -> tuple[str, str, str] | None:
    """The package's public function or class `call` calls (or a `raises` call passes as its
    callable), by its public module path; only one defined in a source file of the repository
    (a standard-library function's recorded file is `<frozen posixpath>`)."""
    funcs = [call.func]
    if call_name(call) in RAISES:
        funcs = list(call.args[1:3])
    for func in funcs:
        dotted = dotted_name(func)
        d = frame.names.get(dotted) if dotted else None
        owner = frame.names.get(dotted.rsplit(".", 1)[0]) if d is None and dotted and "." in dotted else None
        if owner and owner.get("kind") == "value" and package_file(owner) and owner.get("module") and \
                owner.get("qualname") and read(package_file(owner) or "") is not None:
            # a method of the package's object (`self.tally.total()`): named by the object's class
            api = _public_api(f"{owner['module']}.{owner['qualname']}.{dotted.rsplit('.', 1)[1]}")
            if api and "<" not in api:
                return api, package_file(owner) or "", api.rsplit(".", 1)[-1]
        if not d or d.get("kind") not in ("function", "class", "callable") or not package_file(d) or \
                read(package_file(d) or "") is None:
            continue
        own = in_package(d) or d
        name = public_name(d)
        if name is None or "<" in (own.get("qualname") or ""):
            continue
        api = _public_api(name)
        if api:
            return api, package_file(d) or "", api.rsplit(".", 1)[-1]
    return None


def _expected_raise(frame: Frame, read: Callable[[str], TestFile | None]) -> str | None:
    """The exception class a `with pytest.raises(E)` / `assertRaises(E)` around the failing line
    names, '' when the line is in no such block, None when that is not known (the test file not
    read) or the expectation is not a class name."""
    tf = read(frame.path or "")
    scope = tf.scope(frame.first, frame.func, frame.line) if isinstance(tf, TestFile) else None
    stmt = tf.statement(scope, frame.line) if scope is not None else None
    if stmt is None:
        return None
    node = stmt
    while node is not None and node is not scope:
        if isinstance(node, ast.With):
            for item in node.items:
                e = item.context_expr
                if isinstance(e, ast.Call) and call_name(e) in RAISES and e.args:
                    wanted = ast.unparse(e.args[0])
                    return wanted if re.match(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*$", wanted) else None
        node = tf.parent.get(node)
    return ""


def _first_line(text: str) -> str:
    first = text.strip().split("\n", 1)[0].strip()
    return clip(re.sub(r" at 0x[0-9a-fA-F]+", "", first))


def fallback(failure: Failure, read: Callable[[str], TestFile | None]) -> Symptom | Dropped:
    """The plain sentence for one failing test (see the module docstring), or why even that
    cannot be said truthfully."""
    exc = _exception(failure)
    if not exc.get("type"):
        return Dropped("the run reported no exception")
    frames = _frames(failure)
    i = choose(frames)
    inner = _entry(frames, read)
    named = inner or (_named_in_test(frames[i], read) if i is not None else None)
    if named is None:
        return Dropped("the test reaches no public function of the package")
    api, file, callee = named
    kind, message = exc.get("type"), exc.get("message") or ""
    raised_in_package = inner is not None and frames[-1].kind == "repo"
    not_raised = raised_names(message) if kind in _CHECK_FAILED else None
    if not_raised:
        text = f"A call of `{api}` does not raise `{not_raised}`, but it should."
    elif kind in _CHECK_FAILED and not raised_in_package:
        report = _first_line(message)
        if not report:
            return Dropped("the failed check reported nothing")
        shown = report if report.startswith("assert ") else f"{kind}: {report}"
        text = f"A test of `{api}` fails its check: `{shown}`."
    else:
        wanted = _expected_raise(frames[i], read) if i is not None else None
        if wanted and wanted.rsplit(".", 1)[-1] == kind:
            return Dropped("the test expected the exception that was raised")
        lead = f"Calling `{api}` raises" if inner is not None else f"A test of `{api}` fails with"
        # what was expected instead only when the test's own statement says it
        tail = f", but `{wanted}` was expected" if wanted else ", but no error was expected" if wanted == "" else ""
        text = f"{lead} `{exception_text(exc)}`{tail}."
    return Symptom(api, api, callee, file, text, ())
