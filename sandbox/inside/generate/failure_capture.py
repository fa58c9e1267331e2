"""What a failing test saw, recorded inside the generator's pytest run so that
`tasks.generate.issue_text` can write an issue with values where the test has variable names.

The generator writes this file's source after `generate/outcomes.py`'s in its pytest plugin's
file (`tasks.generate.execute.plugin_source`), so it runs in the repository's own interpreter:
standard library and pytest only, no fixrl, self-contained, no `from __future__`. For a
failing test it records, in `report._fixrl_detail`:

- `exc`: the exception's type, module and message;
- `frames`: each traceback frame inside the repository (path, line, function, first line of
  the function). A frame in a test file also gets `names`: a description (`describe`) of each
  local and of each global, builtin and dotted module attribute (`inflection.singularize`) its
  code refers to. A frame in the repository's other files, and the first frame past the
  repository (e.g. unittest's `assertEqual`), get `args`: their parameters;
- `compares`: each comparison pytest explained for a failing assert
  (`pytest_assertrepr_compare`: operator and both operands, described), with the file and line
  of the assert.

A description says what an object is (module, class, function with its defining file and
first line, or a value with its class and repr), never the object itself.

It must never change a test's outcome: every step is guarded, and what cannot be captured is
left out. What it does not guarantee: values are read after the test failed, so an argument the
buggy call mutated, or a variable reassigned after the call, shows its later value; a repr that
runs user code runs it once more.
"""
import builtins
import inspect
import os
import re
import sys
import types

import pytest

_REPR_MAX = 1200
"""Longest repr kept (a longer one is cut and marked `cut`)."""
_NAMES_MAX = 60
_FRAMES_MAX = 24
_DETAILS_MAX = 60
"""Failures described per session: a mutant that breaks hundreds of tests needs only a few."""
_SKIP_DIRS = (".fixrl_gen", ".venv", "venv", ".tox", ".nox", "site-packages")
_TEST_DIRS = ("tests", "test")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")

_compares = []
_described = [0]


def _in_repo(path):
    """`path` relative to the repository (the working directory), or None outside it."""
    try:
        full = os.path.abspath(path)
        cwd = os.getcwd()
    except (OSError, TypeError, ValueError):
        return None
    if not full.startswith(cwd + os.sep):
        return None
    rel = os.path.relpath(full, cwd).replace(os.sep, "/")
    if any(part in _SKIP_DIRS for part in rel.split("/")[:-1]):
        return None
    return rel


def _testish(rel):
    parts = rel.split("/")
    name = parts[-1]
    return (any(p in _TEST_DIRS for p in parts[:-1]) or name == "conftest.py"
            or name.startswith("test_") or name.endswith("_test.py"))


def _repr(obj):
    try:
        if isinstance(obj, (str, bytes, list, tuple, dict, set, frozenset)) and len(obj) > 50000:
            return None, True
        text = _ADDRESS.sub("", repr(obj))
    except Exception:  # a broken __repr__ is the object's business
        return None, False
    if len(text) > _REPR_MAX:
        return text[:_REPR_MAX], True
    return text, False


