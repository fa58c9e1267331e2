"""Readable transcripts of trajectories (rich), and JSONL saving/loading."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Iterable

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table

from fixrl.harness.agent.trajectory import Trajectory

LOG_WIDTH = 200
"""Columns of a console that writes to a file or a pipe (a log): wide enough that no table cuts
its column names (rich falls back to 80 there)."""


def make_console(stderr: bool = False, **kwargs: Any) -> Any:
    """A rich Console for fixrl's output: the terminal's width on a terminal, LOG_WIDTH in a log."""

    probe = Console(stderr=stderr)
    if not probe.is_terminal:
        kwargs.setdefault("width", LOG_WIDTH)
    return Console(stderr=stderr, **kwargs)


def _clip(text: str, max_lines: int) -> str:
    lines = text.splitlines()
    if max_lines <= 0 or len(lines) <= max_lines:
        return text
    head = max_lines * 2 // 3
    tail = max_lines - head
    return "\n".join(lines[:head] + [f"... [{len(lines) - head - tail} more lines] ..."] + lines[-tail:])


def _title(traj: Trajectory) -> str:
    info = traj.info
    outcome = info.outcome or "?"
    colour = {"pass": "green", "fail": "red", "error": "yellow"}.get(outcome, "white")
    bits = [f"[bold]{traj.task_id}[/bold]"]
    if info.sample is not None:
        bits.append(f"#{info.sample}")
    bits.append(f"[{colour}]{outcome}[/{colour}]")
    bits.append(f"reward {traj.reward:g}")
    bits.append(f"ended: {info.exit_status}")
    bits.append(f"turns {info.turns}")
    bits.append(f"{traj.num_policy_tokens} policy tokens / {len(traj.token_ids)}")
    return "  ".join(bits)


def print_transcript(traj: Trajectory, console: Any = None, max_lines: int = 30,
                     show_system: bool = False) -> None:
    """One trajectory as a conversation: the issue, each assistant turn as written, each
    observation (clipped to `max_lines`)."""

    console = console or make_console()
    console.print(Rule(_title(traj)))
    renamed = traj.info.renamed
    if renamed:
        console.print(f"[dim]renamed: {', '.join(f'{a} -> {b}' for a, b in renamed.items())}[/dim]")
    turn = 0
    for m in traj.messages:
        role, content = m.get("role"), str(m.get("content") or "")
        if role == "system":
            if show_system:
                console.print(Panel(escape(_clip(content, max_lines)), title="system", border_style="dim"))
            continue
        if role == "assistant":
            title = "assistant"
            if turn < len(traj.turn_spans):
                a, b = traj.turn_spans[turn]
                cut = turn in traj.info.cut_turns
                title += f" ({b - a} tokens{', cut off at the token limit' if cut else ''})"
            turn += 1
            console.print(Panel(escape(content) if content.strip() else "[dim](empty reply)[/dim]",
                                title=title, title_align="left", border_style="cyan"))
        elif role == "tool":
            console.print(Panel(escape(_clip(content, max_lines)), title="tool", title_align="left",
                                border_style="dim"))
        else:
            console.print(Panel(escape(_clip(content, max_lines)), title=role or "?", title_align="left",
                                border_style="magenta"))
    info = traj.info
    if info.error:
        console.print(f"[yellow]error:[/yellow] {escape(str(info.error))}")
    for violation in info.rule_violations:  # a fail: the submitted changes broke the edit rules
        console.print(f"[red]rules:[/red] {escape(str(violation))}")
    actions = info.actions
    if actions:
        console.print(f"[dim]actions: {escape(' | '.join(map(str, actions)))}[/dim]")


def summary_table(trajs: list[Trajectory], title: str = "rollouts") -> Any:
    """Per task: episodes, passes, errors, mean turns and policy tokens; a total row; how the
    episodes ended in the caption."""

    ended: dict[str, int] = {}
    for t in trajs:
        k = str(t.info.exit_status)
        ended[k] = ended.get(k, 0) + 1
    table = Table(title=title, caption="ended: " + ", ".join(f"{k} {v}" for k, v in sorted(ended.items())))
    table.add_column("task", no_wrap=True, overflow="ellipsis", max_width=40)
    for col in ("n", "pass", "error", "turns", "tokens"):
        table.add_column(col, justify="right", no_wrap=True)
    by_task: dict[str, list[Trajectory]] = {}
    for t in trajs:
        by_task.setdefault(t.task_id, []).append(t)

    def row(name: str, ts: list[Trajectory]) -> list[str]:
        outcomes = [t.info.outcome for t in ts]
        return [name, str(len(ts)), str(outcomes.count("pass")), str(outcomes.count("error")),
                f"{sum(t.info.turns for t in ts) / len(ts):.1f}",
                f"{sum(t.num_policy_tokens for t in ts) / len(ts):.0f}"]

    for task_id, ts in by_task.items():
        table.add_row(*row(task_id, ts))
    if len(by_task) > 1:
        table.add_section()
        table.add_row(*row(f"all {len(by_task)} tasks", trajs))
    return table


def _open(path: Path, mode: str):
    if path.suffix == ".gz":
        return gzip.open(path, mode + "t", encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def save_jsonl(trajs: Iterable[Trajectory], path: Path | str) -> Path:
    """One trajectory per line (`Trajectory.to_dict`); gzip when the name ends in .gz."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _open(path, "w") as f:
        for t in trajs:
            f.write(json.dumps(t.to_dict(), ensure_ascii=False) + "\n")
    return path


def load_jsonl(path: Path | str) -> list[Trajectory]:
    path = Path(path)
    out = []
    with _open(path, "r") as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append(Trajectory.from_dict(json.loads(line)))
                except (json.JSONDecodeError, TypeError) as e:
                    raise ValueError(f"{path}:{i}: not a fixrl trajectory line ({e})") from None
    return out
