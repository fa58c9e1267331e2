"""Scripted plans: policies without a model that drive a ToolEnv, for demonstrations, baselines
and tests. A plan only produces ToolCall objects (`next_call(observation)`); the harness turns
them into Hermes-format text. Plans may look at the workspace through `env.sb` to build exact
snippets: that is what makes them cheap baselines, not what a model can do.

- oracle: read the buggy file, apply the reference fix as exact-snippet edits (in the names the
  agent sees; the suite's usual snippet for the family where it makes the same change, else the
  smallest unique snippet, `envs.reference.shrink_edit`), run the tests (unless made with
  `run_tests=False`), submit; question tasks: read, then submit the reference answer.
- blind: no reads; pick a bug family uniformly from the suite's families and type the suite's
  usual repair for it (`suite.yaml: family_edits`); on suites without those, apply the family's
  typical repair (`tasks.generate.mutate.repair`) to the function as one edit, or type the family's usual
  fix (`tasks.generate.mutate.GUESSES`) where the repair has no site; then submit.
- random: random tool calls with plausible arguments (a random one-line edit among them), then
  submit at a random point.
"""
from __future__ import annotations

import random
import re
from typing import TYPE_CHECKING, Protocol

from fixrl.envs.reference import next_edit, shrink_edit
from fixrl.envs.types import ToolCall
from fixrl.tasks.format.reference import reference
from fixrl.tasks.generate.mutate import GUESSES, OPERATORS, repair

if TYPE_CHECKING:  # pragma: no cover
    from fixrl.envs.env import ToolEnv
    from fixrl.tasks.format.schema import FamilyEdit, Task


class Plan(Protocol):
    def next_call(self, observation: str | None) -> ToolCall: ...


def _submit(task: Task, answer: str | None = None) -> ToolCall:
    return ToolCall("submit", {"answer": answer} if answer is not None else {})


def _edit(path: str, old: str, new: str) -> ToolCall:
    return ToolCall("edit", {"path": path, "old": old, "new": new})


def _usual_edit(env: ToolEnv, family: str | None) -> FamilyEdit | None:
    """The suite's usual repair for a bug family (`suite.yaml: family_edits`), if it has one."""
    edits = getattr(env.suite, "family_edits", None) or {}
    return edits.get(family) if family else None


def _edit_call(path: str, source: str, old: str, new: str, usual: FamilyEdit | None = None) -> ToolCall:
    """An edit call: the family's usual snippet when it makes exactly this change (every fix of
    a family then reads alike), else the smallest unique snippet (`min` -> `max`, not the whole
    line): what a careful agent types, and far less for a small model to copy than a line."""

    if usual is not None and source.count(usual.old) == 1 and \
            source.replace(usual.old, usual.new, 1) == source.replace(old, new, 1):
        return _edit(path, usual.old, usual.new)
    return _edit(path, *shrink_edit(source, old, new))


def _task_file(task: Task, env: ToolEnv) -> str | None:
    if task.file:
        return task.file
    if task.fix:
        ref = reference(task)
        if ref and ref.buggy:
            return next(iter(ref.buggy))
    return None


class OraclePlan:
    """Reads the buggy file, applies the reference fix, tests (when `run_tests`), submits."""

    def __init__(self, task: Task, env: ToolEnv, run_tests: bool = True):
        self.task, self.env, self.run_tests = task, env, run_tests
        self.phase = "read"
        self.edit_tries = 0

    def _targets(self) -> dict[str, str]:
        ref = reference(self.task)
        if ref is None:
            return {}
        return {p: self.env.to_shown(t) for p, t in ref.fixed.items() if t is not None and p in ref.buggy}

    def next_call(self, observation: str | None) -> ToolCall:
        task, env = self.task, self.env
        if self.phase == "read":
            self.phase = "edit" if task.kind == "fix" else "submit"
            path = _task_file(task, env)
            if path and "read" in env.tools:
                return ToolCall("read", {"path": path})
        if self.phase == "edit":
            call = self._next_edit()
            if call is not None:
                return call
            self.phase = "test"
        if self.phase == "test":
            self.phase = "submit"
            if self.run_tests and "test" in env.tools and task.kind == "fix":
                return ToolCall("test", {})
        return _submit(task, task.answer if task.kind == "question" else None)

    def _next_edit(self) -> ToolCall | None:
        env = self.env
        if "edit" not in env.tools or env.edits_left == 0 or self.edit_tries > 20:
            return None
        for path, target in self._targets().items():
            current = env.sb.read_file(path)
            step = next_edit(current, target, env.edits_left)
            if step is not None:
                self.edit_tries += 1
                return _edit_call(path, current, *step, usual=_usual_edit(env, self.task.family))
        return None


def oracle_plan(task: Task, env: ToolEnv, run_tests: bool = True) -> OraclePlan:
    return OraclePlan(task, env, run_tests)


def suite_families(env: ToolEnv) -> list[str]:
    fams = list(getattr(env.suite, "families", None) or [])
    if not fams:
        fams = sorted(OPERATORS)
    return fams


