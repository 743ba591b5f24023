"""Human annotation as its tests drive it: a curated, validated release of the tiny world
(planted LLM verdicts from the OpenAI-compatible stub), and annotators with planted
verdicts answering the tasks ``emerge annotate export`` wrote, in Label Studio's JSON
export format (what the system test gets from the real server)."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worlds import TINY

from emerge_lib.catalog import Catalog
from emerge_lib.core.stage import StageContext
from emerge_lib.curation import endpoint_overrides
from emerge_lib.curation.stub import StubServer
from emerge_lib.pipeline.runner import run_stage


@dataclass
class Curated:
    """A curated, validated release and what rebuilds it."""

    release: Path
    warehouse: Path
    config: Any

    def rebuild(self, spark) -> None:
        """The release stage again over the same tables, into the same folder."""
        ctx = StageContext(self.config, Catalog(self.warehouse, spark), release_dir=self.release)
        run_stage(ctx, "release")


def curated(worlds, spark, dest: Path) -> Curated:
    """The tiny world (one snapshot) curated by the stub (its 8B says NO to additions
    whose subject starts with "No", its 405B YES to every deprecation), validated and
    released into ``dest/release``: every file in the manifest, validation passed."""
    built = worlds.copy(worlds.built(TINY, release=False), dest)
    out = dest / "release"
    with StubServer() as stub:
        # no final judge: the release's gold is the configured judges' (select and the
        # final_judge stage do not run here; with a final judge configured the gate would
        # refuse kept lines it has not judged)
        cfg = built.config(curation=endpoint_overrides(stub.url, flush_seconds=0.2,
                                                       final_judge=None),
                           validation={"enabled": True})
        ctx = StageContext(cfg, Catalog(built.warehouse, spark), release_dir=out)
        for plan in cfg.plans():
            run_stage(ctx, "curate", plan)
            run_stage(ctx, "validate", plan)
        run_stage(ctx, "release")
    return Curated(out, built.warehouse, cfg)


def curated_release(worlds, spark, dest: Path) -> Path:
    return curated(worlds, spark, dest).release


def planted(task: dict[str, Any], annotator: str) -> bool:
    """An annotator's planted verdict: YES unless the subject's label starts with "No" (the
    stub's rule for additions), turned around on every fourth question (annotator_1) or
    every third (annotator_2) by a hash of the question: planted disagreements with the
    LLM and between the two."""
    data = task["data"]
    verdict = not data["triple_text"].startswith("(No")
    key = json.dumps([data["hash_id"], data["triple"], data["prompt_type"]])
    h = int(hashlib.sha256(key.encode()).hexdigest(), 16)
    if (annotator == "annotator_1" and h % 4 == 0) or (annotator == "annotator_2" and h % 3 == 0):
        verdict = not verdict
    return verdict


def answers(tasks: list[dict[str, Any]], users: dict[int, str], skip: int = 0
            ) -> list[dict[str, Any]]:
    """The tasks as Label Studio's JSON export returns them once the users (id → name)
    answered every task: one annotation per user and task; ``skip`` tasks of the last user
    skipped (``was_cancelled``)."""
    out = []
    for n, t in enumerate(tasks, 1):
        annotations = []
        for uid, name in users.items():
            cancelled = uid == max(users) and n <= skip
            annotations.append({
                "id": n * 10 + uid, "completed_by": uid, "was_cancelled": cancelled,
                "result": [] if cancelled else [
                    {"from_name": "verdict", "to_name": "passage", "type": "choices",
                     "value": {"choices": ["YES" if planted(t, name) else "NO"]}}]})
        out.append({"id": n, "data": t["data"], "annotations": annotations,
                    "predictions": []})
    random.Random(0).shuffle(out)  # Label Studio exports in its own order
    return out


def emerge(*args: str) -> subprocess.CompletedProcess:
    """The command as a user runs it (a process of its own)."""
    return subprocess.run([sys.executable, "-m", "emerge_lib.cli", *args], capture_output=True,
                          text=True, timeout=600)
