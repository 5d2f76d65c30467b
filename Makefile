# cellcc developer entry points. Everything runs through .venv/bin/python explicitly;
# no activated environment is needed. `make test` and `make demo` set up what they need.

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
# Marks that the pinned Python dependencies are installed; redone when the pins change.
DEPS_STAMP := $(VENV)/.cellcc-deps

.DEFAULT_GOAL := help
.PHONY: help venv build browser sysdeps real test test-rust test-python demo bench bench-per-ack bench-python lint check-cargo check-python clean

help:
	@echo "make demo   build, then generate synthetic traces, compare all schemes, write demo-report/"
	@echo "make test   build, then run the Rust tests and the Python tests"
	@echo "make venv   create .venv with the pinned Python dependencies"
	@echo "make build  compile the extension (release) into .venv"
	@echo "make real   build the real path (BPF congestion controls, loader, emulator) into .venv/bin"
	@echo "make bench  run the simulator benchmark"
	@echo "make bench-per-ack  CPU time per ACK of every scheme (PropRate Table 4)"
	@echo "make bench-python  Python congestion controls and the Gymnasium environment"
	@echo "make lint   cargo fmt --check, clippy -D warnings, ruff"

check-python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { \
	  echo "error: $(PYTHON) not found; install Python 3.11 or run 'make PYTHON=/path/to/python3.11 ...'" >&2; \
	  exit 1; }

check-cargo:
	@command -v cargo >/dev/null 2>&1 || { \
	  echo "error: cargo not found; install the Rust toolchain (rustup, stable >= 1.88) and make sure cargo is on PATH" >&2; \
	  exit 1; }

$(DEPS_STAMP): requirements-dev.txt pyproject.toml | check-python
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check --quiet -r requirements-dev.txt
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

test: build browser real test-rust test-python

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

lint: $(DEPS_STAMP) check-cargo sysdeps
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	$(VENV)/bin/ruff check python tests/python tests/bench examples
	$(VENV)/bin/ruff format --check python tests/python tests/bench examples

clean:
	rm -rf $(VENV) demo-report out python/cellcc/_core*.so .pytest_cache
