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
# and unpacks in parallel (about a minute and a half for a fresh setup against
# three with pip). Bytecode is compiled at install time, as pip does (where
# PYTHONDONTWRITEBYTECODE is set, nothing would compile it later and every
# process would compile its imports again): torch's on every core by compileall
# (11 s on 2 cores where pip's own pass took about 28; its one file in Python
# 3.12 syntax, a test helper, is left out), the rest by uv. Where uv cannot be
# had, pip does it all.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --disable-pip-version-check --no-compile --no-deps torch==2.13.0
	@$(PY) -m compileall -q -j 0 -x py312_intrinsics "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')/torch" \
	  || echo "some of torch's files did not compile (above): they are compiled when imported, where that is allowed"
	@if $(PIP) install -q --disable-pip-version-check uv 2>/dev/null; then \
	  $(VENV)/bin/uv pip install -q --python $(PY) --compile-bytecode -e '.[test]'; \
	else \
	  echo "uv not available: installing with pip"; \
	  $(PIP) install -q --disable-pip-version-check -e '.[test]'; \
	fi
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
