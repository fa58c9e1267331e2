"""Run by tests/sandbox/test_sandbox_environment.py with an interpreter whose venv lies under /tmp:
a forking sandbox imports a module its interpreter never imported, before and after resets,
and a fresh command imports it too. Prints one JSON line of exit statuses and outputs."""
import json
import sys
from pathlib import Path

from fixrl.sandbox.forking import ForkingSandbox

PRELUDE = "def probe():\n    import packaging.version\n    import iniconfig\n    return 0\n"

with ForkingSandbox(Path(sys.argv[1])) as sb:
    results = []
    for _ in range(3):
        r = sb.fork_python(PRELUDE, "probe", {}, timeout=60) if sb.forking else sb.exec("true")
        e = sb.exec("python -c 'import packaging.version, iniconfig, pytest'", timeout=60)
        results.append([r.exit_code, r.output[-300:], e.exit_code, e.output[-300:]])
        sb.reset()
    print(json.dumps({"forking": sb.forking, "prefix": sys.prefix, "results": results}))
