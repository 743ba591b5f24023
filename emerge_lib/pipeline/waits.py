"""Readiness of inputs still to come, checked off the event loop by the deferrable waits:
the mirror's history dump of a date (``dump_pending``) and whether the warehouse has
caught up with a snapshot's last window (``warehouse_pending``). Each returns None when
ready, else what is still missing, in words. ``covering_dump`` finds the dump a snapshot
run can ingest itself when the warehouse has not caught up (a backfill on a fresh
warehouse), or says that none is listed (the run then fails at once instead of waiting)."""

from __future__ import annotations

from datetime import datetime

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import Config
from emerge_lib.core.errors import EmergeError
from emerge_lib.core.schedule import SnapshotPlan


def dump_pending(cfg: Config, dump_date: str) -> str | None:
    """None when the history dumps of ``dump_date`` are done on the configured mirror for
    both wikis, else what is still running; a failed dump job raises."""
    from emerge_lib.dumps.mirror import Mirror

    waiting = []
    with Mirror(cfg.dumps.mirror) as mirror:
        for wiki in (cfg.dumps.wikidata.wiki, cfg.dumps.wikipedia.wiki):
            status = mirror.job_status(wiki, dump_date)
            if status == "failed":
                raise EmergeError(f"the {wiki} {dump_date} history dump failed on "
                                  f"{cfg.dumps.mirror}; choose another dump date")
            if status != "done":
                waiting.append(f"{wiki} {dump_date}: {status or 'not started'}")
    return "; ".join(waiting) or None


def warehouse_pending(catalog: Catalog, cfg: Config,
                      snapshot: SnapshotPlan | datetime | str) -> str | None:
    """None when the warehouse holds dumps of both wikis dated at or after the snapshot's
    last window end τ_n (the ingest has caught up with it), else what is missing."""
    plan = snapshot if isinstance(snapshot, SnapshotPlan) else cfg.plan(snapshot)
    missing = []
    for wiki in (cfg.dumps.wikidata.wiki, cfg.dumps.wikipedia.wiki):
        dates = [d for d in catalog.read_arrow("ingested_files", filters=[("wiki", "=", wiki)],
                                               columns=["dump_date"]).column(0).to_pylist()
                 if d] if catalog.exists("ingested_files") else []
        newest = max(dates, default=None)
        if newest is None or newest < f"{plan.horizon:%Y%m%d}":
            missing.append(f"{wiki}: newest ingested dump {newest or 'none'}, "
                           f"needs one from {plan.horizon:%Y%m%d} or later")
    return "; ".join(missing) or None


def covering_dump(cfg: Config, snapshot: SnapshotPlan | datetime | str
                  ) -> tuple[str | None, str]:
    """The earliest dump date listed for both wikis that reaches the snapshot's last
    window end τ_n (a history dump holds every earlier revision): the configured
    ``dumps.*.dates`` when both wikis name some, else the mirror's listing. Returns
    (date, what was looked at); the date is None when no listed dump reaches τ_n."""
    from emerge_lib.dumps.mirror import Mirror

    plan = snapshot if isinstance(snapshot, SnapshotPlan) else cfg.plan(snapshot)
    needed = f"{plan.horizon:%Y%m%d}"
    wikis = (cfg.dumps.wikidata, cfg.dumps.wikipedia)
    if all(w.dates for w in wikis):
        listed = [set(w.dates) for w in wikis]
        where = "the configured dump dates"
    else:
        with Mirror(cfg.dumps.mirror) as mirror:
            listed = [set(mirror.dates(w.wiki)) for w in wikis]
        where = f"the dumps {cfg.dumps.mirror} lists"
    common = sorted(listed[0] & listed[1])
    reaching = [d for d in common if d >= needed]
    seen = f"{where}: {', '.join(common[-4:]) if common else 'none'}"
    return (reaching[0] if reaching else None), (
        f"snapshot {plan.t:%Y-%m-%d} needs {wikis[0].wiki} and {wikis[1].wiki} dumps from "
        f"{needed} or later (its last window ends {plan.horizon:%Y-%m-%d}); {seen}")
