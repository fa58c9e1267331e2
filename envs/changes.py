"""Which of the agent's file changes are carried into the hidden check.

The check judges the agent's fix, not its test suite or its environment, so (1) test files and
files that configure or shadow the test runner are dropped (`tasks.is_test_path`); (2) a new file
is kept only when it is a plain Python module that shadows nothing (no `__pycache__`/`.pyc`,
no `.so`, no stdlib or test-runner module names, no `sitecustomize`); (3) a change whose added
lines name the test runner or the harness is dropped, and so is one whose added lines reach for
the process (`sys.exit`, `os._exit`, frames, `builtins`, background processes, file writes...)
when the file did not use that construct before; the reference fix's own constructs are allowed.

(3) is defence in depth, a tripwire that a model stumbling on a hack will hit: code running
inside the test process can always be obfuscated past a pattern list. The runner's positive
evidence (every named test reported passed in a report written outside the workspace, and the
exit status) is the main defence. What this module does not guarantee: that a kept change is
harmless.
"""
from __future__ import annotations

import difflib
import re
from pathlib import PurePosixPath

from fixrl.tasks.check.rules import SHADOW_NAMES, new_file_problem

__all__ = ["SHADOW_NAMES", "added_text", "bad_new_file", "safe_relpath", "suspicious"]

# Always suspicious in added lines (unless the reference fix adds the same construct): library
# code has no business naming the test runner or the harness, or walking the heap (the one
# known way to find the runner's report key).
_HARD = [
    (r"\b_?pytest\b|\bpluggy\b|junit|\bconftest\b", "touches the test runner"),
    (r"\bsitecustomize\b|\busercustomize\b", "touches interpreter start-up"),
    (r"\bgc\s*\.\s*get_(objects|referrers|referents)\b", "walks the heap"),
    (r"(?i)\bfixrl\b|FIXRL_", "touches the harness"),
]

# Suspicious in added lines unless the original file (or the reference fix) already uses them:
# a file that already works with processes or files may legitimately need more of the same.
_SOFT = [
    (r"\bsys\s*\.\s*exit\b|\bexit\s*\(|\bquit\s*\(|\bos\s*\.\s*(_exit|abort)\b", "exits the process"),
    (r"\bsubprocess\b|\bos\s*\.\s*(system|popen|fork|forkpty|exec\w*|spawn\w*|posix_spawn\w*|setsid)\b|\bpty\b",
     "starts processes"),
    (r"\bos\s*\.\s*(kill|killpg)\b|\bsignal\s*\.", "sends or handles signals"),
    (r"\bthreading\b|\bmultiprocessing\b|\b_thread\b|\bconcurrent\b|\basyncio\b", "starts threads or processes"),
    (r"\batexit\b", "registers exit handlers"),
    (r"__builtins__|\bbuiltins\b", "touches builtins"),
    (r"\bimport\s+sys\b|\bfrom\s+sys\s+import\b|\b__main__\b|\b__dict__\b|\b(vars|globals|locals)\s*\(",
     "reaches into module namespaces"),
    (r"\bsys\s*\.\s*(modules|meta_path|path_hooks|path_importer_cache|settrace|setprofile|_getframe|"
     r"excepthook|addaudithook|displayhook)\b", "touches interpreter state"),
    (r"\b(_getframe|currentframe|f_back|f_globals|f_locals|f_code|tb_frame|gi_frame|"
     r"__subclasses__|__globals__|__code__|__closure__)\b", "inspects frames or code objects"),
    (r"\bctypes\b", "uses ctypes"),
    (r"\b__import__\b|\bimportlib\b|\bimp\b|\brunpy\b", "imports dynamically"),
    (r"(?<![\w.])(exec|eval|compile)\s*\(", "executes generated code"),
    (r"\bshutil\b|\bos\s*\.\s*(remove|unlink|rmdir|removedirs|rename|renames|replace|chmod|"
     r"chown|symlink|link|walk|scandir|listdir|makedirs|mkdir|truncate|utime)\b|\bglob\b",
     "changes or searches the filesystem"),
    (r"\bopen\s*\(|\bfdopen\s*\(|\bwrite_text\b|\bwrite_bytes\b", "opens files"),
    (r"\benviron\b|\bputenv\b", "changes the environment"),
    (r"\bsys\s*\.\s*(stdout|stderr|stdin|argv|orig_argv)\b", "reads the command line or the streams"),
    (r"\bsocket\b|\burllib\b|\bhttp\b", "uses the network"),
    (r"\binspect\b|\bmarshal\b|\bpickle\b", "introspects or deserialises code"),
]
_HARD_RE = [(re.compile(p), why) for p, why in _HARD]
_SOFT_RE = [(re.compile(p), why) for p, why in _SOFT]


def added_text(old: str, new: str) -> str:
    """Lines of `new` that are not in `old` (inserted or replaced), joined."""
    a, b = old.splitlines(), new.splitlines()
    out: list[str] = []
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            out.extend(b[j1:j2])
    return "\n".join(out)


def suspicious(old: str, new: str, allowed: str = "") -> str | None:
    """Why the change old -> new looks like an attack on the check, or None. `allowed`: text
    whose constructs are legitimate here (the reference fix's added lines)."""
    added = added_text(old, new)
    if not added:
        return None
    for rx, why in _HARD_RE:
        m = rx.search(added)
        if m and not rx.search(allowed):
            return f"{why} (`{m.group(0)}`)"
    for rx, why in _SOFT_RE:
        m = rx.search(added)
        if m and not rx.search(old) and not rx.search(allowed):
            return f"{why} (`{m.group(0)}`)"
    return None


def bad_new_file(path: str) -> str | None:
    """Why a file the agent created must not reach the check, or None for a plain module."""
    return new_file_problem(path)


def safe_relpath(path: str) -> bool:
    p = PurePosixPath(path)
    return bool(path) and not p.is_absolute() and ".." not in p.parts and "\x00" not in path
