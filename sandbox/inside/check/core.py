"""The guard's basic operations on its state: who is on the stack (attribution and taint),
reporting an event or tampering, reading a file through its own references to os, and
what counts as test code."""
from __future__ import annotations

from .base import _TEST_DIRS, _TEST_NAMES, TAMPER_EXIT, _abspath


def _code_cats(st, code):
    """The categories a code object may use, or None for trusted code. Provenance first: code
    made at run time is recorded by identity when it is run or made into a function
    (`_record_code`), whatever name it carries; then the file it was loaded from."""
    hit = st.code_taint.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    return _untrusted_cats(st, code.co_filename)


def _record_code(st, code, cats):
    """Code made at run time, and every code object nested in it, runs as untrusted code with
    `cats` (intersected with what it already had), wherever it is called from. The entries
    hold the code objects, so an id is never reused while it is recorded."""
    todo = [code]
    while todo:
        c = todo.pop()
        hit = st.code_taint.get(id(c))
        if hit is not None and hit[0] is c:
            if hit[1] <= cats:
                continue
            cats_c = hit[1] & cats
        else:
            cats_c = cats
        st.code_taint[id(c)] = (c, cats_c)
        todo += [k for k in c.co_consts if type(k) is type(c)]
    st.type_cache.clear()


def _untrusted_cats(st, filename):
    """The categories code from `filename` may use, or None for trusted code (cached)."""
    hit = st.cache.get(filename, st)
    if hit is not st:
        return hit
    cats = st.tainted.get(filename)
    if cats is None and filename[:1] != "<":
        absolute = _abspath(filename, st.root)
        cats = st.changed.get(absolute, st.tainted.get(absolute))
    st.cache[filename] = cats
    return cats


def _attribute(st, frame, cat):
    """Where changed code that may not do `cat` sits on the stack (file:line), or None. The
    walk stops at a stdlib consumer that never hands a frame back (for frames), and, for
    frames only, at an unchanged repository file that reads frames itself (boltons'
    `make_sentinel` names its caller's module, called as a changed module is imported): the
    repository doing what it always did. Not for processes or files: a repository helper
    that runs a command would run the agent's command."""
    sinks = st.sinks if cat == "frames" else ()
    f = frame
    while f is not None:
        code = f.f_code
        if code in sinks and not _captures_locals(f):
            return None
        cats = _code_cats(st, code)
        if cats is None and cat == "frames" and cat in st.own.get(_abspath(code.co_filename, st.root), ()):
            return None  # not run-time code claiming the file's name: that is tainted, never trusted
        if cats is not None and cat not in cats:
            return f"{_short(st, code.co_filename)}:{f.f_lineno}"
        f = f.f_back
    cats = st.thread_taint.get(st.get_ident())
    if cats is not None and cat not in cats:
        return "a thread started by changed code"
    return None


def _captures_locals(frame):
    """Whether a traceback sink's call was asked for the local values of the frames it walks
    (`capture_locals`, anything but False): their reprs would reach its caller -- a test
    callback's closure (`lambda r: r.value == expected`) made to raise by changed code, walked
    by `StackSummary.extract(walk_tb(tb), capture_locals=True)`. Such a call is no sink."""
    if "capture_locals" not in frame.f_code.co_varnames:
        return False
    return frame.f_locals.get("capture_locals", False) is not False


def _taint_of(st, frame):
    """The categories shared by every changed-code frame on the stack (and this thread's
    taint); None when no changed code is on it."""
    found = st.thread_taint.get(st.get_ident())
    f = frame
    while f is not None:
        cats = _code_cats(st, f.f_code)
        if cats is not None:
            found = cats if found is None else found & cats
        f = f.f_back
    return found


def _taint(st, filename):
    st.tainted[filename] = frozenset()
    st.cache.clear()
    st.type_cache.clear()


def _short(st, path):
    return path[len(st.root) + 1:] if path.startswith(st.root + "/") else path


def _send(st, event):
    """Write one event to the FIFO (one open, one write, one close). The caller holds this
    thread's place in st.busy, so the guard does not judge its own open."""
    line = st.dumps(event).encode() + b"\n"
    try:
        fd = st.open(st.fifo, st.fifo_flags)
    except OSError:  # the supervisor is gone: nothing can be reported any more
        return
    try:
        st.set_blocking(fd, True)
        view = memoryview(line)
        while view:
            view = view[st.write(fd, view):]
    finally:
        st.close(fd)


def _tamper(st, what):
    """Report tampering and end the judged process now (its verdict is fail)."""
    _send(st, {"e": "tamper", "what": what})
    try:
        st.write(2, f"\nfixrl check: the guard stopped the run: {what}\n".encode("utf-8", "replace"))
    finally:
        st.exit(TAMPER_EXIT)


# While the guard runs (a thread in st.busy, its own events not judged) no code of the agent's
# may run: the garbage collector is off (a finalizer or __del__ would run inside), and the
# guard looks at foreign objects by their type only (no attribute lookup that a class, a
# metaclass or __getattr__ could answer).

def _enter(st, tid):
    st.busy.add(tid)
    st.gc_depth += 1
    if st.gc_depth == 1:
        st.gc_was = st.gc_isenabled()
        st.gc_disable()


def _leave(st, tid):
    st.gc_depth -= 1
    if st.gc_depth == 0 and st.gc_was:
        st.gc_enable()
    st.busy.discard(tid)


def _test_like(path, name, inside, root):
    """Test code: a Python source or byte-code file named like a test or a conftest, or inside
    the repository's tests directories. (Data files there are not: tests pass their paths to
    the code under test.)"""
    stem = _module_stem(name)
    if stem is None:
        return False
    return _test_named(stem) or inside and _in_test_dir(path, root)


def _module_stem(name):
    """The module name of a Python source or byte-code file name (test_x.py, and
    test_x.cpython-311-pytest-9.2.0.pyc or a legacy test_x.pyc: test_x); None for other files."""
    if name.endswith(".pyc"):
        return name.split(".", 1)[0]
    if name.endswith(".py"):
        return name[:-3]
    return None


def _test_named(stem):
    """Whether a module is named like a test or a conftest."""
    return stem.startswith("test_") or stem.endswith("_test") or stem in _TEST_NAMES


def _in_test_dir(path, root):
    """`path` (absolute, inside `root`) lies under a tests directory of the repository."""
    return any(part in _TEST_DIRS for part in path[len(root) + 1:].split("/")[:-1])


def _is_test_code(st, filename):
    a = _abspath(filename, st.root)
    name = a.rsplit("/", 1)[-1]
    return a in st.hidden or name in st.hidden_names or _test_like(a, name, a.startswith(st.root + "/"), st.root)


def _read_all(st, path):
    """A file's bytes, through the guard's own references to os (no code of the agent's)."""
    fd = st.open(path, st.read_flags)
    try:
        chunks = []
        while chunk := st.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        st.close(fd)
    return b"".join(chunks)
