"""Unit tests of stagewise.numerics.datasets (offline data for the transformer-rank chapter)."""
import hashlib
import pickle

import numpy as np
import pytest
import torch

from stagewise.numerics import datasets as D


def _write_cifar10(folder, per_batch=4):
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {b"data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
                 b"labels": list(rng.integers(0, 10, per_batch)), b"batch_label": name.encode()}
        with open(folder / name, "wb") as handle:
            pickle.dump(batch, handle)


def test_cifar10_loader_reads_pickles_in_parent_or_folder(tmp_path):
    _write_cifar10(tmp_path / "cifar-10-batches-py")
    for where in (tmp_path, tmp_path / "cifar-10-batches-py"):
        data = D.load_images("cifar10", str(where))
        assert data.x_train.shape == (20, 3, 32, 32) and data.x_test.shape == (4, 3, 32, 32)
        assert data.classes == 10 and data.y_train.dtype == torch.int64
        assert torch.allclose(data.x_train.mean((0, 2, 3)), torch.zeros(3), atol=1e-5)  # standardized
    raw = pickle.load(open(tmp_path / "cifar-10-batches-py" / "data_batch_1", "rb"))
    first = raw[b"data"][0].reshape(3, 32, 32).astype(np.float64) / 255
    assert np.corrcoef(first.ravel(), D.load_cifar("cifar10", tmp_path).x_train[0].numpy().ravel())[0, 1] > 0.99


def test_cifar100_loader_uses_fine_labels(tmp_path):
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    for name, n in (("train", 6), ("test", 2)):
        with open(folder / name, "wb") as handle:
            pickle.dump({b"data": np.zeros((n, 3072), np.uint8) + np.arange(n, dtype=np.uint8)[:, None],
                         b"fine_labels": [99] * n, b"coarse_labels": [1] * n}, handle)
    data = D.load_images("cifar100", str(tmp_path), limit=4)
    assert data.classes == 100 and len(data.x_train) == 4 and set(data.y_train.tolist()) == {99}


def test_missing_cifar_directory_names_it(tmp_path):
    with pytest.raises(D.DatasetError, match=f"parameter data_dir: cifar100 not found in '{tmp_path / 'nope'}'"):
        D.load_images("cifar100", str(tmp_path / "nope"))


def test_unknown_dataset():
    with pytest.raises(D.DatasetError, match="parameter dataset: unknown dataset 'mnist'; allowed: digits"):
        D.load_images("mnist")


def test_digits_split_and_standardization():
    data = D.load_digits(seed=0)
    assert data.x_train.shape[1:] == (1, 8, 8) and len(data.x_train) + len(data.x_test) == 1797
    assert abs(float(data.x_train.mean())) < 1e-5 and float(data.x_train.std()) == pytest.approx(1.0, abs=1e-3)
    assert torch.equal(D.load_digits(seed=0).y_test, data.y_test)


def test_shapes32_is_deterministic_and_balanced():
    a, b = D.make_shapes32(n=500, seed=3), D.make_shapes32(n=500, seed=3)
    assert torch.equal(a.x_train, b.x_train) and a.image_shape == (3, 32, 32)
    counts = torch.bincount(torch.cat([a.y_train, a.y_test]), minlength=10)
    assert counts.min() > 25
    assert not torch.equal(D.make_shapes32(n=500, seed=4).x_train, a.x_train)


def test_pydoc_text_checksum_and_codes():
    text = D.load_pydoc_text()
    decoded = "".join(text.alphabet[i] for i in text.codes.tolist())
    assert len(decoded) == text.characters > 100_000
    assert hashlib.sha256(decoded.encode("utf-8")).hexdigest() == text.sha256


def test_patchify_layout():
    img = torch.arange(2 * 3 * 4 * 4, dtype=torch.float32).reshape(2, 3, 4, 4)
    p = D.patchify(img, 2)
    assert p.shape == (2, 4, 12)
    # token 1 is the top-right 2x2 block; its features are channel-major
    assert torch.equal(p[0, 1], img[0, :, 0:2, 2:4].reshape(-1))
    with pytest.raises(D.DatasetError, match="parameter patch"):
        D.patchify(img, 3)
