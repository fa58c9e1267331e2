"""The issue: up to two symptoms of a bug in a user's words, the one calling the buggy
function first, never showing the changed line."""
from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable

from fixrl.tasks.generate.issue.fallback import fallback
from fixrl.tasks.generate.issue.records import Failure, Symptom, Target
from fixrl.tasks.generate.issue.source import TestFile
from fixrl.tasks.generate.issue.symptoms import symptom

# ---------------------------------------------------------------------------------------------
# The issue

_OPENINGS = ["", "Bug report: ", "I think there is a bug. ", "Unexpected result. "]


def _lower_first(text: str) -> str:
    return text[0].lower() + text[1:] if text[:1].isalpha() else text


def _paragraph(s: Symptom) -> str:
    setup = [c for c in s.context if "\n" not in c and not c.startswith(("def ", "class ", "async def ", "@"))]
    defs = [c for c in s.context if c not in setup]
    text = s.text
    if setup and len(setup) <= 3:
        text = f"After {', '.join(f'`{x}`' for x in setup[:-1])}{' and ' if len(setup) > 1 else ''}" \
               f"`{setup[-1]}`, {_lower_first(text)}"
    elif setup:
        defs = ["\n".join(setup)] + defs
    if defs:
        code = "\n\n".join(defs)
        text += f" The test's code for it:\n\n```python\n{code}\n```"
    return text


def write_issue(symptoms: list[Symptom], rng: random.Random, forbidden: Iterable[str] = ()) -> str | None:
    """Up to two symptoms (with different calls) as an issue; None if every version would show a
    forbidden line (the mutated line or the original one: an issue must never show the fix)."""
    banned = [f.strip() for f in forbidden if len(f.strip()) >= 6]
    kept: list[Symptom] = []
    for s in symptoms:
        if any(b in _paragraph(s) for b in banned) or any(k.call == s.call for k in kept):
            continue
        kept.append(s)
        if len(kept) == 2:
            break
    if not kept:
        return None
    parts = [rng.choice(_OPENINGS) + _paragraph(kept[0])]
    if len(kept) > 1:
        second = _paragraph(kept[1])
        parts.append("Also: " + second[0].lower() + second[1:])
    if kept[0].file:
        parts.append(f"`{kept[0].callee}` is defined in `{kept[0].file}`.")
    text = ("\n\n" if any("```" in p for p in parts) else " ").join(parts)
    return None if any(b in text for b in banned) else text


def _rank(s: Symptom, target: Target | None) -> tuple:
    """Symptoms calling the buggy function first, then its file's, then the shortest."""
    size = sum(len(c) for c in s.context) + len(s.text)
    if target is None:
        return (size,)
    return (s.callee != target.name, s.file != target.file, size)


def issue_for(failures: Iterable[Failure], read: Callable[[str], TestFile | None], rng: random.Random,
              forbidden: Iterable[str] = (), target: Target | None = None, limit: int = 40) -> tuple[str | None, str]:
    """(issue text, '') for a bug from its failing tests, or (None, why there is none): the most
    common reason its failing tests gave, or that every issue would show the changed line."""
    symptoms: list[Symptom] = []
    reasons: Counter[str] = Counter()
    # the capture describes only the first failures of a run (in run order, not the order of
    # these ids): the described ones first, so the limit does not leave them all out
    failures = sorted(failures, key=lambda f: f.detail is None)[:limit]
    for f in failures:
        s = symptom(f, read)
        if isinstance(s, Symptom):
            symptoms.append(s)
        else:
            reasons[s.reason] += 1
    if not symptoms:
        # No failing test shows with values: the plain sentence of what the run reported (the
        # first reason stays the count's, so a report says why the specific forms failed)
        plain = [s for s in (fallback(f, read) for f in failures) if isinstance(s, Symptom)]
        if not plain:
            return None, reasons.most_common(1)[0][0] if reasons else "no failing test was recorded"
        symptoms = plain
    symptoms.sort(key=lambda s: _rank(s, target))
    text = write_issue(symptoms, rng, forbidden)
    return (text, "") if text else (None, "every issue would show the changed line")
