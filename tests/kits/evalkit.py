"""What the scorer's tests share (tests/unit/evaluation): gold triples and lines, a fake
embedder and a run of the scorer on them, and where the authors' released sample is."""

from __future__ import annotations

import numpy as np
from repo import REPO

from emerge_lib.evaluation.data import (
    instance_from_record,
)
from emerge_lib.evaluation.metrics import Settings, model_predictions, score, summarize

#: the authors' released sample (../shared/realdata; tests that read it skip without it)
AUTHORS = REPO.parent / "shared" / "realdata" / "emerge" / "solved_disagreements.sample.jsonl"


def triple(s, p, o, labels, *ops, llm=(), human=()):
    return {"triple": [s, p, o], "triple_labels": list(labels), "tkgu_operations": list(ops),
            "llm_assessment": [{"llm_name": n, "llm_assessment": v, "llm_prompt_type": k,
                                "llm_prompt": ""} for n, k, v in llm],
            "human_assessment": [{"annotator_name": n, "prompt_type": k, "assessment": v}
                                 for n, k, v in human]}


def record(hid, triples, dates=("2024-01-01", "2024-01-08"), predictions=None):
    r = {"hash_id": hid, "passage": "text", "delta_dates": list(dates), "tkgu_triples": triples}
    if predictions is not None:
        r["predictions"] = predictions
    return instance_from_record(r, hid)


class FakeEmbedder:
    """Texts → fixed vectors: texts with the same key (before '#') are identical, others
    orthogonal; 'near:' texts have cosine 0.95 with their key, 'far:' 0.85."""

    def __init__(self) -> None:
        self.progress = None
        self._index: dict[str, int] = {}
        self._rows: list[np.ndarray] = []
        self.basis: dict[str, int] = {}

    def _vec(self, text: str) -> np.ndarray:
        kind, _, key = text.rpartition(":")
        base = self.basis.setdefault(key, len(self.basis))
        v = np.zeros(64, dtype=np.float32)
        cos = {"": 1.0, "near": 0.95, "far": 0.85}[kind]
        v[base] = cos
        v[63] = np.sqrt(1 - cos * cos)
        return v

    def add(self, texts) -> None:
        for t in texts:
            if t not in self._index:
                self._index[t] = len(self._rows)
                self._rows.append(self._vec(t))

    def index(self, text: str) -> int:
        return self._index[text]

    @property
    def matrix(self) -> np.ndarray:
        return np.vstack(self._rows)


def run(instances, preds, **kw):
    settings = Settings(**kw)
    scores = score(instances, model_predictions(instances, preds), settings, FakeEmbedder())
    return {(r["model"], r["operation"], r["snapshot"], r["metric"]): (r["value"], r["n_gold"])
            for r in summarize(scores, settings.metrics)}, scores
