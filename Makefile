# Heads & Masks. The two commands of README:
#   make lab    create the environment if needed, then open the course in JupyterLab
#   make test   create the environment if needed, then run every test
# and, for authors and instructors:
#   make notebooks   regenerate solutions/ and notebooks/ from authoring/ (deterministic)
#   make bench       measure what the course promises (speed, memory, widget latency, grading throughput)
#   make instructor-lab   JupyterLab with nbgrader's instructor tools (Formgrader, Create Assignment)
#   make explore     every notebook's widget on a page without code (Voilà), e.g. for a lecture

# The interpreter the environment is made from (tools/check_python.py says which ones do), and where it goes:
# an active conda environment (environment.yml) is used as it is; otherwise a venv in the repo, .venv/ unless
# VENV= says otherwise (e.g. `make env PYTHON=/usr/bin/python3 VENV=.venv-debian`: a second one, for tests).
PYTHON ?= python3
ifndef VENV
ifdef CONDA_PREFIX
VENV := $(CONDA_PREFIX)
else
VENV := .venv
endif
endif
STAMP := $(VENV)/.heads-and-masks-ready
BIN := $(VENV)/bin
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: lab instructor-lab test notebooks bench env explore

env: $(STAMP)

# What stops `make env` before it installs anything, in one line (empty when nothing does): the version of the
# interpreter (the environment's own, once there is one), and whether it can make a venv with pip in it, which
# Debian's python3 cannot without its python3.X-venv package (tools/check_python.py).
ENV_PROBLEM = $(shell \
  if $(BIN)/python -m pip --version >/dev/null 2>&1; then $(BIN)/python tools/check_python.py --made $(VENV); \
  elif command -v $(PYTHON) >/dev/null; then $(PYTHON) tools/check_python.py --venv $(PYTHON); \
  else echo "There is no $(PYTHON) to make the environment with: install Python 3.11, or name one (make env PYTHON=/path/to/python3.11)"; \
  fi 2>&1)

# A venv left half-made (no pip in it) is made again.
$(STAMP): pyproject.toml requirements.lock
	$(if $(ENV_PROBLEM),$(error $(ENV_PROBLEM)))
	@$(BIN)/python -m pip --version >/dev/null 2>&1 || \
	  { echo "Creating the environment in $(VENV) with $(PYTHON) (about two minutes, once)"; $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c requirements.lock -e '.[test]'
	@touch $@

lab: $(STAMP)
	$(BIN)/python tools/lab.py $(LAB_ARGS)

instructor-lab: $(STAMP)
	$(BIN)/python tools/lab.py --instructor $(LAB_ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

explore: $(STAMP)
	$(BIN)/python tools/explore.py $(EXPLORE_ARGS)

notebooks: $(STAMP)
	$(BIN)/python tools/build_notebooks.py

bench: $(STAMP)
	$(BIN)/python tools/bench.py $(BENCH_ARGS)

# For instructors (docs/instructors.md). ASSIGNMENT=00_start_here; SOURCE=exchange, a .zip from the
# LMS, or a folder <student>/<assignment>/...; the exchange is nbgrader's Exchange.root (its configuration,
# e.g. /etc/jupyter/nbgrader_config.py, else /usr/local/share/nbgrader/exchange), or EXCHANGE=/path for
# every target alike.
ASSIGNMENT ?= 00_start_here
GRADE := $(BIN)/python -m autograde.grade $(if $(EXCHANGE),--exchange $(EXCHANGE))
GRADE_SOURCE = $(if $(SOURCE),$(if $(filter exchange,$(SOURCE)),--exchange-collect,$(if $(filter %.zip,$(SOURCE)),--zip $(SOURCE),--folder $(SOURCE))))

.PHONY: release grade feedback export report

release: $(STAMP)
	$(GRADE) release $(ASSIGNMENT)

grade: $(STAMP)
	$(GRADE) all $(ASSIGNMENT) $(GRADE_SOURCE) $(GRADE_ARGS)

feedback: $(STAMP)
	$(GRADE) feedback $(ASSIGNMENT) --release

export: $(STAMP)
	$(GRADE) export

report: $(STAMP)
	$(GRADE) report $(ASSIGNMENT)
