"""`fixrl view`: a self-contained HTML page for a GRPO run, an eval or a trajectories file
(load.py reads the files, payload.py makes the page's data, page.py writes the page from the
static/ template). It reads what runs wrote and changes nothing."""
from __future__ import annotations

from fixrl.harness.view.load import Source, ViewError, load
from fixrl.harness.view.page import Written, load_decoder, render, write_page

__all__ = ["Source", "ViewError", "Written", "load", "load_decoder", "render", "write_page"]
