"""fixrl view RUN_OR_JSONL [--out FILE.html]: one self-contained HTML page to read what the
agent did (episode table, transcripts with the trained tokens marked, diffs, verdicts, GRPO
groups and metrics, an eval's pass matrix and pass@k)."""
from __future__ import annotations

from pathlib import Path

from fixrl.harness.view import load, load_decoder, write_page


def register(sub) -> None:
    p = sub.add_parser("view", help="one self-contained HTML page of a GRPO run, an eval or a trajectories file")
    p.add_argument("source", metavar="RUN_OR_JSONL",
                   help="a GRPO run directory, an eval directory (fixrl eval --out) or a .jsonl[.gz] of trajectories")
    p.add_argument("--out", help="the HTML file to write (default: RUN/view.html, or FILE.html beside a file)")
    p.add_argument("--tokenizer", metavar="DIR",
                   help="model directory whose tokenizer decodes the tokens, to mark trained ones token by token "
                        "(default: the model the run names, when that directory exists here)")
    p.add_argument("--no-tokens", action="store_true",
                   help="do not decode tokens: trained tokens are counted per assistant turn (faster, no transformers)")
    p.set_defaults(func=run)


def default_out(source: Path) -> Path:
    if source.is_dir():
        return source / "view.html"
    name = source.name.removesuffix(".gz").removesuffix(".jsonl")
    return source.with_name(name + ".html")


def run(args) -> int:
    source = Path(args.source)
    src = load(source)
    decoder = None
    if not args.no_tokens:
        named = src.model if src.model and Path(src.model, "tokenizer_config.json").is_file() else None
        tok = args.tokenizer or named
        decoder = load_decoder(tok) if tok else None
    written = write_page(src, Path(args.out) if args.out else default_out(source), decoder)
    how = "token by token" if written.tokens else "per turn (no tokenizer: give --tokenizer MODEL_DIR)"
    print(f"wrote {written.path} ({written.episodes} episodes, {written.bytes / 1e6:.1f} MB; trained tokens "
          f"marked {how}); open it in a browser")
    return 0
