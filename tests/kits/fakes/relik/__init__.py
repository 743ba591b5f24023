"""Stand-in for relik 1.0.7 (see tests/kits/fakes/README.md)."""

from relik.inference.annotator import Relik

__all__ = ["Relik"]
