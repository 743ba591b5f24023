"""The reader's configuration that bounds candidates: relik's triplet reader has
``additional_special_symbols`` relation markers and ``additional_special_symbols_types``
entity markers (``--NME--`` first); candidates past them are silently dropped."""

from __future__ import annotations

from types import SimpleNamespace


class RelikReaderForTripletExtraction:
    def __init__(self, relation_slots: int, entity_slots: int) -> None:
        config = SimpleNamespace(additional_special_symbols=relation_slots,
                                 additional_special_symbols_types=entity_slots + 1
                                 if entity_slots else 0)
        self.relik_reader_model = SimpleNamespace(config=config)
