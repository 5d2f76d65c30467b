# cellcc developer entry points. Everything runs through .venv/bin/python explicitly;
# no activated environment is needed. `make test` and `make demo` set up what they need.

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
# Marks that the pinned Python dependencies are installed; redone when the pins change.
DEPS_STAMP := $(VENV)/.cellcc-deps
# Wheels and the sdist.
DIST := dist
# The other interpreters `make test` runs the tests on, from the one abi3 wheel (those
# not installed are skipped with a note), and the one that runs against the lowest
# supported dependency versions (constraints-lowest.txt).
EXTRA_PYTHONS ?= python3.12 python3.13
LOWEST_PYTHON ?= python3.11
LOWEST_VENV := .venv-lowest
# maturin finds zig (the ziglang package) through the python on PATH: the venv's.
VENV_PATH := PATH="$(abspath $(VENV))/bin:$$PATH"

.DEFAULT_GOAL := help
.PHONY: help venv build browser sysdeps real test test-rust test-python demo bench bench-per-ack bench-python bench-startup bench-emu fuzz lint check-root check-cargo check-python clean \
	wheel wheel-test sdist sdist-check test-wheel test-interpreters test-lowest

help:
	@echo "make demo   build, then generate synthetic traces, compare all schemes, write demo-report/"
	@echo "make test   build, then run the Rust tests and the Python tests"
	@echo "make venv   create .venv with the pinned Python dependencies (constraints.txt)"
	@echo "make wheel  build the abi3 manylinux wheel into dist/ (docs/install.md)"
	@echo "make sdist  build the source distribution into dist/; make sdist-check builds a wheel from it"
	@echo "make test-lowest  the Python tests against the lowest supported versions (constraints-lowest.txt)"
	@echo "make build  compile the extension (release) into .venv"
	@echo "make real   build the real path (BPF congestion controls, loader, emulator) into .venv/bin"
	@echo "make bench  run the simulator benchmark"
	@echo "make bench-per-ack  CPU time per ACK of every scheme (PropRate Table 4)"
	@echo "make bench-python  Python congestion controls and the Gymnasium environment"
	@echo "make bench-startup  whole-process CPU time of cellcc --version and a 10 s cellcc run"
	@echo "make bench-emu  emulator timing, goodput and CPU per packet at 1 and 4 Gbit/s (root)"
	@echo "make fuzz   30 minutes of hostile scenarios, traces, sweep files and CLI arguments (tests/fuzz)"
	@echo "make lint   cargo fmt --check, clippy -D warnings, ruff"

check-python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { \
	  echo "error: $(PYTHON) not found; install Python 3.11 or run 'make PYTHON=/path/to/python3.11 ...'" >&2; \
	  exit 1; }

check-cargo:
	@command -v cargo >/dev/null 2>&1 || { \
	  echo "error: cargo not found; install the Rust toolchain (rustup, stable >= 1.88) and make sure cargo is on PATH" >&2; \
	  exit 1; }

$(DEPS_STAMP): requirements-dev.txt constraints.txt pyproject.toml | check-python
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check --quiet -r requirements-dev.txt -c constraints.txt
	touch $@

venv: $(DEPS_STAMP)

# maturin develop builds python/cellcc/_core*.so in place and installs the package
# (editable) into the venv named by VIRTUAL_ENV.
build: $(DEPS_STAMP) check-cargo
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release --locked --quiet

test-rust: check-cargo
	cargo test --workspace --release --locked

test-python: build
	CELLCC_REQUIRE_NATIVE=1 $(PY) -m pytest

# Headless Chromium and its driver (Debian packages) for the report tests. Installed
# when missing and running as root (CI); otherwise those tests skip and say why.
browser:
	@if ! command -v chromedriver >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else \
	    echo "note: chromium-driver is not installed and this is not root: the browser report tests will skip"; \
	  fi; \
	fi

