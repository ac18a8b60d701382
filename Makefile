# faithlab — two commands do all set-up on a fresh machine: `make book` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
UV ?= $(shell command -v uv 2>/dev/null || echo $(HOME)/.local/bin/uv)
VENV := .venv
PY := $(VENV)/bin/python
PROFILE ?= book
JOBS ?= 2
# make test's pytest workers (pytest-xdist), one per core; each test module stays on one worker (--dist loadfile), in
# collection order (--no-loadscope-reorder: xdist would otherwise hand out the files with the most tests first, and
# the files of the notebook runs, collected first by tests/support/slow_first.py, would start last)
TEST_WORKERS ?= 2
NB ?=
ARGS ?=
BOOK_FLAGS := -W -n --keep-going --all
# Byte-compiled caches make the many kernel starts of the study much faster; some shells switch them off.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help setup book notebooks html test browser-deps clean paper-dry publish

help:
	@echo "make setup     create .venv from uv.lock with every extra, installing uv if missing (book, test run it first)"
	@echo "make book      build the book on embedded data (set-up + notebooks with the 'book' profile + HTML)"
	@echo "make test      run the test suite (set-up + pytest)"
	@echo "make notebooks PROFILE=smoke|book|paper [NB='paper/experiment ...'] [ARGS='-p name value']"
	@echo "make html      rebuild the HTML from the generated notebooks only"
	@echo "make paper-dry run every notebook with the paper-dry profile: fake data, real sizes, on a CPU"
	@echo "make clean     remove the built book, generated artifacts and caches (keeps .venv)"
	@echo "make publish   build the book, then push _build/html to the gh-pages branch (GitHub Pages) with ghp-import"

# Set-up: uv (installed with pip if missing), then the locked environment: the library with every extra (timm, the
# report's figures, ...: pyproject.toml's optional-dependencies), the study (lib/faithlab-study, the workspace's second
# distribution) with its cluster extra, and the dev group; fails loudly if torchvision is broken.
$(VENV)/.synced: pyproject.toml lib/faithlab-study/pyproject.toml uv.lock
	@if [ ! -x "$(UV)" ]; then \
	  echo "uv not found: installing it with pip --user"; \
	  $(PYTHON) -m pip install --user --quiet uv || $(PYTHON) -m pip install --user --quiet --break-system-packages uv; \
	fi
	$(UV) sync --locked --all-extras --all-packages
	@$(PY) -c "import torch, torchvision, captum, faithlab, faithlab_study; print(f'torch {torch.__version__}, torchvision {torchvision.__version__}, cuda available: {torch.cuda.is_available()}')" \
	  || { echo "set-up failed: torch/torchvision/faithlab/faithlab_study do not import in $(VENV)" >&2; exit 1; }
	@touch $@

setup: $(VENV)/.synced

notebooks: setup
	$(PY) -m faithlab_study run --profile $(PROFILE) -j $(JOBS) $(NB) $(ARGS)

html: setup
	$(VENV)/bin/jupyter-book build book --config _config.yml $(BOOK_FLAGS)
	@echo "book built: file://$(CURDIR)/_build/html/index.html"

book: setup
	$(MAKE) --no-print-directory notebooks PROFILE=book
	$(MAKE) --no-print-directory html

# By hand what .github/workflows/book.yml does on every push to main: build, then commit _build/html to the gh-pages
# branch (-n: add .nojekyll so _static/ is served; -f: replace the branch's history; -p: push to origin).
publish: book
	$(VENV)/bin/ghp-import -n -p -f _build/html

# Debian's chromium lets the browser test look at the built book; skipped (with a reason) when it cannot install.
browser-deps:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the browser test"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || echo "could not install chromium: the browser test will be skipped"; \
	  else echo "chromium absent and not installable here: the browser test will be skipped"; fi; \
	fi

test: setup browser-deps
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(ARGS)

# The paper profile's code paths on CPU: fake data in the real formats and random weights at the real sizes
# (data/cache/paper-dry, written once by tests/support/paper_dry.py), every notebook with the paper-dry
# profile, outputs and trained models under _build/paper-dry (never the book's). NB/ARGS as for `make notebooks`.
paper-dry: setup
	$(PY) tests/support/paper_dry.py data/cache/paper-dry
	HF_HUB_CACHE=$(CURDIR)/data/cache/paper-dry/huggingface/hub FAITHLAB_GENERATED=$(CURDIR)/_build/paper-dry/generated \
	  FAITHLAB_CACHE=$(CURDIR)/_build/paper-dry/cache $(PY) -m faithlab_study run --profile paper-dry -j $(JOBS) $(NB) $(ARGS)

clean:
	rm -rf _build book/_build book/_generated data/cache .pytest_cache
