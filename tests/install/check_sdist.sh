#!/usr/bin/env bash
# The sdist alone builds a working wheel: unpack it in an empty directory, build with pip
# (build isolation: maturin from PyPI, cargo from PATH) using a cargo target of its own,
# then check the wheel carries the extension and the package data.
#
#   tests/install/check_sdist.sh PYTHON SDIST
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 PYTHON SDIST" >&2
  exit 2
fi
python=$1
sdist=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
tar xzf "$sdist"
"$python" -m venv venv
started=$(date +%s)
env -u CARGO_TARGET_DIR venv/bin/python -m pip wheel --disable-pip-version-check --quiet \
  --no-deps --wheel-dir wheels ./cellcc-*/
echo "check_sdist: built $(ls wheels) in $(($(date +%s) - started)) s"
listing=$(venv/bin/python -m zipfile -l wheels/cellcc-*.whl)
for member in cellcc/_core.abi3.so cellcc/data/experiments/c2tcp-ifip-table1.toml \
  cellcc/data/examples/two-flows-constant.toml; do
  grep -q "$member" <<<"$listing" || { echo "check_sdist: the wheel lacks $member" >&2; exit 1; }
done
echo "check_sdist: ok"
