"""relik.retriever.indexers.document (1.0.7)."""

from __future__ import annotations


class Document:
    def __init__(self, text: str, id: int | None = None, metadata: dict | None = None) -> None:
        self.text = text
        self.id = hash(text) if id is None else id  # relik's default: not stable
        self.metadata = metadata or {}

    def to_dict(self) -> dict:
        return {"text": self.text, "id": self.id, "metadata": self.metadata}


class DocumentStore:
    def __init__(self, documents: list[Document] | None = None) -> None:
        self.documents = list(documents or [])

    def __len__(self) -> int:
        return len(self.documents)

    def __iter__(self):
        return iter(self.documents)
