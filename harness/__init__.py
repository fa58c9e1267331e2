"""The agent loop, the `fixrl` command line and the demo recipe: three subpackages, one way down.

- `fixrl.harness.agent`: the agent loop. Chat format and tool-call parsing (`chat`), token-exact
  trajectories (`trajectory`, `transcript`), batched lockstep rollouts behind the `Rollouts`
  seam (`rollouts`, `rollout`), policies (`policies`: HF + peft, scripted), the tiny Qwen2
  checkpoint (`tiny`). Imported by train/ and evals/; imports neither, nor the two below.
- `fixrl.harness.demo`: the demo's recipe (`fixrl demo`): its config, excerpts, read-use
  measurement and data-vocabulary head. Uses train/ and evals/; imported only by the CLI.
- `fixrl.harness.cli`: the command line. Imports everything; imported by nothing.
"""
