"""Benchmarks: what `fixrl bench NAME` runs, one module per benchmark. Each reports speed or
memory as ratios against a baseline measured in the same run (the machines are shared and
noisy); none is imported by the code it measures. Measured figures live in the README and in
docs/benchmarks.md, not here.

    sandbox.py        `fixrl bench sandbox`: start, tool-call latency, reset against `docker exec`
    check.py          `fixrl bench check`: the hidden check with its runtime guard against without
    generate.py       `fixrl bench generate`: generator candidates/min, covering tests against the whole suite
    rollout.py        `fixrl bench rollout`: the agent loop, batched against one episode at a time
    ray.py            `fixrl bench rollout --ray`: the environment side on a Ray cluster against the local pool
    logprobs.py       `fixrl bench logprobs`: reply log-probs' memory and time against naive paths
    grpo_step.py      `fixrl bench grpo-step`: one GRPO update at Qwen2.5 sizes on the CPU, the memory model
    gpu.py            `fixrl bench gpu`: the T4 check (fp16 updates under a 15 GB cap)
    update_worker.py  the subprocess grpo-step and gpu run per model size (`python -m ...`)
    sdist.py          released source distributions from PyPI, fetched once into a cache (repos, tests)
    proc.py           measuring in a fresh subprocess: peak RSS, CPU seconds, running a worker
    errors.py         BenchError, the bad-input error of every bench
"""
