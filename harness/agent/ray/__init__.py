"""The `Rollouts` seam over a Ray cluster (`--ray auto|ADDRESS`, the `fixrl[ray]` extra): generation
stays with the policy in the driver; each episode's environment side runs on the cluster's nodes.
Which cluster is `harness.agent.settings.ClusterConfig`, outside this package, so that a run
without `--ray` imports nothing here.

- `rollouts`: `RayRollouts`, the seam's Ray implementation (`open_rollouts` picks it).
- `envside`: `RayEnvSide`, the loop's environment side on workers; episodes move off lost nodes.
- `pool`: `WorkerPool`, the driver's workers (one per node), their deadlines and shutdown.
- `worker`: `EnvWorker`, the actor on each node (a sandbox pool and `LocalEnvSide`s).
- `map`: `TaskMap` and `RayRunner`, one function over many tasks on the workers (validation, generation).
- `local_cluster`: `LocalCluster`, a real multi-node cluster of `ray start` processes on one
  machine (tests and benchmarks).

Only `pool` imports Ray, and only when a run asks for a cluster.
"""
