#!/usr/bin/env bash
# Print the path of a Python >= 3.12: first on PATH, then among pyenv's installed versions.
set -u
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
for name in python3.13 python3.12 python3 python; do
  path=$(command -v "$name" 2>/dev/null) || continue
  if ok "$path"; then echo "$path"; exit 0; fi
done
roots=()
command -v pyenv >/dev/null 2>&1 && roots+=("$(pyenv root)")
roots+=("${PYENV_ROOT:-$HOME/.pyenv}")
for root in "${roots[@]}"; do
  for path in $(ls -d "$root"/versions/3.*/bin/python 2>/dev/null | sort -rV); do
    if ok "$path"; then echo "$path"; exit 0; fi
  done
done
echo "error: no Python >= 3.12 found on PATH or in pyenv; install one (e.g. 'pyenv install 3.12')" >&2
exit 1
