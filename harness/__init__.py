"""The agent loop, the models it runs, the `fixrl` command line and the demo recipe: four
subpackages, one way down.

- `fixrl.harness.model`: checkpoints: the directory checks, the one loader of a model and its
  adapter, precision, the tiny Qwen2 checkpoint. Knows nothing of episodes.
- `fixrl.harness.agent`: the agent loop. Chat format and tool-call parsing (`chat`), token-exact
  trajectories (`trajectory`, `transcript`), the lockstep loop (`loop`) behind the `Rollouts`
  seam (`rollouts`; `local_rollouts` in one process, `ray/` on a cluster), the episode settings
  jobs share (`settings`), policies (`policies`: HF + peft, scripted). Imported by train/ and
  evals/; imports neither, nor the two below.
- `fixrl.harness.demo`: the demo's recipe (`fixrl demo`): its config, excerpts, read-use
  measurement and data-vocabulary head. Uses train/ and evals/; imported only by the CLI.
- `fixrl.harness.cli`: the command line. Imports everything; imported by nothing.
"""
