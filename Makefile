# Heads & Masks. The two commands of README:
#   make lab    create the environment if needed, then open the course in JupyterLab
#   make test   create the environment if needed, then run every test
# and, for authors and instructors:
#   make notebooks   regenerate solutions/ and notebooks/ from authoring/ (deterministic)
#   make bench       measure what the course promises (speed, memory, widget latency, grading throughput)
#   make bench-torch  optional: PyTorch in the environment, so the bench compares with its causal SDPA
#   make instructor-lab   JupyterLab with nbgrader's instructor tools (Formgrader, Create Assignment)
#   make explore     every notebook's widget on a page without code (Voilà), e.g. for a lecture
#   make hub         a class on this machine: the course's JupyterHub (as root; docs/jupyterhub.md)

# The interpreter the environment is made from (tools/check_python.py says which ones do), and where it goes:
# an active conda environment (environment.yml) is used as it is; otherwise a venv in the repo, .venv/ unless
# VENV= says otherwise (e.g. `make env PYTHON=/usr/bin/python3 VENV=.venv-debian`: a second one, for tests).
PYTHON ?= python3
ifndef VENV
ifdef CONDA_PREFIX
VENV := $(CONDA_PREFIX)
else ifdef HEADS_AND_MASKS_ENV
# The environment an administrator installed for everybody (the course's JupyterHub runs every server in
# it): used as it is, never installed into; it is not the user's.
VENV := $(HEADS_AND_MASKS_ENV)
else
VENV := .venv
endif
endif
STAMP := $(VENV)/.heads-and-masks-ready
ifdef HEADS_AND_MASKS_ENV
STAMP :=
endif
BIN := $(VENV)/bin
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: lab instructor-lab test notebooks bench bench-torch env explore

env: $(STAMP)

# What stops `make env` before it installs anything, in one line (empty when nothing does): the version of the
# interpreter (the environment's own, once there is one), and whether it can make a venv with pip in it, which
# Debian's python3 cannot without its python3.X-venv package (tools/check_python.py).
ENV_PROBLEM = $(shell \
  if $(BIN)/python -m pip --version >/dev/null 2>&1; then $(BIN)/python tools/check_python.py --made $(VENV); \
  elif command -v $(PYTHON) >/dev/null; then $(PYTHON) tools/check_python.py --venv $(PYTHON); \
  else echo "There is no $(PYTHON) to make the environment with: install Python 3.11, or name one (make env PYTHON=/path/to/python3.11)"; \
  fi 2>&1)

# The environment is made readable by every user, whatever the caller's umask: a grading kernel runs as a uid
# of its own (docs/security.md), and under an instructor's umask 077 it could not read its Python ("the kernel
# died before it answered"). `umask 022;` sets it for that line's shell alone: the caller keeps its own.
READABLE := umask 022;

# A venv left half-made (no pip in it) is made again.
$(STAMP): pyproject.toml requirements.lock
	$(if $(ENV_PROBLEM),$(error $(ENV_PROBLEM)))
	@$(BIN)/python -m pip --version >/dev/null 2>&1 || \
	  { echo "Creating the environment in $(VENV) with $(PYTHON) (about two minutes, once)"; \
	    $(READABLE) $(PYTHON) -m venv $(VENV); }
	$(READABLE) $(BIN)/python -m pip install --quiet --disable-pip-version-check -c requirements.lock -e '.[test]'
	@touch $@

# LANG=ru (or a Russian locale in the environment): the course in Russian, JupyterLab too (tools/lab.py)
lab: $(STAMP)
	$(BIN)/python tools/lab.py --language "$(LANG)" $(LAB_ARGS)

