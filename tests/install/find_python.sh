#!/usr/bin/env bash
# Print the path of a runnable interpreter called NAME (python3.12), or fail quietly.
# Tries PATH first, then every pyenv version (a pyenv shim exists for every installed
# version but only runs the ones selected, so `command -v` alone is not enough).
#
#   tests/install/find_python.sh NAME
set -uo pipefail
name=$1
if path=$(command -v "$name" 2>/dev/null) && "$path" -c 'pass' 2>/dev/null; then
  "$path" -c 'import sys; print(sys.executable)'
  exit 0
fi
if command -v pyenv >/dev/null 2>&1; then
  all=$(pyenv versions --bare 2>/dev/null | tr '\n' ':')
  if path=$(PYENV_VERSION=${all%:} pyenv which "$name" 2>/dev/null) && "$path" -c 'pass' 2>/dev/null; then
    echo "$path"
    exit 0
  fi
fi
exit 1
