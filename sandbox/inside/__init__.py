"""Everything fixrl runs inside a sandbox, as real files: the code on the far side of the wall.

- `server`: the Docker exec server, a container's PID 1 (the local backend calls the same
  functions in-process);
- `zygote`: the forking sandbox's long-lived interpreter; `rlimits`: the local sandbox's
  rlimit-and-exec fallback where the host lacks prlimit;
- `check/`: the hidden check's runner (supervisor, verdict, runtime guard, pytest plugin);
- `generate/`: the generator's pytest plugins (outcomes, failure capture, coverage) and the
  prelude of its forked runs;
- `warmup`: the pytest warm-up both forking preludes run once.

The rule: nothing here imports the rest of fixrl (an import-linter contract), only the
standard library and, for the pytest plugins and the check, pytest and pluggy -- whatever the
sandbox's interpreter has. Modules import each other relatively, and only within what is
shipped together (the check's modules and `warmup`); the generator's plugins and the scripts
(`server`, `zygote`, `rlimits`, `check/launch`) are self-contained.

How the files reach each backend (sandbox.shipping does it; in a sandbox the package is named
`fixrl_inside`, so an installed fixrl is never what it imports):
- local (bubblewrap): each sandbox holds a copy, bound read-only at /run/fixrl/lib; the rlimit
  fallback runs `rlimits.py` from it (its host path without bubblewrap);
- forking: the zygote runs `zygote.py` from that copy; the caller's prelude is written beside
  it as a file (a check's prelude imports `check.supervisor` from the copy);
- docker: this process's copy is bind-mounted read-only at /run/fixrl/lib (the image needs no
  rebuild; a read-only root filesystem refuses a copy into the container) and the container
  runs `python3 -I -S /run/fixrl/lib/fixrl_inside/server.py`;
- the one-shot check (any backend): `tasks.check.run` writes the check's files into the
  check's private directory and runs `check/launch.py`;
- the generator: its plugins are written beside the repository copy (as before, as files).
"""
