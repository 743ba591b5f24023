"""relik.retriever.pytorch_modules.model.GoldenRetriever (1.0.7): index() embeds the
document index with this retriever's encoder; retrieve() returns the top k per text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RetrievedSample:
    document: object
    score: float


class GoldenRetriever:
    def __init__(self, encoder: str, document_index=None) -> None:
        self.encoder = encoder
        self.document_index = document_index
        self.index_calls: list[dict] = []

    def index(self, batch_size: int = 32, num_workers: int = 4, max_length: int | None = None,
              collate_fn=None, force_reindex: bool = False, compute_on_cpu: bool = False,
              precision: str | int = 32) -> None:
        self.index_calls.append({"batch_size": batch_size, "force_reindex": force_reindex})
        self.document_index.embeddings = f"embedded by {self.encoder}"

    def retrieve(self, text: list[str], k: int | None = None, **kwargs):
        out = []
        for t in text:
            docs = sorted(self.document_index.documents,
                          key=lambda d: (d.text not in t, d.id))
            out.append([RetrievedSample(d, float(d.text in t)) for d in docs[:k]])
        return out
