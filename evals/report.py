"""Reports: a training run's metrics as PNG curves plus a markdown summary; an eval's per-task chart.

A training run directory holds `metrics.jsonl`, one JSON object per step, written by the trainer.
The report is tolerant: it plots the metrics that exist under any of the names it knows, skips
what is missing, and skips lines it cannot parse (a killed run can leave half a line). Every
curve is drawn against the step and against the cumulative number of episodes sampled, because
dynamic sampling makes steps cost different amounts of rollouts.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fixrl.evals.run import EvalError, EvalResult


class ReportError(ValueError):
    """The path given is not a training run or eval results directory (the message says why)."""


@dataclass(frozen=True)
class Panel:
    """One figure: the metric keys (regexes, matched in order) drawn together."""

    name: str
    title: str
    patterns: tuple[str, ...]
    ylabel: str = ""


PANELS = (
    Panel("reward", "Rollout reward", (r"rollout/reward$", r"^reward$", r"rollout/pass_rate$"),
          "mean reward"),
    Panel("heldout_pass", "Held-out pass@k", (r"^eval/pass@1$", r"^eval/pass@\d+$",
                                              r"^heldout/pass@\d+$"), "pass@k"),
    Panel("zero_adv", "Zero-advantage groups", (r"^zero_adv_frac/all_pass$",
                                                r"^zero_adv_frac/all_fail$", r"^zero_adv_frac$",
                                                r"^zero_adv_frac/"), "fraction of groups tried"),
    Panel("entropy", "Policy entropy", (r"^entropy$", r"^loss/entropy$", r"/entropy$"),
          "nats / token"),
    Panel("policy_tokens", "Policy tokens per episode", (r"^policy_tokens$", r"^policy_tokens/"),
          "tokens"),
    Panel("episodes", "Episodes sampled per step", (r"^episodes$", r"^rollout/episodes$",
                                                    r"^episodes_sampled$", r"^groups/tried$",
                                                    r"^groups/kept$", r"^groups_tried$",
                                                    r"^groups_kept$"), "count"),
    # Beyond the list, drawn when present: the loss, the optimiser's health, behaviour.
    Panel("loss", "Loss", (r"^loss$", r"^loss/(?!clip_frac|approx_kl|kl_ref|ratio_)"), "loss"),
    Panel("optim", "KL, clipping and gradient norm", (r"(^|/)approx_kl$", r"(^|/)kl_ref$",
                                                      r"(^|/)clip_frac$", r"(^|/)grad_norm$"),
          ""),
    Panel("behaviour", "Tool calls per episode", (r"^(rollout/|behaviour/)?reads$",
                                                  r"^(rollout/|behaviour/)?tests$",
                                                  r"^(rollout/|behaviour/)?edits$",
                                                  r"^(rollout/|behaviour/)?turns$"), "per episode"),
    Panel("exit", "How episodes ended", (r"^exit/",), "share of episodes sampled"),
    Panel("heldout_behaviour", "Held-out behaviour", (r"^eval/reads_before_first_edit$",
                                                      r"^eval/first_edit_right$",
                                                      r"^eval/reads$", r"^eval/edits$"), ""),
)

METRICS_FILES = ("metrics.jsonl", "sft_metrics.jsonl")

EPISODE_KEYS = ("episodes", "rollout/episodes", "episodes_sampled")


@dataclass
class Metrics:
    rows: list[dict[str, Any]]
    skipped_lines: int = 0
    steps: list[float] = field(default_factory=list)
    cum_episodes: list[float] | None = None
    episode_key: str | None = None


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def load_metrics(path: Path) -> Metrics:
    """Read metrics.jsonl: one JSON object per line; unparseable lines are counted and skipped."""
    rows: list[dict[str, Any]] = []
    skipped = 0
    for line in Path(path).read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            skipped += 1
            continue
        if isinstance(obj, dict):
            rows.append(obj)
        else:
            skipped += 1
    m = Metrics(rows=rows, skipped_lines=skipped)
    m.steps = [_num(r.get("step")) if _num(r.get("step")) is not None else float(i + 1)
               for i, r in enumerate(rows)]
    m.episode_key = next((k for k in EPISODE_KEYS if any(_num(r.get(k)) is not None for r in rows)),
                         None)
    if m.episode_key is not None:
        total, cum = 0.0, []
        for r in rows:
            total += _num(r.get(m.episode_key)) or 0.0
            cum.append(total)
        m.cum_episodes = cum
    return m


def panel_keys(panel: Panel, keys: list[str]) -> list[str]:
    out: list[str] = []
    for pat in panel.patterns:
        for k in keys:
            if k not in out and re.search(pat, k):
                out.append(k)
    return out


def _all_keys(rows: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        for k, v in r.items():
            if _num(v) is not None:
                seen.setdefault(k, None)
    return list(seen)


def _series(m: Metrics, key: str, xs: list[float]) -> tuple[list[float], list[float]]:
    px, py = [], []
    for x, r in zip(xs, m.rows):
        y = _num(r.get(key))
        if y is not None:
            px.append(x)
            py.append(y)
    return px, py


def plot_training(run_dir: Path, out_dir: Path) -> list[tuple[Panel, list[str], Path]]:
    """One PNG per panel that has data: left against step, right against episodes sampled."""
    import matplotlib  # noqa: PLC0415 - matplotlib only when a plot is drawn (seconds to import)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - matplotlib only when a plot is drawn (seconds to import)
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415 - matplotlib only when a plot is drawn (seconds to import)

    m = load_metrics(metrics_file(run_dir))
    keys = _all_keys(m.rows)
    out_dir.mkdir(parents=True, exist_ok=True)
    made = []
    for panel in PANELS:
        pk = panel_keys(panel, keys)
        if not pk:
            continue
        axes_x = [("step", m.steps)]
        if m.cum_episodes is not None:
            axes_x.append(("episodes sampled (cumulative)", m.cum_episodes))
        fig, axs = plt.subplots(1, len(axes_x), figsize=(5.5 * len(axes_x), 3.6), squeeze=False)
        for ax, (xlabel, xs) in zip(axs[0], axes_x):
            for key in pk:
                px, py = _series(m, key, xs)
                # Sparse metrics (held-out evals every N steps) get markers so one point shows.
                sparse = len(px) < max(2, len(m.rows) // 2) or len(px) <= 3
                ax.plot(px, py, marker="o" if sparse else None, markersize=4, linewidth=1.6,
                        label=key)
            ax.set_xlabel(xlabel)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylabel(panel.ylabel)
            ax.grid(True, alpha=0.3)
            if panel.name in ("reward", "heldout_pass", "zero_adv", "exit"):
                ax.set_ylim(-0.03, 1.03)
        axs[0][0].legend(fontsize=8, loc="best")
        fig.suptitle(panel.title)
        fig.tight_layout()
        path = out_dir / f"{panel.name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append((panel, pk, path))
    return made


def training_summary(run_dir: Path, made: list[tuple[Panel, list[str], Path]],
                     out_dir: Path) -> str:
    mf = metrics_file(run_dir)
    m = load_metrics(mf)
    lines = [f"# Training report: `{run_dir}`", "", f"- metrics: `{mf.name}`"]
    lines.append(f"- steps logged: {len(m.rows)}"
                 + (f" (last step {m.steps[-1]:g})" if m.steps else ""))
    if m.cum_episodes:
        lines.append(f"- episodes sampled: {m.cum_episodes[-1]:g} (key `{m.episode_key}`)")
    if m.skipped_lines:
        lines.append(f"- {m.skipped_lines} unparseable line(s) in {mf.name} skipped")
    missing = [p.title for p in PANELS[:6] if p not in [x[0] for x in made]]
    if missing:
        lines.append(f"- not in the metrics (no plot): {', '.join(missing)}")
    lines += ["", "| metric | first | last | min | max | points |", "|---|---|---|---|---|---|"]
    seen: set[str] = set()
    for _, keys, _ in made:
        for key in keys:
            if key in seen:
                continue
            seen.add(key)
            _, ys = _series(m, key, m.steps)
            if ys:
                lines.append(f"| `{key}` | {ys[0]:.4g} | {ys[-1]:.4g} | {min(ys):.4g} | "
                             f"{max(ys):.4g} | {len(ys)} |")
    lines.append("")
    for panel, _, path in made:
        lines += [f"## {panel.title}", "", f"![{panel.title}]({path.relative_to(out_dir)})", ""]
    return "\n".join(lines)


def plot_eval(results: dict[str, Any], out_dir: Path, name: str = "pass_per_task.png") -> Path:
    """Horizontal bars of each task's pass@1 (and its largest pass@k behind it)."""
    import matplotlib  # noqa: PLC0415 - matplotlib only when a plot is drawn (seconds to import)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - matplotlib only when a plot is drawn (seconds to import)

    tasks = results.get("tasks") or []
    ks = sorted(int(k) for k in results.get("ks", [1]))
    kmax = ks[-1] if ks else 1
    ids = [t["task_id"] for t in tasks]
    p1 = [t.get("pass@1") or 0.0 for t in tasks]
    pk = [t.get(f"pass@{kmax}") or 0.0 for t in tasks]
    fig, ax = plt.subplots(figsize=(7.5, max(3.0, 0.24 * len(ids) + 1.8)))
    ys = list(range(len(ids)))
    if kmax > 1:
        ax.barh(ys, pk, color="#a6c8e8", label=f"pass@{kmax}")
    ax.barh(ys, p1, color="#1f5f99", height=0.55, label="pass@1")
    mean1 = (results.get("overall") or {}).get("pass@1", {})
    if isinstance(mean1, dict) and mean1.get("mean") is not None:
        ax.axvline(mean1["mean"], color="#d0502a", linestyle="--", linewidth=1.2,
                   label=f"mean pass@1 = {mean1['mean']:.3f}")
    for y, t in zip(ys, tasks):  # passes / scored episodes, and errors if any, at the right
        label = f"{t.get('passes', '?')}/{t.get('scored', t.get('episodes', '?'))}"
        if t.get("errors"):
            label += f" ({t['errors']} err)"
        ax.text(1.01, y, label, va="center", fontsize=7 if len(ids) > 25 else 8)
    ax.set_yticks(ys, ids, fontsize=7 if len(ids) > 25 else 9)
    ax.set_ylim(len(ids) - 0.5, -0.5)  # first task on top, no empty margin
    ax.set_xlim(0, 1.0)
    ax.set_xlabel("pass rate")
    who = results.get("policy", {}).get("name", "")
    ax.set_title(f"{who} on {results.get('suite', '?')} / {results.get('split', '?')} "
                 f"(n={results.get('n', '?')})", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.5 / max(3, len(ids)) - 0.1),
              ncol=3, frameon=False)
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def metrics_file(run_dir: Path) -> Path:
    for name in METRICS_FILES:
        if (run_dir / name).is_file():
            return run_dir / name
    return run_dir / METRICS_FILES[0]


