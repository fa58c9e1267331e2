"""The user's pytest command, and the hidden check's command made from it: the same interpreter
and pytest options running exactly the chosen tests.

What this does not guarantee: that every pytest option is classified (an unknown option taking
a value in the next token would keep that token as a test path)."""
from __future__ import annotations

import shlex

from fixrl.tasks.format.pytest_command import parse_pytest_command
from fixrl.tasks.generate.config import GenerateError


def pytest_parts(test_cmd: str):
    """The parsed command; GenerateError when it is not a plain pytest command."""
    parsed = parse_pytest_command(test_cmd)
    if parsed is None:
        raise GenerateError(
            f"--test-cmd {test_cmd!r} is not a plain pytest command: the generator needs per-test "
            "results, so give `pytest [args]` or `python -m pytest [args]` (no shell operators; put "
            "other settings in pytest.ini)")
    return parsed


_VALUE_OPTIONS = {"-o", "--override-ini", "-p", "-c", "--config-file", "-k", "-m", "-W", "--pythonwarnings",
                  "--rootdir", "--import-mode", "--confcutdir", "--basetemp", "--ignore", "--ignore-glob",
                  "--deselect", "--maxfail", "--tb", "-r", "--durations", "--capture", "--log-level", "--timeout"}
"""pytest options whose value is the next token (not a test path)."""
_CACHE_SELECTION = {"--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--sw", "--stepwise",
                    "--sw-skip", "--stepwise-skip", "-x", "--exitfirst", "--co", "--collect-only"}
"""Options that choose or stop tests by history or at the first failure: the check runs a fixed list."""


def pytest_options(args: list[str]) -> list[str]:
    """The options of a pytest command line without its test paths (`-o pythonpath=src`,
    `-p no:randomly`, `--import-mode=importlib`: how the tests run, which a check of chosen
    node ids needs as much as the whole-suite run did)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        if token in _CACHE_SELECTION:
            pass
        elif token in _VALUE_OPTIONS and i + 1 < len(args):
            out += [token, args[i + 1]]
            i += 1
        elif token.startswith("-") and token not in ("-q", "--quiet"):
            out.append(token)
        i += 1
    return out


def check_command(test_cmd: str, nodeids: list[str]) -> str:
    """The hidden check: the same interpreter and pytest options running exactly these tests."""
    parsed = pytest_parts(test_cmd)
    head = parsed.env + [parsed.python] + parsed.python_flags + ["-m", "pytest", "-q"] + pytest_options(parsed.args)
    return " ".join(shlex.quote(t) for t in head + list(nodeids))

