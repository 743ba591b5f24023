"""relik.retriever.indexers.inmemory (1.0.7): an index is its documents and their
embeddings (here a marker of the encoder that embedded them)."""

from __future__ import annotations

import json
from pathlib import Path

from relik.retriever.indexers.document import Document, DocumentStore


class InMemoryDocumentIndex:
    def __init__(self, documents: DocumentStore | list[Document] | None = None,
                 metadata_fields: list[str] | None = None, separator: str | None = None,
                 device: str = "cpu", precision: int | str | None = None, **kwargs) -> None:
        self.documents = documents if isinstance(documents, DocumentStore) else DocumentStore(
            documents)
        self.metadata_fields = metadata_fields or []
        self.separator = separator
        self.device = device
        self.embeddings: str | None = None

    def save_pretrained(self, output_dir: str) -> None:
        if self.embeddings is None:
            raise ValueError("the index has no embeddings: call the retriever's index() first")
        out = Path(output_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.yaml").write_text(json.dumps({
            "metadata_fields": self.metadata_fields, "separator": self.separator}))
        with (out / "documents.jsonl").open("w") as fh:
            for d in self.documents:
                fh.write(json.dumps(d.to_dict(), ensure_ascii=False) + "\n")
        (out / "embeddings.pt").write_text(self.embeddings)

    @classmethod
    def from_pretrained(cls, path: str, **kwargs) -> InMemoryDocumentIndex:
        folder = Path(path)
        config = json.loads((folder / "config.yaml").read_text())
        docs = [Document(**json.loads(line))
                for line in (folder / "documents.jsonl").read_text().splitlines()]
        index = cls(DocumentStore(docs), config["metadata_fields"], config["separator"], **kwargs)
        index.embeddings = (folder / "embeddings.pt").read_text()
        return index
