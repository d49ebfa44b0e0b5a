# Heads & Masks. The two commands of README:
#   make lab    create the environment if needed, then open the course in JupyterLab
#   make test   create the environment if needed, then run every test
# and, for authors and instructors:
#   make notebooks   regenerate solutions/ and notebooks/ from authoring/ (deterministic)
#   make bench       measure what the course promises (speed, memory, widget latency, grading throughput)
#   make instructor-lab   JupyterLab with nbgrader's instructor tools (Formgrader, Create Assignment)
#   make explore     every notebook's widget on a page without code (Voilà), e.g. for a lecture

PYTHON ?= python3
# An active conda environment (environment.yml) is used as it is; otherwise a venv in the repo.
ifdef CONDA_PREFIX
VENV := $(CONDA_PREFIX)
STAMP := $(CONDA_PREFIX)/.heads-and-masks-ready
else
VENV := .venv
STAMP := .venv/.ready
endif
BIN := $(VENV)/bin
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: lab instructor-lab test notebooks bench env explore

env: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Heads & Masks needs Python 3.11 or newer; found " + sys.version.split()[0])'
	@test -x $(BIN)/python || { echo "Creating the environment in $(VENV) (about two minutes, once)"; $(PYTHON) -m venv $(VENV); }
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
