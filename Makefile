# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# `setup` is idempotent: it installs only what is missing.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.setup-stamp
export MUJOCO_GL ?= osmesa
export PYOPENGL_PLATFORM ?= osmesa
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# make's commands write the bytecode of what they import, wherever PYTHONDONTWRITEBYTECODE is set: setup
# (below) compiles none at install time.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup gl demo test lint test-slow bench clean tasks

setup: gl $(STAMP)

# Debian's headless GL libraries (OSMesa and EGL with Mesa's software drivers).
gl:
	@if ! ldconfig -p | grep -q libOSMesa || ! ldconfig -p | grep -q 'libEGL.so.1'; then \
	  echo "installing headless GL libraries"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	    libegl1 libegl-mesa0 libgl1-mesa-dri libosmesa6 >/dev/null; \
	fi

# The CPU torch wheel is installed by exact version first, with pip (which knows
# where the machine keeps it), so that no other requirement pulls a CUDA build;
# its dependencies come with the rest. The rest goes in with uv, which downloads
# and unpacks in parallel. Nothing is compiled to bytecode at install time (that
# took about 40 of a fresh setup's 83 s on 2 cores, for some 20,000 files most of
# which no command imports): setup ends by importing what libero_ll's commands
# import (scripts/warm_imports.py, about 12 s), which writes their bytecode, and
# make's own commands write that of anything else they import (above). Where uv
# cannot be had, pip does it all.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --disable-pip-version-check --no-compile --no-deps torch==2.13.0
	@if $(PIP) install -q --disable-pip-version-check --no-compile uv 2>/dev/null; then \
	  $(VENV)/bin/uv pip install -q --python $(PY) -e '.[test]'; \
	else \
	  echo "uv not available: installing with pip"; \
	  $(PIP) install -q --disable-pip-version-check --no-compile -e '.[test]'; \
	fi
	$(PY) scripts/warm_imports.py
	@touch $(STAMP)

demo: setup
	$(PY) scripts/quickstart.py

# Two test processes, each taking whole files (a file's fixtures are built once): on 2 cores the default
# run took 10.1 minutes against 14.1 in one process on an older machine, 6 to 6.5 minutes on a later AMD EPYC,
# 13.8 to 15.2 on a slower one (CPU family 25). TEST_WORKERS=0 runs them in this process. The 20 slowest tests are
# listed at the end: the default run must stay under 15 minutes on 2 cores.
TEST_WORKERS ?= 2
test: setup lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=20

# The error-class rules in pyproject.toml ([tool.ruff.lint]): undefined names, unused imports and the like.
lint: setup
	$(VENV)/bin/ruff check --quiet .

test-slow: setup
	$(PY) -m pytest -q -m slow

# The benchmark chooses its GL backend itself (NVIDIA's EGL on a GPU machine) unless the caller set one;
# the OSMesa default above is only for the other targets.
bench: setup
	env $(if $(filter file,$(origin MUJOCO_GL)),-u MUJOCO_GL) $(if $(filter file,$(origin PYOPENGL_PLATFORM)),-u PYOPENGL_PLATFORM) \
	  $(PY) scripts/bench/env_speed.py

# Regenerate the five shipped suites from libero_ll/tasks/suites/ (byte-identical .bddl files) and
# remake any fixed initial states that are missing or no longer match their task.
tasks: setup
	$(PY) scripts/make_tasks.py --init-states

clean:
	rm -rf $(VENV) runs datasets
