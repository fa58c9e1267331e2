"""The hidden check's runner, as it runs INSIDE the sandbox: a supervisor, the judged pytest
process it forks, the runtime guard installed in that process, and the pytest plugin.

Standard library, pytest and pluggy only (never the rest of `fixrl`). Its modules: `supervisor`
(the supervisor and the judged process's start), `verdict` (outcomes from events, pure),
`guard` (installing the guard), `core`, `rules`, `values`, `wrappers` and `emitter` (the
guard's parts), `plugin` (the pytest plugin), `base` (names shared by all), and `launch` (the
one-shot launcher script). `tasks.check.run` ships them into the sandbox: as files written into
the check's private directory for a one-shot run (`launch`), or, in a forking sandbox, imported
once from the sandbox's read-only copy of the inside package by the interpreter that then calls
`supervise` in a fork per check (sandbox.forking). Both import them as one package, so the
runner's modules import each other relatively.

How a verdict is made

- `supervise` (the supervisor) never imports repository code. It creates a private directory
  (mode 0700, every name in it starting with `.fixrl-`) holding an event FIFO and an empty
  JUnit file, then forks the judged process. The judged process's stdout and stderr are a
  pipe that the supervisor forwards to its own output with every NUL byte removed; it keeps
  no other descriptor of the supervisor's.
- The judged process installs the guard (a PEP 578 audit hook, which cannot be removed)
  before any repository code is imported, then runs pytest with the plugin. The plugin sends
  one event per collection, per test phase (setup, each call report, teardown) and at the end
  of the session, each as one write to the FIFO, which it opens for that write only.
- The supervisor reads the events as they come, waits for the judged process, derives each
  test's outcome from the events (`verdicts`), writes the report to its private directory and
  prints, last, one frame `NUL fixrl-check-report <sha256> <bytes> NUL`. The host
  (`tasks.check.run`) believes a report only when its digest matches the frame in the command's
  output. No key exists anywhere: the frame is unforgeable because only the supervisor can
  write a NUL byte to that stream (the judged process's output is filtered, and the
  supervisor is not dumpable, so /proc/PID/fd of it is closed to the sandbox's uid).
- Events are monotone: a test passes only when its setup, every call report and its teardown
  passed, so an extra forged "passed" cannot hide a real failure; an event out of collection
  order, a duplicate setup or teardown, a tamper event, a missing session end, or a judged
  process that exited early is a fail.

The guard (`guard._install_guard`)

An operation is attributed to the agent when a frame whose code is the agent's is anywhere on
the call stack, or when it runs in a thread, or a weakref finalizer, that such code started.
Code is the agent's by provenance, never by name (`core._code_cats`): loaded from a file the
agent changed or added (the host's `GuardSpec`), or made at run time (exec, eval, compile,
function and code constructors, a `__code__` assignment) while the agent's code was on the
stack or an unknown C callback was registered with the collector -- recorded by identity, with
its nested code objects, when it is run or made into a function (`rules._code_rule`). Code
made at run time by trusted code, and fixrl's own runner (named files on every backend), stay
trusted whatever name they carry. Attributed, and not one the changed file's
original (or the reference fix) already performs (`tasks.check.guard.categories`), these are
tampering: the run stops at once (os._exit) with the event named in the output, and the
verdict is fail:

- frames (sys._getframe, sys._current_frames, tb_frame, gi_frame, cr_frame, ag_frame), except
  through stdlib consumers that never hand a frame back (logging's findCaller, traceback's
  summaries, namedtuple, typing, enum), and except a trusted caller's `sys._getframe` whose
  frame is no older than the agent's newest frame and which its byte-code only reads plain
  attributes of, never f_back, never handing the frame on (attrs, typing_extensions), or
  walks with f_back learning only module names and lines (freezegun, through inspect's
  `currentframe`, a relay looked through: see `rules._frame_consumed`);
- the heap (gc.get_objects/get_referrers/get_referents), ctypes, process creation and signals
  to processes (subprocess, os.system/exec*/spawn*/posix_spawn/fork/forkpty, pty, os.kill),
  sys.settrace/setprofile, installing a signal handler, importing unittest.mock, FIFOs and
  device nodes (os.mkfifo/mknod) and pidfds (os.pidfd_open, signal.pidfd_send_signal), which
  the guard wraps because they raise no audit event, opening /proc/<pid>/mem, and
  /proc/<pid>/cmdline or maps (how a process was started: what tells the check from `test`);
- reading the code object of a test function or a test's frame (`f_code`), or opening any test file (the hidden check's,
  the repository's, conftest.py, their caches) -- never allowed; writing Python sources in
  the repository. One exception, for reading only: a helper module under a tests directory
  that the agent could read as it is (`rules._visible_helper`: jinja2's `PackageLoader("res")`
  imports the package tests/res/ its test names) -- its source and its byte-code, when it is
  not named like a test (test_*, *_test, conftest), not a hidden check file (nor its
  byte-code, nor the same file under another name: device and inode), and not written during
  the run. The agent's workspace holds the whole buggy repository, tests included, and its
  diff never carries a test path (`tasks.is_test_path`), so such a file is the very bytes the
  agent could already read;

Regardless of who is on the stack: adding an audit hook, touching the runner's own files
(anything named `.fixrl-*`: the FIFO but through the emitter, the report, the output file;
the JUnit file only from a stack free of agent code), writing the hidden check files,
conftest.py, pytest's configuration files, `.pyc`/`.pth` files or sitecustomize, re-creating
`_thread`, `_signal` or `_imp` to get unguarded copies, replacing the code of a guard wrapper.

The hidden tests' own values: the guard compiles every module pytest's import hook would
rewrite (test modules, conftests) itself, instead of pytest's assertion rewriting: each
one-operator comparison, negation and assert test first has the guard judge its operands, and
a value whose comparison, hash, truth or numeric dunders come from changed code that never
defined such (`tasks.check.guard`'s "dunders"), or a C method bound under a comparison's name
that is not the built-in base's own method of that name (`__eq__ = int.__ne__`), stops the run;
items of built-in containers and their subclasses are looked at through the built-in's own C
iteration. `==`, `!=`, `in`, `not in` and the first two arguments of unittest's comparing
asserts are then computed by the guard (`equal`): the side that may be the agent's (`sides`,
read from the test's source) is reduced to plain data without calling its methods, standard
value types compare as they do, the repository's classes with their ORIGINAL methods (the
host's snapshot), and any other object of the agent's side is equal only to itself -- only the
test's own expected object decides (docs/change-policy.md). A hidden test module that runs
any code but the guard's compiled code (a planted .pyc, an import that bypassed the hook) is
tampering. pytest's detailed assertion messages are therefore not in the check's output.

Nothing the code under test can reach holds the guard's state: it lives in the audit hook's
closure; the plugin reports through a generator's `send` (its frame is behind an audited
attribute); wrappers installed into modules are detached (globals of their own, they only ask
the hook, which holds the originals) or have sys.audit and their original bound as code
constants; thread and finalizer callbacks run through a generator's `send`. The plugin also
refuses a run where pytest's, pluggy's, unittest's, the builtins' or this runner's own
functions were replaced (a snapshot taken before repository code runs, compared after
collection, at every test event and at the end), where a test's function, code or parameters
changed after collection, or where a plain test's body was not seen to return; it seals the
references through which module-level code reaches pytest's session and configuration (the
assertion rewriter's `config`/`session`), clears pytest's debugger and assertion globals, and
drops the hidden tests' source from linecache after every report.

What this does NOT guarantee

- Code under test runs in the judged process. Whatever Python exposes without an audit event
  stays reachable to it: a hidden test module's globals and parametrize marks (through
  `sys.modules`, `object.__subclasses__()`, a test-defined callable's `__globals__`), and
  pytest objects behind a reference the sealing does not cover (a conftest that stores its
  config in a global). The static change policy, which refuses such constructs in the
  agent's edits, is the defence there.
- Deferred execution that never runs changed code: a C-level callable (a stdlib function, a
  partial of one) invoked later by the interpreter -- a weakref callback, a hand-built
  weakref.finalize registry entry, a lazy iterator the test consumes, a thread pool started by
  untouched code -- runs with no agent frame on the stack, so only the target rules above apply
  to what it does (code it makes at run time is the agent's only while the collector holds such
  a callback).
- Which side of a comparison is the test's is judged from the test's source (`sides`); an
  expected value kept in a fixture counts as the agent's. A repository class that is equal to
  anything by design (in its original) still is. Comparisons made inside repository helpers
  that pytest does not rewrite are not judged (docs/change-policy.md lists the rest).
- The FIFO is open for a few microseconds per event; a thread of a file allowed to use
  threads that writes to every descriptor could slip a forged event in (and the monotone
  events make a forged pass useless unless the real failure is also suppressed).
- Nothing here limits resources or isolation: that is the sandbox's job.
"""
