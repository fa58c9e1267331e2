"""Per-episode renaming of the buggy function, so that its name carries no information about the
fix (the design's first shortcut: a policy that learns "clamp -> swap min/max" never reads).

The rename is a pure text substitution: every whole-identifier occurrence of the name (code,
strings, comments, the issue text), plus the name as an underscore-separated segment of test
identifiers (`test_clamp_upper` -> `test_zorb_upper`, which would otherwise leak the original).
It is only used when it is exactly reversible on every file it touches, because the check runs
on the original names: the agent's files are mapped back with `rename_text(text, new, old)`.
"""
from __future__ import annotations

import keyword
import random
import re

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
