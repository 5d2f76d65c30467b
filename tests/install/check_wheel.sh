#!/usr/bin/env bash
# The installed wheel works outside any checkout and without a Rust toolchain: in a temp
# directory, with PATH reduced to the venv and the system directories (no cargo, no
# rustc), run the offline demo, list the experiment catalogue (package data) and
# reproduce one catalogue entry with --quick.
#
#   tests/install/check_wheel.sh VENV [TRACES_DIR]
#
# TRACES_DIR holds the mahimahi/ trace set (`cellcc traces download`); default: $CELLCC_TRACES,
# else shared/traces beside the checkout. Without it the reproduce step is skipped and
# says so (the traces are GPL data and are not shipped in the wheel), or fails under
# CELLCC_REQUIRE_TRACES=1 (as in CI).
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 VENV [TRACES_DIR]" >&2
  exit 2
fi
venv=$(cd "$1" && pwd)
checkout=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
traces=${2:-${CELLCC_TRACES:-$checkout/../shared/traces}}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# A user's shell: the venv and the system, nothing from this machine's toolchains.
run() { env -i HOME="$work" LANG=C.UTF-8 PATH="$venv/bin:/usr/bin:/bin" "$@"; }
fail() { echo "check_wheel: $*" >&2; exit 1; }

if run sh -c 'command -v cargo || command -v rustc' >/dev/null; then
  fail "a Rust toolchain is on the reduced PATH; the check would prove nothing"
fi
run python -c 'import cellcc, pathlib, sys; p = pathlib.Path(cellcc.__file__); sys.exit(0 if "site-packages" in p.parts else f"cellcc imported from {p}, not the wheel")'

run cellcc demo --help >/dev/null
run cellcc demo --out demo --duration 2 >demo.log 2>&1 || { cat demo.log; fail "cellcc demo failed"; }
[ -s demo/index.html ] || fail "cellcc demo wrote no demo/index.html"
echo "check_wheel: cellcc demo wrote $(find demo -type f | wc -l) files"

run cellcc experiments list >list.txt 2>&1 || { cat list.txt; fail "cellcc experiments list failed"; }
grep -q c2tcp-ifip-table1 list.txt || fail "the catalogue does not list c2tcp-ifip-table1"
count=$(run python -c 'from cellcc import catalogue; print(len(catalogue.entries()))')
echo "check_wheel: the installed catalogue has $count entries"

if [ -d "$traces/mahimahi" ]; then
  traces=$(cd "$traces" && pwd)
  run env CELLCC_TRACES="$traces" cellcc reproduce c2tcp-ifip-table1 --quick --out rep \
    >reproduce.log 2>&1 || { cat reproduce.log; fail "cellcc reproduce failed"; }
  for file in rep/c2tcp-ifip-table1/table.csv rep/c2tcp-ifip-table1/index.html rep/index.html; do
    [ -s "$file" ] || fail "cellcc reproduce wrote no $file"
  done
  echo "check_wheel: cellcc reproduce c2tcp-ifip-table1 --quick: $(tail -n 1 reproduce.log)"
elif [ "${CELLCC_REQUIRE_TRACES:-}" = 1 ]; then
  fail "no traces at $traces/mahimahi, and CELLCC_REQUIRE_TRACES=1 requires them"
else
  echo "check_wheel: SKIPPED reproduce: no traces at $traces/mahimahi (cellcc traces download)"
fi
echo "check_wheel: ok"
