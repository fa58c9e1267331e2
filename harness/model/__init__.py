"""The model below the agent loop: where a checkpoint comes from and how it is loaded, nothing of
episodes. Imported by the agent loop (the HF policy), train/ (SFT, GRPO) and the demo.

- `dirs`: the one set of checks that a directory is a checkpoint or a peft adapter
  (`check_model_dir`, `check_adapter_dir`, `CheckpointError`); no heavy imports, so the command
  line runs them before torch loads.
- `load`: the one loader (`load_base`, `load_adapter`, `pick_device`): tokenizer and causal LM from
  a checked directory, an adapter over it (for inference or trainable).
- `precision`: fp32 | fp16 | bf16 as a setting: defaults per device, dtypes, autocast.
- `tiny`: `init_tiny(path)`, a tiny Qwen2 checkpoint with Qwen2.5's tokenizer and chat template;
  `qwen25_tokenizer()`; `make_tiny_suite(dir)` for tests and benchmarks (its sources are the
  data files under `tiny_data/`).
"""
