"""EMNIST ByClass handwritten characters (62 classes: ``0-9``, ``A-Z``, ``a-z``).

Source: ``matlab.zip`` from NIST (``text_recognizer/data/metadata/emnist.toml``, sha256-checked), which holds
``matlab/emnist-byclass.mat``. That MATLAB struct is read with ``scipy.io.loadmat``::

    dataset.train.images  (N, 784) uint8, each row a 28x28 image in column-major (MATLAB) order
    dataset.train.labels  (N, 1)   class index
    dataset.test.{images, labels}
    dataset.mapping       (62, 2)  class index -> ASCII code

Processed once into ``<cache>/emnist/byclass.npz`` (``train_images``/``test_images`` ``(N, 28, 28)``
uint8 row-major, upright, **ink high** as in the source; ``*_labels`` int64; ``mapping`` the 62
characters as a string). ``EMNIST.image(i)`` gives the usual project convention instead: a PIL image
with dark ink on light paper.
"""

from __future__ import annotations

import io
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np
from PIL import Image

from text_recognizer.data.download import cache_dir, fetch, load_metadata, metadata_path

__all__ = ["EMNIST", "load_emnist", "prepare_emnist", "mapping_from_mat", "MAT_NAME"]

MAT_NAME = "emnist-byclass.mat"
_PROCESSED = "byclass.npz"


def _field(struct, name: str):
    """``struct.name`` of a ``loadmat`` MATLAB struct (a (1, 1) record array)."""
    return struct[name][0, 0]


def mapping_from_mat(mapping: np.ndarray) -> str:
    """EMNIST's ``(n, 2)`` [class, ascii] table -> a string whose k-th character is class k."""
    table = np.asarray(mapping, dtype=np.int64).reshape(-1, 2)
    order = np.argsort(table[:, 0])
    if not np.array_equal(table[order, 0], np.arange(len(table))):
        raise ValueError(f"EMNIST mapping classes must be 0..{len(table) - 1}, got {table[order, 0].tolist()}")
    return "".join(chr(int(c)) for c in table[order, 1])


def _split(struct, name: str) -> tuple[np.ndarray, np.ndarray]:
    part = _field(struct, name)
    images = np.asarray(_field(part, "images"), dtype=np.uint8)
    labels = np.asarray(_field(part, "labels"), dtype=np.int64).reshape(-1)
    if images.ndim != 2 or images.shape[1] != 28 * 28 or len(images) != len(labels):
        raise ValueError(f"EMNIST {name}: expected images (N, 784) and labels (N,), "
                         f"got {images.shape} and {labels.shape}")
    # MATLAB stores each 28x28 image column by column: reshape in Fortran order to get it upright.
    return images.reshape(-1, 28, 28, order="F").copy(), labels


def _read_mat(zip_path: Path) -> dict[str, np.ndarray]:
    from scipy.io import loadmat  # imported lazily: only processing needs scipy

    with zipfile.ZipFile(zip_path) as archive:
        names = [i.filename for i in archive.infolist() if PurePosixPath(i.filename).name == MAT_NAME]
        if not names:
            raise ValueError(f"{zip_path} has no {MAT_NAME}: is it EMNIST's matlab.zip?")
        data = archive.read(names[0])
    mat = loadmat(io.BytesIO(data))
    if "dataset" not in mat:
        keys = sorted(k for k in mat if not k.startswith("__"))
        raise ValueError(f"{MAT_NAME} has no 'dataset' struct (keys: {keys})")
    struct = mat["dataset"]
    train_images, train_labels = _split(struct, "train")
    test_images, test_labels = _split(struct, "test")
    mapping = mapping_from_mat(_field(struct, "mapping"))
    for labels in (train_labels, test_labels):
        if len(labels) and (labels.min() < 0 or labels.max() >= len(mapping)):
            raise ValueError(f"EMNIST labels outside the {len(mapping)} mapped classes")
    return {"train_images": train_images, "train_labels": train_labels, "test_images": test_images,
            "test_labels": test_labels, "mapping": np.asarray(mapping)}


def prepare_emnist(archive: str | Path | None = None, force: bool = False, progress: bool = True) -> Path:
    """Path of the processed ``byclass.npz`` (downloading and converting ``matlab.zip`` on the first call)."""
    out = cache_dir("emnist", _PROCESSED)
    if out.is_file() and not force:
        return out
    remote = load_metadata(metadata_path("emnist"))["matlab"]
    zip_path = fetch(remote, cache_dir("downloads", "emnist"), local=archive, progress=progress)
    if progress:
        print(f"processing {zip_path} (this reads a large .mat file once)", file=sys.stderr)
    arrays = _read_mat(zip_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(out)
    return out


@dataclass
class EMNIST:
    """EMNIST ByClass in memory: images ``(N, 28, 28)`` uint8 ink-high, labels, and the class mapping."""

    images: np.ndarray
    labels: np.ndarray
    mapping: str

    def __len__(self) -> int:
        return len(self.labels)

    def char(self, index: int) -> str:
        return self.mapping[int(self.labels[index])]

    def image(self, index: int) -> Image.Image:
        """Sample ``index`` as a 28x28 PIL image, dark ink on light paper."""
        return Image.fromarray(255 - self.images[index], mode="L")

    def __getitem__(self, index: int) -> tuple[Image.Image, str]:
        return self.image(index), self.char(index)

    def indices_by_char(self) -> dict[str, np.ndarray]:
        return {c: np.flatnonzero(self.labels == k) for k, c in enumerate(self.mapping)}


def load_emnist(split: str = "train", archive: str | Path | None = None) -> EMNIST:
    """The ``train`` or ``test`` split (prepared on first use)."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    with np.load(prepare_emnist(archive)) as data:
        return EMNIST(data[f"{split}_images"], data[f"{split}_labels"], str(data["mapping"]))
