#!/usr/bin/env bash
# The GPU lane in one call: tools/gpu/paper-scale.sh OUT [--smoke] [--only ID ...] [--budget S] [--archive]
#
# Runs every run of tools/gpu/lane.yaml on one CUDA device (see tools/gpu/paper_scale.py) from this checkout, with no
# install step that needs a network: the package from src/ on PYTHONPATH, and the pure-Python (and manylinux) wheels
# the machine lacks from .whl/ (made here by `make gpu-wheels`, carried with the tree) installed into a scratch
# folder, only where PYTHON lacks them (PYTHON=.venv/bin/python here needs none).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
SITE="${STAGEWISE_LANE_SITE:-/tmp/stagewise-lane-site}"
if ! "$PYTHON" -c "import papermill, ipykernel, jupytext, myst_nb" 2>/dev/null; then
  compgen -G "$ROOT/.whl/*.whl" >/dev/null || { echo "paper-scale: $PYTHON lacks papermill and .whl/ holds no wheels (make gpu-wheels)" >&2; exit 2; }
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$ROOT"/.whl/*.whl
  export PYTHONPATH="$ROOT/src:$SITE${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
fi
# Preflight: what a chapter's kernel imports (the glue of myst-nb needs docutils, not Sphinx) must import here,
# before any run starts, so that a missing wheel costs seconds of a lent machine, not a run.
"$PYTHON" -c "import papermill, ipykernel, jupytext, nbclient; from myst_nb.ext.glue import glue; import stagewise.core.run.session" \
  || { echo "paper-scale: the environment cannot run a chapter (see the import error above; make gpu-wheels)" >&2; exit 2; }
# papermill starts the chapter's kernel by name (python3): ipykernel's own spec runs this same interpreter.
export JUPYTER_PLATFORM_DIRS=1 MPLBACKEND=Agg
exec "$PYTHON" "$ROOT/tools/gpu/paper_scale.py" "$@"
