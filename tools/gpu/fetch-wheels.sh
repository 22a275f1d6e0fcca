#!/usr/bin/env bash
# make gpu-wheels: the wheels of tools/gpu/wheels.txt, at the versions of requirements.lock, for the GPU machine
# (CPython 3.12, manylinux x86_64), into .whl/ (git-ignored). Needs the package registry; the GPU machine does not.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
pins="$("$PYTHON" - "$ROOT" <<'PY'
import re, sys, pathlib
root = pathlib.Path(sys.argv[1])
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
lock = {}
for line in (root / "requirements.lock").read_text().splitlines():
    if "==" in line and not line.startswith("#"):
        name, version = line.split("==", 1)
        lock[norm(name)] = version.strip()
wanted = [l.strip() for l in (root / "tools/gpu/wheels.txt").read_text().splitlines() if l.strip() and not l.startswith("#")]
missing = [w for w in wanted if norm(w) not in lock]
if missing:
    sys.exit(f"gpu-wheels: not in requirements.lock: {', '.join(missing)}")
print(" ".join(f"{w}=={lock[norm(w)]}" for w in wanted))
PY
)"
platforms=""
for p in manylinux_2_34_x86_64 manylinux_2_31_x86_64 manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_26_x86_64 \
         manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_5_x86_64 manylinux1_x86_64 any; do
  platforms="$platforms --platform $p"
done
mkdir -p "$ROOT/.whl"
# shellcheck disable=SC2086
"$PYTHON" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp $platforms -d "$ROOT/.whl" $pins
echo "gpu-wheels: $(ls "$ROOT"/.whl/*.whl | wc -l) wheels in .whl/ ($(du -sh "$ROOT/.whl" | cut -f1))"
