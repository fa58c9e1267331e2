"""Training: SFT and GRPO. Heavy dependencies (torch, transformers, peft) are imported by the
modules that need them, not here.

    config.py      GRPOConfig (TRL names, a docstring per field), PRESETS, LoRAConfig
    advantages.py  group advantages (none / group std / RLOO), overlong shaping
    losses.py      clipped token / sequence (GSPO) ratio, KL estimators, loss aggregation
    logprobs.py    reply_log_probs: one checkpointed forward, chunked head at reply positions
    sampler.py     DynamicSampler: groups until enough are mixed; per-task outcome memory
    model.py       load/save LoRA adapters or full models; the KL reference without a 2nd model
    sft.py         SFT on chat messages or fixrl trajectories, masked to assistant tokens
    grpo.py        the GRPO loop: sample -> advantages -> loss -> step, logs, evals, checkpoints
"""
