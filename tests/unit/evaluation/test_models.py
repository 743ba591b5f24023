"""The scorer's embedding models (emerge_lib/evaluation/models.py): the packaged mpnet
offline, damaged parts refused, an unknown model named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo import REPO

from emerge_lib.core.errors import InputError


def test_completeness_with_the_packaged_mpnet_model_offline(tmp_path: Path) -> None:
    """The paper's model from the installed PyPI parts, unpacked and checked, loaded with
    the hub switched off, in a process of its own (one torch thread)."""
    script = """
import os, sys
os.environ["HF_HUB_OFFLINE"] = "1"
from emerge_lib.evaluation.models import ensure, MPNET_SHA256, sha256_file
from emerge_lib.evaluation.embed import Embedder, triple_text
ref = ensure("all-mpnet-base-v2")
assert (ref.path / ".emerge-verified").read_text().strip() == MPNET_SHA256
e = Embedder(ref, cache_dir=sys.argv[1])
texts = [triple_text(t) for t in (["Ireland", "country", "Kill"], [" ireland ", "COUNTRY", "kill"],
         ["Kill", "located in", "Ireland"], ["snooker", "sport", "Irish Masters"])]
e.add(texts)
m = e.matrix
sims = [float(m[e.index(texts[0])] @ m[e.index(t)]) for t in texts]
print(sims)
assert sims[0] > 0.999 and sims[1] > 0.999 and 0.5 < sims[2] < 0.99 and sims[3] < 0.5
assert e.encoded == 3
e.close()
e2 = Embedder(ref, cache_dir=sys.argv[1])
e2.add(texts)
assert e2.encoded == 0   # all from the disk cache
import torch
assert torch.get_num_threads() == 1   # one torch thread on these shared 2-core machines
"""
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "emb")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_damaged_model_parts_are_refused(tmp_path: Path, monkeypatch) -> None:
    import zipfile

    from emerge_lib.evaluation import models

    parts = []
    for i in range(1, 6):
        p = tmp_path / f"all-mpnet-base-v2.zip.00{i}"
        p.write_bytes(b"not a zip" * i)
        parts.append(p)
    monkeypatch.setattr(models, "_part_file", lambda name, i: parts[i - 1])
    with pytest.raises(InputError, match="do not join into a zip"):
        models.ensure("all-mpnet-base-v2", tmp_path / "cache")
    whole = tmp_path / "whole.zip"
    with zipfile.ZipFile(whole, "w") as zf:
        zf.writestr("all-mpnet-base-v2/model.safetensors", b"wrong weights")
        zf.writestr("all-mpnet-base-v2/modules.json", "[]")
    data = whole.read_bytes()
    cut = [data[i * len(data) // 5:(i + 1) * len(data) // 5] for i in range(5)]
    for p, chunk in zip(parts, cut, strict=True):
        p.write_bytes(chunk)
    with pytest.raises(InputError, match="sha256"):
        models.ensure("all-mpnet-base-v2", tmp_path / "cache")
    assert not (tmp_path / "cache" / "all-mpnet-base-v2").exists()
    assert [p.name for p in (tmp_path / "cache").iterdir()] == []  # no temporary left


def test_unknown_embedding_model_is_an_input_error() -> None:
    from emerge_lib.evaluation.models import ensure

    with pytest.raises(InputError, match="unknown embedding model"):
        ensure("bert-of-theseus")
