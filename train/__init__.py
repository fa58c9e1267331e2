"""Training: SFT and GRPO. Heavy dependencies (torch, transformers, peft) are imported by the
modules that need them, not here.

    config.py      what the user sets: GRPOConfig (TRL names, a docstring per field), SFTConfig, LoRAConfig
    resolve.py     the one place a config becomes a run's values: presets, earlier names,
                   derived values -> the frozen RunConfig a run reads, logs and saves
    batch.py       the records the trainer consumes: Group (one task's episodes), SampleBatch
    advantages.py  group advantages (none / group std / RLOO), overlong shaping
    losses.py      clipped token / sequence (GSPO) ratio, KL estimators, loss aggregation
    logprobs.py    reply_log_probs: one checkpointed forward, chunked head at reply positions
    sampler.py     DynamicSampler: groups until enough are mixed; per-task outcome memory
    model.py       load/save LoRA adapters or full models; the KL reference without a 2nd model
    sft.py         SFT on chat messages or fixrl trajectories, masked to assistant tokens
    grpo.py        the GRPO job, top to bottom: start -> (sample -> advantages -> loss -> step,
                   logs, evals, checkpoints) per step -> finish
    rundir.py      what a run writes and reads back: metrics, trajectories, checkpoints, RNG states
"""
