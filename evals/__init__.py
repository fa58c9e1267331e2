"""Evaluation: unbiased pass@k, behaviour statistics, the GRPO signal probe, paired
comparisons and reports. Nothing heavy is imported here: the runner imports the agent loop,
and the reports matplotlib, inside the functions that need them."""
from fixrl.evals.passk import Interval, bootstrap_mean, paired_bootstrap, pass_at_k, verdict
from fixrl.evals.probe import ProbeResult, ProbeStats, probe_result, probe_stats, run_probe
from fixrl.evals.report import ReportError, report
from fixrl.evals.run import Comparison, EvalError, EvalResult, TaskResult, compare, evaluate
from fixrl.evals.stats import behaviour_stats

__all__ = ["pass_at_k", "bootstrap_mean", "paired_bootstrap", "verdict", "Interval",
           "probe_stats", "probe_result", "run_probe", "ProbeStats", "ProbeResult",
           "behaviour_stats", "evaluate", "compare", "EvalResult", "TaskResult", "Comparison",
           "EvalError", "report", "ReportError"]
