"""Scoring predictions on EMERGE: recall and completeness per operation and snapshot
(the paper's Appendix A, Tables 3 and 4), on our releases and the authors' files, and the
paper's baselines (``adapters``). See docs/evaluation.md.

- :mod:`.data`: gold instances (EMERGE JSONL) and predictions (our JSONL format and the
  authors' in-record blocks);
- :mod:`.metrics`: per (model, instance, operation) scores and micro-averaged summaries;
- :mod:`.embed`: triple texts and their embeddings, each distinct text once, cached;
- :mod:`.models`: the embedding models, offline from PyPI packages;
- :mod:`.report`: summary.json, the tables, the plot, per-instance scores;
- :mod:`.run`: ``evaluate`` (what ``emerge evaluate`` calls).

Nothing here imports Spark, Sail, Delta or Airflow (the emerge-tkgu distribution's
``eval`` extra is enough); torch and sentence-transformers are imported only when
completeness is computed.
"""
