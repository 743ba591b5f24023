"""Baseline adapters: passages (plus the snapshot's entity and relation dictionaries
from the release) → predictions in the scorer's JSONL format.

- :mod:`.edc`: EDC+ through any OpenAI-compatible endpoint with the paper's Appendix C
  prompt;
- :mod:`.relik`: ReLiK RE and ReLiK cIE through the relik package (its own environment:
  relik 1.0.7 needs Python < 3.12 and pins torch 2.3.1; see docs/evaluation.md).

Neither imports its heavy dependency at module level, so parsing and input building are
testable without them.
"""