# The real path's system packages: clang and bpftool build the BPF objects (bpf/), libelf
# and zlib link the bundled libbpf, iperf3 and iproute2 serve the emulator tests. Installed
# when missing and running as root (CI); otherwise the build says what is missing.
REAL_PACKAGES := clang llvm bpftool libelf-dev zlib1g-dev pkg-config iperf3 iproute2
sysdeps:
	@missing=$$(for p in $(REAL_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "note: missing system packages for the real path: $$missing (install them as root)"; \
	  fi; \
	fi

# cellcc-kernel, cellcc-emu and cellcc-flow, copied next to the venv's `cellcc`.
real: sysdeps $(DEPS_STAMP) check-cargo
	cargo build --release --locked -p cellcc-kernel -p cellcc-emu
	install -m 0755 target/release/cellcc-kernel target/release/cellcc-emu target/release/cellcc-flow $(VENV)/bin/

# One abi3 wheel (CPython >= 3.11) for manylinux2014 x86_64, the lowest tag the Rust
# standard library allows (glibc 2.17). zig links against that glibc whatever the host's;
# auditwheel shows the symbols it needs. Stripped: the release profile keeps line tables
# for profiling, which users do not need.
wheel: $(DEPS_STAMP) check-cargo
	rm -f $(DIST)/cellcc-*.whl
	$(VENV_PATH) $(VENV)/bin/maturin build --release --locked --strip --zig --compatibility manylinux2014 --out $(DIST)
	$(VENV)/bin/auditwheel show $(DIST)/cellcc-*.whl

sdist: $(DEPS_STAMP)
	rm -f $(DIST)/cellcc-*.tar.gz
	$(VENV)/bin/maturin sdist --out $(DIST)

# Builds a wheel from the sdist alone, in a clean directory with its own cargo target
# (a full release build: minutes), as pip does for a platform without a wheel.
sdist-check: sdist check-cargo
	tests/install/check_sdist.sh $(PYTHON) $(DIST)/cellcc-*.tar.gz

# The wheel in a fresh venv next to the lowest supported numpy/pandas, without Rust on
# PATH, outside the checkout: demo, catalogue, a quick reproduction.
# The wheel the install checks use: the release build `make build` made, packed as a
# wheel (seconds, no second build; maturin tags it with the manylinux level it meets).
# `make wheel` is the portable release wheel (manylinux2014 through zig).
TEST_DIST := $(DIST)/test
wheel-test: build
	rm -rf $(TEST_DIST)
	$(VENV)/bin/maturin build --release --locked --out $(TEST_DIST)

test-wheel: wheel-test
	tests/install/wheel_venv.sh $$(tests/install/find_python.sh $(LOWEST_PYTHON)) constraints-lowest.txt $(LOWEST_VENV) $(TEST_DIST)/cellcc-*.whl
	tests/install/check_wheel.sh $(LOWEST_VENV)

# The tests minus `-m slow` on every other interpreter, from the same wheel (the full
# suite runs on $(PYTHON) in test-python).
test-interpreters: wheel-test
	@for py in $(EXTRA_PYTHONS); do \
	  if ! exe=$$(tests/install/find_python.sh $$py); then echo "note: $$py not installed: skipped"; continue; fi; \
	  echo "== $$py ($$exe): the tests minus -m slow, from the wheel"; \
	  tests/install/wheel_venv.sh $$exe constraints.txt .venv-$$py $(TEST_DIST)/cellcc-*.whl && \
	  CELLCC_REQUIRE_NATIVE=1 .venv-$$py/bin/python -m pytest -q -m "not slow" -p no:cacheprovider || exit 1; \
	done

# The whole suite against the lowest supported versions, Ray executor included.
test-lowest: test-wheel
	$(LOWEST_VENV)/bin/python -m pip install --disable-pip-version-check --quiet -c constraints-lowest.txt ray
	CELLCC_REQUIRE_NATIVE=1 $(LOWEST_VENV)/bin/python -m pytest -q -p no:cacheprovider

test: build browser real test-rust test-python test-wheel test-interpreters

demo: build
	$(VENV)/bin/cellcc demo

bench: check-cargo
	cargo run --release --locked -p cellcc-sim --bin cellcc-bench

bench-per-ack: check-cargo
	cargo run --release --locked -p cellcc-sim --bin cellcc-bench -- --per-ack --runs 11

# CPU per ACK of a Python NewReno against the built-in one, per-interval Python control,
# and the Gymnasium environment's steps and packets per CPU second (docs/gym.md).
bench-python: build
	$(PY) tests/bench/python_cc.py --runs 5

# Whole-process CPU time of `cellcc --version` and of a 10 s `cellcc run` (start-up:
# imports). Compare with another build side by side: make bench-startup
# STARTUP_ARGS='--baseline ../old/.venv/bin/cellcc'.
bench-startup: build
	$(PY) tests/bench/startup.py --runs 10 $(STARTUP_ARGS)

# The emulator at 1 and 4 Gbit/s: packets within 1 ms, goodput / ideal, CPU per packet
# (tests/bench/emu.py; root only). Compare with another build side by side, run
# alternately: make bench-emu EMU_BENCH_ARGS='--baseline ../old/cellcc-emu'.
CARGO_TARGET := $(or $(CARGO_TARGET_DIR),target)
check-root:
	@if [ "$$(id -u)" != 0 ]; then \
	  echo "error: make bench-emu needs root (TUN devices and network namespaces)" >&2; exit 1; fi

bench-emu: check-root check-cargo
	cargo build --release --locked -p cellcc-emu
	$(PYTHON) tests/bench/emu.py --emu $(CARGO_TARGET)/release/cellcc-emu \
	  --flow $(CARGO_TARGET)/release/cellcc-flow --runs 3 $(EMU_BENCH_ARGS)

# Hostile input for FUZZ_MINUTES (default 30): scenarios, trace files, sweep files and CLI
# argument sets, each in a worker under a 2 GiB address-space limit; findings are written
# to out/fuzz-findings/ (tests/fuzz/fuzz.py). `make test` runs a bounded part of it.
FUZZ_MINUTES ?= 30
fuzz: build
	$(PY) tests/fuzz/fuzz.py --minutes $(FUZZ_MINUTES) $(FUZZ_ARGS)

lint: $(DEPS_STAMP) check-cargo sysdeps
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	$(VENV)/bin/ruff check python tests/python tests/bench tests/fuzz
	$(VENV)/bin/ruff format --check python tests/python tests/bench tests/fuzz

clean:
	rm -rf $(VENV) $(LOWEST_VENV) $(EXTRA_PYTHONS:%=.venv-%) $(DIST) demo-report out python/cellcc/_core*.so .pytest_cache