class BlindPlan:
    """One edit chosen without reading: a uniformly drawn bug family's typical repair of the
    function the issue names; then submit."""

    def __init__(self, task: Task, env: ToolEnv, rng: random.Random):
        self.task, self.env = task, env
        self.family = rng.choice(suite_families(env))
        self.edited = False

    def next_call(self, observation: str | None) -> ToolCall:
        if self.edited or self.task.kind != "fix" or "edit" not in self.env.tools:
            return _submit(self.task)
        self.edited = True
        call = self._edit()
        return call if call is not None else _submit(self.task)

    def _edit(self) -> ToolCall | None:
        env, path, fn = self.env, _task_file(self.task, self.env), self.env.function_name
        if not path or not fn:
            return None
        usual = _usual_edit(env, self.family)
        if usual is not None:  # the suite's usual repair, typed without looking
            return _edit(path, usual.old, usual.new)
        source = env.sb.read_file(path)
        try:
            repaired = repair(source, fn, self.family)
        except Exception:  # a repair that chokes is a repair that does not apply
            repaired = None
        if repaired and repaired != source:
            step = next_edit(source, repaired, 1)
            if step is not None:
                return _edit_call(path, source, *step)
        # The family's repair has no site here: the family's usual fix typed blind (refused
        # when its text is not in the file), else a harmless wrong edit (a blind agent edits).

        if self.family in GUESSES:
            old, new = GUESSES[self.family]
            return _edit(path, old, new)
        m = re.search(rf"^([ \t]*(?:async\s+)?def\s+{re.escape(fn)}\s*\(.*)$", source, re.M)
        if m and source.count(m.group(1)) == 1 and "#" not in m.group(1) and m.group(1).rstrip().endswith(":"):
            line = m.group(1)
            return _edit(path, line, line.rstrip() + "  # checked")
        return None


def blind_plan(task: Task, env: ToolEnv, rng: random.Random) -> BlindPlan:
    return BlindPlan(task, env, rng)


_SWAPS = [("<=", "<"), ("<", "<="), (">=", ">"), (">", ">="), ("==", "!="), ("!=", "=="),
          ("+ 1", "- 1"), ("- 1", "+ 1"), ("min(", "max("), ("max(", "min("), (" and ", " or "),
          (" or ", " and "), ("not ", ""), (" + ", " - "), (" - ", " + "), ("0", "1"), ("True", "False")]


class RandomPlan:
    """Random tool calls with plausible arguments; submits with probability `p_submit` a turn."""

    def __init__(self, task: Task, env: ToolEnv, rng: random.Random, p_submit: float = 0.2):
        self.task, self.env, self.rng, self.p_submit = task, env, rng, p_submit
        self._files: list[str] | None = None

    def files(self) -> list[str]:
        if self._files is None:
            res = self.env.sb.exec("find . -name '.*' -prune -o -name __pycache__ -prune -o -type f "
                                   "-name '*.py' -print | sed 's|^\\./||' | sort", timeout=30)
            self._files = [f for f in res.output.splitlines() if f.endswith(".py")] or (
                [self.task.file] if self.task.file else [])
        return self._files

    def next_call(self, observation: str | None) -> ToolCall:
        rng, env = self.rng, self.env
        if rng.random() < self.p_submit:
            return _submit(self.task, self._answer())
        choices = [n for n in env.tools if n != "submit"]
        if not choices or not self.files():
            return _submit(self.task, self._answer())
        name = rng.choice(choices)
        files = self.files()
        main = self.task.file if self.task.file in files else rng.choice(files)
        path = main if rng.random() < 0.6 else rng.choice(files)
        if name == "read":
            args: dict = {"path": path}
            n = self._length(path)
            if n > 1 and rng.random() < 0.3:
                start = rng.randint(1, n)
                args.update(start=start, end=min(n, start + rng.randint(5, 40)))
            return ToolCall("read", args)
        if name == "edit":
            call = self._edit(path)
            return call if call is not None else ToolCall("read", {"path": path})
        if name == "list":
            return ToolCall("list", {})
        if name == "search":
            word = env.function_name or rng.choice(["def", "return", "if", "for"])
            return ToolCall("search", {"pattern": word})
        if name == "test":
            return ToolCall("test", {})
        return ToolCall(name, {})

    def _length(self, path: str) -> int:
        try:
            return len(self.env.sb.read_file(path).splitlines())
        except Exception:
            return 0

    def _answer(self) -> str | None:
        if self.task.kind != "question":
            return None
        return self.rng.choice(["0", "1", "2", "yes", "no", "None", "True", "False", "42"])

    def _edit(self, path: str) -> ToolCall | None:
        try:
            text = self.env.sb.read_file(path)
        except Exception:
            return None
        lines = text.splitlines()
        cands = [ln for ln in lines if ln.strip() and not ln.strip().startswith("#")]
        for _ in range(10):
            if not cands:
                return None
            line = self.rng.choice(cands)
            swaps = [(a, b) for a, b in _SWAPS if a in line]
            if not swaps:
                continue
            a, b = self.rng.choice(swaps)
            return _edit_call(path, text, line, line.replace(a, b, 1))
        return None


def random_plan(task: Task, env: ToolEnv, rng: random.Random) -> RandomPlan:
    return RandomPlan(task, env, rng)


PLANS = {"oracle": lambda task, env, rng: oracle_plan(task, env),
         "blind": blind_plan, "random": random_plan}
"""`make_plan(kind, task, env, rng)` by name: oracle, blind, random."""


def make_plan(kind: str, task: Task, env: ToolEnv, rng: random.Random) -> Plan:
    if kind not in PLANS:
        raise ValueError(f"unknown scripted policy {kind!r}; choose one of {sorted(PLANS)}")
    return PLANS[kind](task, env, rng)


def run_plan(env: ToolEnv, plan: Plan, max_steps: int | None = None) -> tuple[float, object]:
    """Drive `env` with `plan` to the end and score it: (reward, info). For tests and quick use;
    the harness drives plans through the chat format instead."""
    env.reset()
    obs: str | None = None
    for _ in range(max_steps or env.max_turns + 5):
        if env.done:
            break
        obs = env.step(plan.next_call(obs)).observation
    return env.finish()
