"""Issue text from failing tests, written the way a user reports a bug: which public function
was called, with which values, what came back or was raised, and what was expected. Never the
test's name, its variable names where values belong, or the code of the bug or the fix.

Input is what the generator's pytest plugin records for a failing test (`Failure`; the capture
itself is `sandbox/inside/generate/failure_capture.py`): the exception, each traceback frame inside the repository
with a description of the names a test frame refers to (module, class, function with its file,
or a value with its repr), and the operands pytest compared in a failing assert. The failing
statement is read from the test file and its calls to the package are rendered with values:

    test:   assert singular == inflection.singularize(plural)       (parametrized)
    issue:  Calling `inflection.singularize('children')` returns `'childrens'`, but `'child'`
            was expected.

How an expression is rendered (`Reader.render`): a variable holding a printable value (its
repr parses as Python) becomes that value; one bound once, from a call to the package or to an
unprintable value, is shown as a setup statement (`mf = memoize(f)`); a function or class the
test file defines is shown with its definition; modules, builtins and the package's own names
stay names. A test case's `self.X` naming the package's function or class (a class attribute,
a `staticmethod`) shows as its public name (`cachetools.func.lru_cache`), and a call of the test
class's one-line helper method as the call it returns (`self.cache(2)` ->
`cachetools.Cache(maxsize=2)`). An assert failing in the suite's own helper (`assert_equal` in
a `common.py`) is read as the caller's assert, with the caller's arguments in place of the
helper's parameters. A failing test whose statement cannot be shown this way gives a `Dropped`
with its reason. When none of a bug's failing tests can be shown with values, `issue_for` falls
back to a plainer sentence (`fallback`): the package's public function the test reaches and
what the run reported (the exception and its message, the exception not raised, or the failed
assertion's own report line), with no values; only when even that cannot be said truthfully
does it say why a bug got no issue at all.

What this does not guarantee: values are those at the moment the test failed (an argument the
buggy call mutated shows its mutated value), a setup statement shows the test's own expression,
not a minimal reproduction, and an issue describes at most two failing tests.

The rooms, in the order a failure passes through them: `records` (Failure, Symptom, Dropped,
Target), `source` (the test file parsed, traceback frames, small helpers), `render` (names
resolved to values, setup and definitions), `symptoms` (the kinds of failure, one sentence
each), `fallback` (the plain sentence), `write` (the issue from the symptoms).
"""
from fixrl.tasks.generate.issue.records import Dropped, Failure, Symptom, Target
from fixrl.tasks.generate.issue.source import parse_test_file
from fixrl.tasks.generate.issue.symptoms import symptom
from fixrl.tasks.generate.issue.write import issue_for, write_issue

__all__ = ["Dropped", "Failure", "Symptom", "Target", "issue_for", "parse_test_file", "symptom",
           "write_issue"]
