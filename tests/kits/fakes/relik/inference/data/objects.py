"""relik.inference.data.objects (1.0.7): the output types and TaskType."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple


class TaskType(Enum):
    SPAN = "span"
    TRIPLET = "triplet"
    BOTH = "both"


class Span(NamedTuple):
    start: int
    end: int
    label: str
    text: str


class Triplets(NamedTuple):
    subject: Span
    label: str
    object: Span
    confidence: float


@dataclass
class RelikOutput:
    text: str
    tokens: list[str]
    id: int
    spans: list[Span]
    triplets: list[Triplets]
    candidates: dict = field(default_factory=dict)
    windows: list | None = None
