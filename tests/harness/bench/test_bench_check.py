"""`fixrl bench check` end to end on the gym suite's first task: the hidden check and the `test`
tool's public run, each with the runtime guard and without it, the verdicts the same and the
ratio reported."""
from __future__ import annotations

import pytest

from fixrl.harness.bench import check
from fixrl.harness.bench.errors import BenchError


def test_bench_check_bad_input():
    with pytest.raises(BenchError, match="repeats"):
        check.measure(check.Config(repeats=0))


@pytest.mark.parametrize("public", [False, True], ids=["check", "public"])
def test_bench_check_small(capsys, public):
    res = check.measure(check.Config(backend="forking", tasks=1, repeats=1, public=public))
    want = ["exit 0"] if public else ["pass"]  # the reference fix: its check passes, its public tests too
    assert res["guarded_verdicts"] == res["unguarded_verdicts"] == want, res
    assert res["public"] is public and res["checks_per_arm"] == 1
    assert res["guarded_median_s"] > 0 and res["unguarded_median_s"] > 0 and res["ratio"] > 0
    from fixrl.harness.agent.transcript import make_console

    check.show(res, make_console())
    assert ("public test run" if public else "check") + " with and without the runtime guard" in capsys.readouterr().out
