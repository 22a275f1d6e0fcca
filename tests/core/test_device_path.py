"""The CUDA path, kept honest without a GPU: every tensor reaches NumPy through .cpu() (a static scan of
src/), and `-p device cuda` on a machine without CUDA is refused as bad input before any compute."""
import ast
from pathlib import Path

import pytest
import torch

from conftest import ROOT
from stagewise.core.cli import main as cli

SRC = ROOT / "src" / "stagewise"


def _numpy_without_cpu(path: Path, root: Path = ROOT) -> list[str]:
    """``x.numpy()`` calls whose receiver chain has no ``.cpu()`` (would raise on a CUDA tensor)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "numpy":
            chain, ok = node.func.value, False
            while isinstance(chain, (ast.Call, ast.Attribute, ast.Subscript)):
                if isinstance(chain, ast.Call) and isinstance(chain.func, ast.Attribute) and chain.func.attr == "cpu":
                    ok = True
                    break
                chain = chain.func if isinstance(chain, ast.Call) else chain.value
            if not ok:
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_every_tensor_reaches_numpy_through_cpu():
    offenders = [hit for path in sorted(SRC.rglob("*.py")) for hit in _numpy_without_cpu(path)]
    assert not offenders, "add .cpu() before .numpy(): " + ", ".join(offenders)


def test_the_scan_catches_a_bare_numpy_call(tmp_path):
    """Control: the scan flags x.numpy() and x[0].numpy(), not x.cpu().numpy() or x.detach().cpu()[0].numpy()."""
    code = tmp_path / "m.py"
    code.write_text("a = x.numpy()\nb = x[0].numpy()\nc = x.cpu().numpy()\nd = x.detach().cpu()[0].numpy()\n")
    hits = [h.rsplit(":", 1)[1] for h in _numpy_without_cpu(code, root=tmp_path)]
    assert hits == ["1", "2"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_a_gpu_is_refused_before_any_compute(capsys, tmp_path):
    code = cli.main(["run", "conservation-laws", "-p", "device", "cuda", "--dry-run", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "no usable CUDA device" in err and len(err.strip().splitlines()) == 1
