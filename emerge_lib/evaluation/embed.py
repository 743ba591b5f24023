"""Embeddings of triple texts: each distinct string once, in length-sorted batches, with a
cache keyed by (model, string) in memory and, optionally, on disk (one SQLite file per
model under the cache folder), so a second run over the same texts encodes nothing.

Torch runs on one thread by default (``threads``): these are 2-core machines shared with
other work, and sentence-transformers on one thread is what the benchmark measures.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from emerge_lib.evaluation.models import ModelRef

log = logging.getLogger(__name__)


def triple_text(labels: Sequence[str]) -> str:
    """The text a triple is embedded as (the paper's Appendix A.2 and the authors' scorer:
    the labels lower-cased and joined by spaces); runs of whitespace count as one space,
    which changes no token of the WordPiece tokenizers and lets equal texts share a cache
    entry."""
    return " ".join(" ".join(labels).lower().split())


class Embedder:
    """Unit-length float32 vectors for texts, through a sentence-transformers model."""

    def __init__(self, model: ModelRef, *, cache_dir: str | Path | None = None,
                 batch_size: int = 128, threads: int | None = 1, device: str = "cpu",
                 progress: Callable[[int], object] | None = None) -> None:
        self.model = model
        self.batch_size = batch_size
        self.threads = threads
        self.device = device
        self.progress = progress
        self._st = None
        self._index: dict[str, int] = {}
        self._rows: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None
        self.encoded = 0  # strings encoded by the model (cache misses)
        self._db: sqlite3.Connection | None = None
        if cache_dir is not None:
            folder = Path(cache_dir)
            folder.mkdir(parents=True, exist_ok=True)
            safe = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in model.name)
            self._db = sqlite3.connect(folder / f"{safe}.sqlite")
            self._db.execute("CREATE TABLE IF NOT EXISTS emb (text TEXT PRIMARY KEY, vec BLOB)")

    def _load(self):
        if self._st is None:
            # importing torch and the model takes 10-20 s on a small machine: said before,
            # not a silent wait (emerge evaluate printed nothing meanwhile)
            log.info("loading the embedding model %s (torch, sentence-transformers: "
                     "10-20 s on a small machine)", self.model.name)
            started = time.monotonic()
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import torch

            if self.threads:
                torch.set_num_threads(self.threads)
            from sentence_transformers import SentenceTransformer

            self._st = SentenceTransformer(str(self.model.path), device=self.device,
                                           local_files_only=True)
            log.info("embedding model %s loaded in %.1fs", self.model.name,
                     time.monotonic() - started)
        return self._st

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The model's vectors for ``texts`` (no cache): length-sorted batches, normalized."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        st = self._load()
        vecs = st.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                         normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    def add(self, texts: Iterable[str]) -> None:
        """Make sure every text has a vector: cached ones are looked up, the rest encoded
        once each, in chunks (the progress callback gets the count done per chunk)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._index))
        if not missing:
            return
        self._matrix = None
        if self._db is not None:
            found = []
            for i in range(0, len(missing), 500):
                chunk = missing[i:i + 500]
                q = f"SELECT text, vec FROM emb WHERE text IN ({','.join('?' * len(chunk))})"
                found.extend(self._db.execute(q, chunk).fetchall())
            for text, blob in found:
                self._put(text, np.frombuffer(blob, dtype=np.float32))
            if self.progress and found:
                self.progress(len(found))
            missing = [t for t in missing if t not in self._index]
        # length-sorted chunks: similar lengths pad little; sentence-transformers sorts
        # inside a call too, the chunks only keep the progress bar moving
        missing.sort(key=len)
        step = self.batch_size * 8
        for i in range(0, len(missing), step):
            chunk = missing[i:i + step]
            vecs = self.encode(chunk)
            self.encoded += len(chunk)
            for text, vec in zip(chunk, vecs, strict=True):
                self._put(text, vec)
            if self._db is not None:
                self._db.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?)",
                                     [(t, v.tobytes()) for t, v in zip(chunk, vecs, strict=True)])
                self._db.commit()
            if self.progress:
                self.progress(len(chunk))

    def _put(self, text: str, vec: np.ndarray) -> None:
        self._index[text] = len(self._rows)
        self._rows.append(vec)

    def index(self, text: str) -> int:
        return self._index[text]

    @property
    def matrix(self) -> np.ndarray:
        if self._matrix is None or len(self._matrix) != len(self._rows):
            self._matrix = np.vstack(self._rows) if self._rows else np.zeros((0, 1), np.float32)
        return self._matrix

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
