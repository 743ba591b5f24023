"""Named configurations: ``emerge build -c paper`` reads the preset when no file of that
name exists.

``paper``: the authors' current release (klimzaporojets/emerge at 108455c; the file and line
of each value in docs/configuration.md "The paper preset"): seven annual snapshots
2019-01-01 … 2025-01-01 with five cumulative weekly windows, their stability spans, passage
limits and selection rules, their dedup thresholds and two-stage test draw (1,000 lines with
at least 400 per operation, then 100 with at least 40: 3,500 test lines), the judges their
corpus names (Llama-3.1-8B for additions, Llama-3.1-405B for deprecations) and Wikimedia's
dump mirror. Everything not named is the default, which is already theirs where they differ.
"""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    "paper": {
        "dumps": {"mirror": "https://dumps.wikimedia.org"},
        "snapshots": {"timestamps": [f"{year}-01-01T00:00:00Z" for year in range(2019, 2026)],
                      "windows": 5, "window_days": 7},
        "stability": {"kg_hours": 168, "passage_minutes": 30},
        "passages": {"windows": "cumulative", "min_tokens": 25, "max_tokens": 1000,
                     "max_markup_ratio": 0.5, "min_entities": 2},
        "deltas": {"emerging": "created_after_snapshot", "deprecate_window_additions": True,
                   "permanent_removal_years": 15, "creation_over_redirects": True},
        "align": {"between_mentions": True, "passage_after_removal": True,
                  "ee_kg_persistence_days": 182.5, "interesting": True,
                  "interesting_min_ratio": 0.2},
        "selection": {"rules": "authors", "dedup_passes": "authors", "guards": True,
                      "require_supported": True, "max_jaccard": 0.5,
                      "min_edit_distance": 0.2, "evaluation_pre_draw": [1000, 400],
                      "evaluation_per_delta": 100, "evaluation_min_per_op": 40,
                      "evaluation_ops": ["D", "EE-KG", "EE", "E"]},
        "curation": {"enabled": True, "additions": {"name": "Meta-Llama-3.1-8B"},
                     "deprecations": {"name": "Meta-Llama-3.1-405B"}},
    },
}