def _origin(obj):
    """(module, qualname, file in the repository or None, first line) of a function or class."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    code = getattr(obj, "__code__", None)
    if code is not None:
        return module, qualname, _in_repo(code.co_filename), code.co_firstlineno
    mod = sys.modules.get(module) if isinstance(module, str) else None
    path = getattr(mod, "__file__", None)
    return module, qualname, _in_repo(path) if path else None, None


def _unwrap(obj):
    """The function under decorators and wrappers (`__wrapped__`, a `func` attribute)."""
    for _ in range(4):
        inner = getattr(obj, "__wrapped__", None)
        if inner is None and not isinstance(obj, _ROUTINES) and not inspect.isclass(obj):
            inner = getattr(obj, "func", None)
        if inner is None or not callable(inner) or inner is obj:
            break
        obj = inner
    return obj


_ROUTINES = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.MethodWrapperType,
             types.WrapperDescriptorType, types.MethodDescriptorType, types.ClassMethodDescriptorType)


def _put(d, module, qualname, file, line):
    d["module"], d["qualname"] = module, qualname
    if file is not None:
        d["file"], d["line"] = file, line


def describe(obj):
    """What `obj` is, as JSON-safe data (see the module docstring)."""
    d = {}
    try:
        if isinstance(obj, types.ModuleType):
            d["kind"] = "module"
            d["name"] = obj.__name__
            return d
        if inspect.isclass(obj):
            d["kind"] = "class"
            _put(d, *_origin(obj))
            return d
        if isinstance(obj, _ROUTINES):
            d["kind"] = "function"
            target = getattr(obj, "__func__", obj)
            _put(d, *_origin(target))
            inner = _unwrap(target)
            if inner is not target:  # a decorated function: the wrapper's origin and the wrapped one's
                d["wraps"] = {k: v for k, v in describe(inner).items() if k != "wraps"}
            owner = getattr(obj, "__self__", None)
            if owner is not None and not isinstance(owner, types.ModuleType):
                d["bound"] = _origin(type(owner))[1]
            return d
        d["kind"] = "callable" if callable(obj) else "value"
        _put(d, *_origin(type(obj)))
        if callable(obj):  # an instance with __call__ (a curried function, a partial)
            inner = _unwrap(obj)
            if inner is not obj and isinstance(inner, _ROUTINES):
                d["wraps"] = {k: v for k, v in describe(inner).items() if k != "wraps"}
        text, cut = _repr(obj)
        d["repr"] = text
        if cut:
            d["cut"] = True
    except Exception:  # describing must never fail the run
        d.setdefault("kind", "value")
    return d


def _code_names(code, out, depth=0):
    out.update(code.co_names)
    if depth < 4:
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                out.update(const.co_freevars)
                _code_names(const, out, depth + 1)


def _attributes(module, prefix, wanted, out, depth):
    for attr in sorted(wanted):
        if len(out) >= 2 * _NAMES_MAX:
            return
        try:
            value = module.__dict__[attr]
        except (KeyError, AttributeError, TypeError):
            continue
        key = prefix + "." + attr
        out[key] = describe(value)
        if isinstance(value, types.ModuleType) and depth > 1:
            _attributes(value, key, wanted, out, depth - 1)


def _fields(obj, wanted, methods=False):
    """(name, value) of the attributes in `wanted` that `obj` stores: in its `__dict__` or as
    plain class attributes (`self.cart`, a test class's `D = dict`), the function of a
    `staticmethod` (`DECORATOR = staticmethod(lru_cache)`), and with `methods` the test class's
    own methods (`self.cache`, a helper in the repository's test files); never a property or a
    bound method, so no user code runs."""
    out = []
    try:
        fields = object.__getattribute__(obj, "__dict__")  # not the object's own __getattr(ibute)__
    except AttributeError:
        fields = None
    fields = fields if isinstance(fields, dict) else {}
    for attr in sorted(wanted):
        if attr in fields:
            out.append((attr, fields[attr]))
            continue
        for klass in type(obj).__mro__[:-1]:
            value = klass.__dict__.get(attr, _fields)
            if value is not _fields:
                static = isinstance(value, staticmethod)
                value = value.__func__ if static else value
                if static or inspect.isclass(value) or not hasattr(type(value), "__get__") or \
                        (methods and _own_method(value)):
                    out.append((attr, value))
                break
        if len(out) >= _NAMES_MAX:
            break
    return out


def _own_method(value):
    """True for a plain function defined in the repository's test files."""
    code = getattr(value, "__code__", None)
    if not isinstance(value, types.FunctionType) or code is None:
        return False
    rel = _in_repo(code.co_filename)
    return rel is not None and _testish(rel)


def _object_fields(name, value, used, out):
    """`out[name.attr]` for the attributes of a local that its code uses; for `self` (a test
    case), also those the test class's own methods it uses refer to (`self.decorator` ->
    `self.DECORATOR`): `used` grows by those methods' names, so the globals they read are
    described too."""
    wanted = set(used)
    for _ in range(3):
        more = set()
        for attr, field in _fields(value, wanted, methods=name == "self"):
            out[name + "." + attr] = describe(field)
            if _own_method(field):
                _code_names(field.__code__, more)
        if more <= wanted:
            break
        wanted |= more
    used |= wanted


def _names(frame):
    """Locals of a test frame, and the globals, builtins and module attributes its code uses."""
    out = {}
    for name, value in list(frame.f_locals.items())[:_NAMES_MAX]:
        if not name.startswith("@") and name != "__tracebackhide__":
            out[name] = describe(value)
    used = set()
    _code_names(frame.f_code, used)
    for name, value in list(frame.f_locals.items())[:_NAMES_MAX]:
        if not name.startswith("@") and not isinstance(value, (types.ModuleType, type)):
            try:
                _object_fields(name, value, used, out)
            except Exception:  # an object whose attribute lookup runs code that fails
                continue
    for name in sorted(used):
        if name in out or name.startswith("@") or len(out) >= 2 * _NAMES_MAX:
            continue  # `@py_builtins`, `@pytest_ar`: pytest's assertion rewriting
        if name in frame.f_globals:
            value = frame.f_globals[name]
        elif hasattr(builtins, name):
            value = getattr(builtins, name)
        else:
            continue
        out[name] = describe(value)
        if isinstance(value, types.ModuleType):
            _attributes(value, name, used, out, 3)
    return out


def _args(frame):
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return {name: describe(frame.f_locals[name]) for name in code.co_varnames[:count]
            if name in frame.f_locals}


def _frames(tb):
    frames = []
    previous_inside = False
    while tb is not None:
        frame = tb.tb_frame
        rel = _in_repo(frame.f_code.co_filename)
        entry = {"path": rel, "line": tb.tb_lineno, "func": frame.f_code.co_name,
                 "first": frame.f_code.co_firstlineno}
        if rel is not None:
            if _testish(rel):
                entry["names"] = _names(frame)
            else:
                entry["args"] = _args(frame)
            frames.append(entry)
        elif previous_inside:
            entry["module"] = frame.f_globals.get("__name__")
            entry["args"] = _args(frame)
            frames.append(entry)
        previous_inside = rel is not None
        tb = tb.tb_next
    if len(frames) > _FRAMES_MAX:
        frames = frames[:_FRAMES_MAX - 8] + frames[-8:]
    return frames


def _doctest_failures(exc):
    """(example source, wanted output, got) of pytest's doctest failures."""
    out = []
    for failure in getattr(exc, "failures", None) or [exc]:
        example = getattr(failure, "example", None)
        if example is None:
            continue
        got = getattr(failure, "got", None)
        if got is None and getattr(failure, "exc_info", None):
            got = f"{failure.exc_info[0].__name__}: {failure.exc_info[1]}"
        test = getattr(failure, "test", None)
        examples = list(getattr(test, "examples", None) or [])
        before = examples[:examples.index(example)] if example in examples else []
        out.append({"source": example.source, "want": example.want, "got": got,
                    "name": getattr(test, "name", None), "before": [e.source for e in before][-8:]})
    return out


def capture(excinfo, compares):
    """The detail of one failure (see the module docstring)."""
    exc = excinfo.value
    message = ""
    try:
        message = str(exc)[:2000]
    except Exception:
        pass
    detail = {"exc": {"type": type(exc).__name__, "module": type(exc).__module__, "message": message},
              "frames": _frames(excinfo.tb), "compares": compares[-4:]}
    doctests = _doctest_failures(exc)
    if doctests:
        detail["doctest"] = doctests[:4]
    return detail


@pytest.hookimpl(tryfirst=True)
def pytest_assertrepr_compare(config, op, left, right):
    try:
        if len(_compares) < 20:
            frame, where = sys._getframe(1), None
            while frame is not None and where is None:
                rel = _in_repo(frame.f_code.co_filename)
                if rel is not None:
                    where = (rel, frame.f_lineno)
                frame = frame.f_back
            if where is not None:
                _compares.append({"path": where[0], "line": where[1], "op": op,
                                  "left": describe(left), "right": describe(right)})
    except Exception:
        pass
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    compares = list(_compares)
    del _compares[:]
    try:
        report = outcome.get_result()
        if report.failed and call.excinfo is not None and _described[0] < _DETAILS_MAX:
            _described[0] += 1
            report._fixrl_detail = capture(call.excinfo, compares)
    except Exception:
        pass
