"""Evaluation: unbiased pass@k, behaviour statistics, the GRPO signal probe, paired
comparisons and reports. Heavy modules (the runner, plots) import their dependencies lazily."""
from evals.passk import Interval, bootstrap_mean, pass_at_k, paired_bootstrap
from evals.probe import ProbeStats, probe_stats
from evals.stats import behaviour_stats

__all__ = ["pass_at_k", "bootstrap_mean", "paired_bootstrap", "Interval", "probe_stats",
           "ProbeStats", "behaviour_stats"]
