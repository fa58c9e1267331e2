"""Per-episode renaming of the buggy function, so that its name carries no information about the
fix (the design's first shortcut: a policy that learns "clamp -> swap min/max" never reads).

The rename is a pure text substitution: every whole-identifier occurrence of the name (code,
strings, comments, the issue text), plus the name as an underscore-separated segment of test
identifiers (`test_clamp_upper` -> `test_zorb_upper`, which would otherwise leak the original).
It is only used when it is exactly reversible on every file it touches, because the check runs
on the original names: the agent's files are mapped back with `rename_text(text, new, old)`.

`Renaming` is one episode's: `Renaming.apply` picks the name and rewrites the sandbox's files;
the env maps what the agent sees and writes through it. What it does not guarantee: that a
name the agent invents itself (one not from the pool) is left alone by the mapping back.
"""
from __future__ import annotations

import keyword
import logging
import random
import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pragma: no cover
    from fixrl.sandbox.base import Sandbox

log = logging.getLogger(__name__)

_IDENT = "A-Za-z0-9_"


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![{_IDENT}]){re.escape(name)}(?![{_IDENT}])")


_TEST_IDENT = re.compile(rf"(?<![{_IDENT}])(?:test|Test)[{_IDENT}]*")


def rename_text(text: str, old: str, new: str) -> str:
    """Replace `old` by `new` as a whole identifier, and as a `_`-separated segment of
    identifiers that start with `test`/`Test`."""
    text = _word(old).sub(new, text)
    seg = re.compile(rf"(?<=_){re.escape(old)}(?=_|$)")

    def fix_ident(m: re.Match[str]) -> str:
        return seg.sub(new, m.group(0))

    return _TEST_IDENT.sub(fix_ident, text)


def occurs(text: str, name: str) -> bool:
    """Whether `name` occurs in `text` as an identifier or as a test-identifier segment."""
    return rename_text(text, name, "\x00") != text


def reversible(texts: dict[str, str], old: str, new: str) -> bool:
    return all(rename_text(rename_text(t, old, new), new, old) == t for t in texts.values())


def choose_name(rng: random.Random, pool: list[str], old: str, texts: dict[str, str],
                taken: set[str] = frozenset()) -> str | None:
    """A name from `pool` that is a valid identifier, not `old`, not in `taken` (module/file
    names), occurring nowhere in `texts`, and whose substitution is exactly reversible."""
    cands = sorted({n for n in pool if n.isidentifier() and not keyword.iskeyword(n)
                    and n != old and n not in taken})
    rng.shuffle(cands)
    for name in cands:
        if any(occurs(t, name) for t in texts.values()):
            continue
        if reversible(texts, old, name):
            return name
    return None


DEFAULT_POOL = [
    "blend", "crumble", "drift", "fold", "gather", "glimmer", "hover", "knead", "ladle",
    "mingle", "nudge", "ponder", "quiver", "ripple", "sift", "smudge", "tumble", "wander",
    "whisk", "zigzag",
]
"""Neutral names used when a suite gives no `rename_pool`."""


@dataclass(frozen=True)
class Renaming:
    """One episode's renaming: the task's `original` function name shown to the agent as
    `shown`, and the files it rewrote. The default renames nothing."""

    original: str | None = None
    shown: str | None = None
    files: frozenset[str] = frozenset()
    """Repository files renaming rewrote (the others keep a `shown` name that is their own)."""

    def __bool__(self) -> bool:
        return self.original is not None and self.shown is not None

    def to_shown(self, text: str) -> str:
        """Original text as the agent sees it."""
        return rename_text(text, self.original, self.shown) if self else text

    def to_original(self, text: str) -> str:
        """Text the agent saw (or wrote) in the task's original names."""
        return rename_text(text, self.shown, self.original) if self else text

    def file_to_original(self, path: str, text: str, original: str) -> str:
        """`text` (the agent's version of `path`) in the original names. `original`: the file
        before the episode, un-renamed. A file that renaming did not touch and that uses the
        shown name itself (another function of the repository) keeps it."""
        if self and (path in self.files or not occurs(original, self.shown)):
            return self.to_original(text)
        return text

    @classmethod
    def apply(cls, sb: Sandbox, function: str, texts: dict[str, str], pool: list[str],
              rng: random.Random, timeout: float, label: str = "") -> Renaming:
        """Rename `function` in every file of `sb` that mentions it, to a name from `pool` that
        none of those files nor `texts` (the issue, the public test command) uses; the renaming
        done, or the default one when no name fits. A pool name used elsewhere in the repository
        is fine: files that do not mention the function are left alone, and mapped back only
        where the name cannot be theirs (`file_to_original`). With star imports in the
        repository the chosen name must occur nowhere, since `from m import *` could make two
        functions collide."""
        res = sb.exec(
            f"grep -rlI --exclude-dir=.git -F -e {shlex.quote(function)} . ; echo '@@fixrl@@'; "
            "find . -name .git -prune -o -print | sed 's|.*/||; s|\\..*||' | sort -u; echo '@@fixrl@@'; "
            "grep -rlIE --exclude-dir=.git --include='*.py' "
            "'^[[:space:]]*from[[:space:]].*import[[:space:]]*[*]' . | head -n 1",
            timeout=timeout)
        parts = res.output.split("@@fixrl@@")
        if len(parts) != 3:
            log.warning("renaming skipped for %s: listing failed: %s", label, res.output[-300:])
            return cls()
        files_part, stems_part, star_part = parts
        files = [f[2:] if f.startswith("./") else f for f in files_part.split("\n") if f.strip()]
        stems = {s for s in stems_part.split() if s}
        if function in stems:
            # `import clamp` would break: a module shares the function's name.
            log.info("renaming skipped for %s: a file is named after %r", label, function)
            return cls()
        repo = {f: sb.read_file(f) for f in files}
        taken = set(stems)
        if star_part.strip():
            taken |= _names_present(pool, lambda cmd: sb.exec(cmd, timeout=timeout).output)
        new = choose_name(rng, pool, function, {**repo, **texts}, taken=taken)
        if new is None:
            log.warning("renaming skipped for %s: no usable name in the pool", label)
            return cls()
        rewritten = set()
        for f, text in repo.items():
            renamed = rename_text(text, function, new)
            if renamed != text:
                sb.write_file(f, renamed)
                rewritten.add(f)
        return cls(function, new, frozenset(rewritten))


def _names_present(pool: list[str], run: Callable[[str], str]) -> set[str]:
    """The pool's names that occur as words anywhere in the repository (`run`: a shell command's output)."""
    words = sorted({n for n in pool if n.isidentifier()})
    if not words:
        return set()
    out = run(f"grep -rhoIw --exclude-dir=.git -E {shlex.quote('|'.join(words))} . | sort -u")
    return {w for w in out.split() if w in set(words)}
