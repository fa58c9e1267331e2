"""`fixrl view`: one self-contained HTML file for a run (no network: the page's CSS and
JavaScript are inlined from the package's static/ files, and its Content-Security-Policy lets it
load nothing).

The payload is one JSON script element; each transcript is a script element of its own (JSON,
gzipped, base64), inflated and parsed by the page only when its episode is opened. What it does
not guarantee: a small file for a big run (every transcript is in it: 10,000 episodes of six
turns are about 40 MB).
"""
from __future__ import annotations

import base64
import gzip
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from fixrl.harness.view.load import Source, ViewError
from fixrl.harness.view.payload import Decoder, groups, payload, transcript


@dataclass(frozen=True)
class Written:
    """What `write_page` wrote."""

    path: Path
    episodes: int
    bytes: int
    tokens: bool
    """Whether trained tokens are marked token by token (a tokenizer decoded them)."""


def _static(name: str) -> str:
    return resources.files("fixrl.harness.view").joinpath("static", name).read_text(encoding="utf-8")


def _script_json(value: Any) -> str:
    # Inside <script> the HTML parser ends the element at "</script"; "<" never appears in JSON
    # outside strings, so escaping it there keeps any text from a run inert.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def _packed(value: Any) -> str:
    # Transcripts are most of a page: gzip (about 3x on transcripts at the fastest level) and base64 keep
    # the HTML the browser must scan small; the page inflates one with DecompressionStream when
    # its episode is opened. Base64 has no "<", so nothing in it can end the element.
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=1, mtime=0)).decode("ascii")


def render(src: Source, decoder: Decoder | None = None) -> str:
    """The page's HTML."""
    data = payload(src)
    data["groups"] = groups(src) if src.kind == "grpo" else {}
    data["tokens"] = decoder is not None
    parts = [f'<script type="application/gzip" id="t{i}">{_packed(transcript(e.traj, decoder))}</script>'
             for i, e in enumerate(src.episodes)]
    title = data["title"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    values = {"__TITLE__": title, "__CSS__": _static("page.css"), "__JS__": _static("page.js"),
              "__PAYLOAD__": _script_json(data), "__TRANSCRIPTS__": "\n".join(parts)}
    # Split the template once: a run's text can never be taken for a placeholder.
    pieces = re.split(r"(__[A-Z]+__)", _static("page.html"))
    return "".join(values.get(p, p) for p in pieces)


def write_page(src: Source, out: Path | str, decoder: Decoder | None = None) -> Written:
    """Write the page for `src` to `out` (parent directories made)."""
    out = Path(out)
    if out.is_dir():
        raise ViewError(f"--out {out}: is a directory; give a file name such as {out / 'view.html'}")
    html = render(src, decoder)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return Written(out, len(src.episodes), len(html.encode("utf-8")), decoder is not None)


def load_decoder(path: str | Path) -> Decoder:
    """The tokenizer of a model directory (its tokenizer files only; no weights load)."""
    from transformers import AutoTokenizer  # noqa: PLC0415 - heavy; only when tokens are decoded

    try:
        return AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError) as e:
        raise ViewError(f"--tokenizer {path}: no tokenizer loads from there ({e}); give the run's model "
                        f"directory, or --no-tokens to mark trained tokens per turn") from None