def report(path: Path, out: Path | None = None) -> Path:
    """Write plots and report.md for a training run dir (metrics.jsonl) or an eval results dir
    (results.json); returns the path of report.md."""
    path = Path(path)
    if not path.exists():
        raise ReportError(f"{path}: no such file or directory")
    if path.is_file() and path.name in (*METRICS_FILES, "results.json"):
        path = path.parent
    out_dir = Path(out) if out is not None else path / "report"
    if metrics_file(path).is_file():
        mf = metrics_file(path)
        m = load_metrics(mf)
        if not m.rows:
            raise ReportError(f"{mf}: no metrics lines yet (is the run still starting?)")
        made = plot_training(path, out_dir)
        text = training_summary(path, made, out_dir)
        # The trainer's held-out evaluations (evals/step_N/results.json): the last one per task.
        evals = sorted((path / "evals").glob("*/results.json")) if (path / "evals").is_dir() else []
        if evals:

            try:
                last = EvalResult.load(evals[-1])
                png = plot_eval(last.to_dict(), out_dir, "heldout_last_per_task.png")
                text += (f"\n## Last held-out evaluation per task (`{evals[-1].parent.name}`)\n\n"
                         f"![last held-out evaluation]({png.relative_to(out_dir)})\n")
            except EvalError as e:
                text += f"\n(last held-out evaluation unreadable: {e})\n"
    elif (path / "results.json").is_file():

        result = EvalResult.load(path)
        png = plot_eval(result.to_dict(), out_dir)
        text = (result.to_markdown() + "\n\n## Per task\n\n"
                + f"![pass per task]({png.relative_to(out_dir)})\n")
    else:
        raise ReportError(f"{path}: neither a training run (metrics.jsonl or sft_metrics.jsonl) "
                          f"nor eval results (results.json) found there")
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / "report.md"
    md.write_text(text + "\n")
    return md


__all__ = ["report", "load_metrics", "plot_training", "plot_eval", "ReportError", "PANELS"]