instructor-lab: $(STAMP)
	$(BIN)/python tools/lab.py --instructor $(LAB_ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# LANG=ru (or a Russian locale in the environment): the pages in Russian (tools/explore.py)
explore: $(STAMP)
	$(BIN)/python tools/explore.py --language "$(LANG)" $(EXPLORE_ARGS)

notebooks: $(STAMP)
	$(BIN)/python tools/build_notebooks.py

bench: $(STAMP)
	$(BIN)/python tools/bench.py $(BENCH_ARGS)

# Optional: PyTorch beside the course's packages, so `make bench` also compares with its causal SDPA.
bench-torch: $(STAMP)
	$(READABLE) $(BIN)/python -m pip install --disable-pip-version-check -r requirements-bench.txt

# For instructors (docs/instructors.md). ASSIGNMENT=00_start_here; SOURCE=exchange, a .zip from the
# LMS, or a folder <student>/<assignment>/...; the exchange is nbgrader's Exchange.root (its configuration,
# e.g. /etc/jupyter/nbgrader_config.py, else /usr/local/share/nbgrader/exchange), or EXCHANGE=/path for
# every target alike.
ASSIGNMENT ?= 00_start_here
# DB=<SQLAlchemy URL>: the gradebook on a database server instead of class/gradebook.db, for every target
# (grading, export, the formgrader of instructor-lab), e.g. DB=postgresql+psycopg://heads_grader@127.0.0.1/heads_and_masks
ifdef DB
export HEADS_AND_MASKS_GRADEBOOK_URL := $(DB)
endif
GRADE := $(BIN)/python -m autograde.grade $(if $(EXCHANGE),--exchange $(EXCHANGE))
GRADE_SOURCE = $(if $(SOURCE),$(if $(filter exchange,$(SOURCE)),--exchange-collect,$(if $(filter %.zip,$(SOURCE)),--zip $(SOURCE),--folder $(SOURCE))))

.PHONY: release grade feedback export report similarity

# DUE="2026-12-10 17:00 Europe/Berlin": the assignment's due date (DUE=none: none); without DUE it stays as it was.
# LANG=ru (or a Russian locale in the environment): the Russian notebooks, notebooks-ru/ASSIGNMENT; the grader
# grades every submission in the language of its notebook, so a class may mix both (docs/instructors.md).
release: $(STAMP)
	$(GRADE) release $(ASSIGNMENT) --language "$(LANG)" $(if $(DUE),--due "$(DUE)")

# LANG=ru (or a Russian locale) for grade and report: the lines printed and the class report in Russian; each
# student's feedback is in the language of the notebook they handed in, whatever LANG says.
grade: $(STAMP)
	$(GRADE) all $(ASSIGNMENT) --language "$(LANG)" $(GRADE_SOURCE) $(GRADE_ARGS)

feedback: $(STAMP)
	$(GRADE) feedback $(ASSIGNMENT) --release

# make export: class/grades.csv, in the class's folder (autograde/class_folder.py). FORMAT=canvas or FORMAT=moodle:
# the file that LMS's gradebook import reads (class/grades-canvas.csv, ...), one column per assignment;
# PER_EXERCISE=1: one per exercise.
FORMAT ?= csv
export: $(STAMP)
	$(GRADE) export --format $(FORMAT) $(if $(filter 1 yes true,$(PER_EXERCISE)),--per-exercise)

report: $(STAMP)
	$(GRADE) report $(ASSIGNMENT) --language "$(LANG)"

# After grading: pairs of submissions alike beyond the class's usual, side by side (instructor only).
similarity: $(STAMP)
	$(GRADE) similarity $(ASSIGNMENT) --language "$(LANG)"

# A class on one machine (docs/jupyterhub.md), as root. INSTRUCTOR=<their Unix account>; STUDENTS=<the
# students' Unix group>; EXCHANGE as above; HUB_STATE=<the hub's own folder>; HUB_PORT=8000.
# make hub-roster ROSTER=students.csv: the roster's Unix accounts, in the group and the gradebook.
# make hub LTI=lti.json: students arrive from the LMS (LTI 1.3) by the roster's lms_user_id, not by password.
# Every person's server runs in hub/env, made from a Python every user may run (HUB_PYTHON; the course's
# .venv may come from a Python in root's home), and the proxy comes from npm (hub/package-lock.json).
HUB_PYTHON ?= /usr/bin/python3
HUB := hub/env/bin/python tools/hub.py
HUB_OPTIONS = --instructor $(INSTRUCTOR) $(if $(STUDENTS),--students $(STUDENTS))

.PHONY: hub hub-roster hub-env

hub-env: hub/env/.ready hub/node_modules/.package-lock.json

# the course package is installed, not linked to this checkout: the grading sandbox shows kernels the environment
hub/env/.ready: pyproject.toml requirements.lock $(shell find heads_and_masks -name '*.py')
	@$(HUB_PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "The hub needs a Python 3.11 or newer that every user may run; found " + sys.version.split()[0] + ": set HUB_PYTHON")'
	@test -x hub/env/bin/python || { echo "Creating the class's environment in hub/env (a few minutes, once)"; $(HUB_PYTHON) -m venv hub/env; }
	hub/env/bin/python -m pip install --quiet --disable-pip-version-check -c requirements.lock '.[hub]'
	hub/env/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall .
	@touch $@

hub/node_modules/.package-lock.json: hub/package.json hub/package-lock.json
	cd hub && npm ci --no-audit --no-fund --loglevel=error

hub: hub-env
	@test -n "$(INSTRUCTOR)" || { echo "Say whose course it is: make hub INSTRUCTOR=<their Unix account>"; exit 2; }
	$(HUB) start $(HUB_OPTIONS) $(if $(EXCHANGE),--exchange $(EXCHANGE)) $(if $(HUB_STATE),--state $(HUB_STATE)) \
		$(if $(HUB_PORT),--port $(HUB_PORT)) $(if $(LTI),--lti $(LTI))

hub-roster: hub-env
	@test -n "$(INSTRUCTOR)" -a -n "$(ROSTER)" || { echo "make hub-roster INSTRUCTOR=<account> ROSTER=<file.csv>"; exit 2; }
	$(HUB) roster $(HUB_OPTIONS) $(ROSTER) $(if $(PASSWORDS),--passwords $(PASSWORDS)) $(if $(HUB_STATE),--state $(HUB_STATE))
