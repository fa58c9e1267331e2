"""Code-map figures for the README's "How it is built": the largest modules and classes, imports
inside functions, Python program text in string literals, and (with `trace`) the fixrl files a
one-step GRPO run executes from loading its task to the optimizer step.

    python docs/codemap.py [--json]                   # static figures of the tree this runs in
    python docs/codemap.py trace [ENTRY] -- ARGS OF fixrl ...   # the files a `fixrl` command
                                                    # executes from its function ENTRY on (run_grpo)
"""
from __future__ import annotations

import ast
import contextlib
import json
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("sandbox", "tasks", "envs", "harness", "train", "evals")


def sources() -> list[Path]:
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    return [ROOT / f for f in files if f.split("/")[0] in FOLDERS and "/suites/" not in f]


def _docstring_ids(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, kinds) and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}


def _in_function_imports(tree: ast.AST) -> int:
    count = 0
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            count += sum(isinstance(n, ast.Import | ast.ImportFrom) for n in ast.walk(fn)
                         if n is not fn and not isinstance(n, ast.FunctionDef))
    return count


def static_figures() -> dict:
    modules, classes, long_strings, imports = [], [], [], 0
    for path in sources():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        rel = str(path.relative_to(ROOT))
        modules.append((text.count("\n"), rel))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes.append((node.end_lineno - node.lineno + 1, f"{rel}:{node.name}"))
        docs = _docstring_ids(tree)
        long_strings += [f"{rel}:{n.lineno}" for n in ast.walk(tree)
                         if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
                         and n.value.count("\n") > 10 and _looks_like_python(n.value)]
        imports += _in_function_imports(tree)
    modules.sort(reverse=True)
    classes.sort(reverse=True)
    return {"modules": len(modules), "lines": sum(n for n, _ in modules),
            "largest_modules": modules[:8], "modules_over_800": [m for m in modules if m[0] > 800],
            "largest_classes": classes[:5], "imports_inside_functions": imports,
            "python_in_string_literals_over_10_lines": long_strings}


def _looks_like_python(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return any(w in text for w in ("def ", "import ", "class "))


def trace(argv: list[str], start: str) -> dict:
    """Runs `fixrl ARGV` in this process with a profile hook (every thread) that records each
    fixrl source file the first time one of its functions is called, in order, from the first
    call of a function named `start` on (the job's entry, past the command line's set-up)."""
    from fixrl.harness.cli import main  # noqa: PLC0415 -- only the trace needs fixrl importable

    seen: dict[str, None] = {}
    roots = tuple(str(ROOT / f) + "/" for f in FOLDERS)
    started = threading.Event()

    def hook(frame, event, arg):
        if event != "call" or frame.f_code.co_name == "<module>":
            return
        if not started.is_set():
            if frame.f_code.co_name != start:
                return
            started.set()
        name = frame.f_code.co_filename
        if name not in seen and name.startswith(roots) and "/suites/" not in name:
            seen[name] = None

    threading.setprofile(hook)
    sys.setprofile(hook)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            status = main(argv)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    files = [str(Path(f).relative_to(ROOT)) for f in seen]
    path = [_package(f) for f in files]
    returns = sum(1 for i in range(1, len(path)) if path[i] != path[i - 1] and path[i] in path[:i - 1])
    return {"exit_status": status, "files": len(files), "packages": dict(Counter(path)),
            "returns_to_a_package_left": returns, "order": files}


def _package(file: str) -> str:
    """A file's room: its top-level folder, or harness/<subpackage>, or tasks/<room>."""
    parts = file.split("/")
    return "/".join(parts[:2]) if parts[0] in ("harness", "tasks") and len(parts) > 2 else parts[0]


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["trace"]:
        result = trace(args[args.index("--") + 1:], start=args[1] if args[1] != "--" else "run_grpo")
    else:
        result = static_figures()
    if "--json" in args or args[:1] == ["trace"]:
        print(json.dumps(result, indent=1))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
