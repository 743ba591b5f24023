"""Every stage of emerge, in the order a build runs them: each declared in its own room's
``stage.py`` (what it reads and writes, the settings it uses, when it has nothing to do),
collected here. A test checks the catalog's producers and consumers against these
declarations, and that no stage function is called anywhere but through the runner."""

from __future__ import annotations

from emerge_lib.core.errors import EmergeError
from emerge_lib.core.stage import Stage
from emerge_lib.curation.stage import CURATE, FINAL_JUDGE
from emerge_lib.evaluation.stage import EVALUATE
from emerge_lib.ingest.stage import INGEST_WIKIDATA, INGEST_WIKIPEDIA, RECONCILE
from emerge_lib.publish.stage import PUBLISH
from emerge_lib.release.stage import RELEASE
from emerge_lib.transform.stage import ALIGN, DELTAS, PASSAGES, SELECT, SNAPSHOT, STABILITY
from emerge_lib.validation.stage import VALIDATE

STAGES: dict[str, Stage] = {s.name: s for s in (
    INGEST_WIKIDATA, INGEST_WIKIPEDIA, STABILITY, SNAPSHOT, DELTAS, PASSAGES, ALIGN, CURATE,
    SELECT, FINAL_JUDGE, VALIDATE, RELEASE, PUBLISH, EVALUATE, RECONCILE)}


def stage(name: str) -> Stage:
    try:
        return STAGES[name]
    except KeyError:
        raise EmergeError(f"no stage named {name!r}; stages: {', '.join(STAGES)}") from None
