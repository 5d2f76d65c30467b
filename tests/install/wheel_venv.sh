#!/usr/bin/env bash
# Create a fresh venv that runs cellcc from a built wheel, as a user's would: no checkout
# on sys.path and no Rust toolchain needed. Installs the wheel and the test requirements
# (requirements-test.txt) under the given constraints file.
#
#   tests/install/wheel_venv.sh PYTHON CONSTRAINTS VENV WHEEL
set -euo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 PYTHON CONSTRAINTS VENV WHEEL" >&2
  exit 2
fi
python=$1 constraints=$2 venv=$3 wheel=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check --quiet \
  -c "$constraints" "$wheel" -r "$here/requirements-test.txt"
"$venv/bin/python" -m pip check --disable-pip-version-check
"$venv/bin/python" - <<'PY'
import importlib.metadata as md
import sys

names = ("cellcc", "numpy", "pandas", "pyarrow", "matplotlib", "typer", "rich")
print(f"venv: Python {sys.version.split()[0]}; " + ", ".join(f"{n} {md.version(n)}" for n in names))
PY
