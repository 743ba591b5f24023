"""The demo's sample world and what the demo reports: generated once under the output
folder (reruns reuse it), and the planted truth each run is compared with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emerge_lib.core.config import Config
from emerge_lib.core.stage import StageResult
from emerge_lib.sample import SampleSpec, generate_world

if TYPE_CHECKING:
    from emerge_lib.publish.download import DownloadReport
    from emerge_lib.publish.upload import PublishReport

DEMO_WORLD: dict[str, Any] = {"items": 600, "articles": 200, "revisions": 4}
DEMO_BUCKET = "emerge"
DEMO_RELEASES = f"s3://{DEMO_BUCKET}/releases"


@dataclass
class DemoResult:
    cfg: Config
    world: Path
    release: Path
    results: list[StageResult] = field(default_factory=list)
    built: int = 0
    planted: int = 0
    missing: int = 0
    unexpected: int = 0
    seconds: float = 0.0
    published: PublishReport | None = None  # when the local S3 server ran
    downloaded: DownloadReport | None = None  # of fetching it back
    card: list[dict[str, Any]] = field(default_factory=list)  # the card's table rows

    @property
    def ok(self) -> bool:
        return self.missing == 0 and self.unexpected == 0

    def compare(self, got: set[Any], want: set[Any]) -> None:
        """Record the built instances against the planted ones."""
        self.built, self.planted = len(got), len(want)
        self.missing, self.unexpected = len(want - got), len(got - want)


def world_for(out: str | Path, seed: int = 1, on_generate: Callable[[Path], None] | None = None
              ) -> Path:
    """The demo's sample world under ``out`` (generated once; reruns reuse it)."""
    world = Path(out).resolve() / "world"
    if not (world / "config.yaml").exists():
        if on_generate:
            on_generate(world)
        generate_world(world, SampleSpec(seed=seed, **DEMO_WORLD))
    return world
