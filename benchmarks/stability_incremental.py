"""Stability after one day's change: the incremental run (only the touched keys) against a
full rebuild of the same warehouse, on planted statement timelines of growing size
(issue 44, docs/performance.md "The quarter from the daily increments").

Each size is a warehouse of ``--rows`` timeline rows (one interval per key: two thirds
open, a third closed after 1-20 days, over 64 s_buckets, loaded in one MERGE: a few files
per bucket, as a compacted table), then a day: ``--day`` new keys appended and ``--day``
open rows closed after 2 days (below 168 h: their stable rows go), spread over every
bucket as a real day's closures are. Then, on two copies of that warehouse, stability
incrementally (from the record of the run before the day) and whole
(``stability.rebuild: full``), in turn, ``--repeat`` times; each the same table (checked).
The day's MERGE rewrote every bucket file holding a closed row, so the incremental run
reads those files twice (before and after): the measure of what a day's closures cost it
when the timeline's files are large.

    .venv/bin/python benchmarks/stability_incremental.py [--rows 250000,1000000]
        [--day 1000] [--repeat 3] [--out /tmp/bench-stability]
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from _harness import cpu_seconds

from emerge_lib.catalog import Catalog
from emerge_lib.core.config import EngineSettings, load_config
from emerge_lib.core.engine import spark_session
from emerge_lib.core.stage import StageContext
from emerge_lib.pipeline.runner import run_stage

TIMELINE = """
SELECT concat('Q', CAST(id DIV 10 AS STRING)) AS s, concat('P', CAST(id % 10 AS STRING)) AS p,
       concat('Q', CAST((id * 7919) % {items} AS STRING)) AS o,
       concat('Q', CAST(id DIV 10 AS STRING), '$', CAST(id AS STRING)) AS statement_id,
       'normal' AS rank, concat('h', CAST(id AS STRING), '{tag}') AS version_hash,
       CAST(NULL AS ARRAY<STRUCT<pid: STRING, kind: STRING, time: STRING, precision: TINYINT,
                                   instant: TIMESTAMP, item: STRING>>) AS qualifiers,
       TIMESTAMP '2020-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % 1000 AS INT)) AS valid_from,
       CASE WHEN id % 3 = 0 THEN TIMESTAMP '2020-01-01 00:00:00'
            + make_interval(0, 0, 0, CAST(id % 1000 + 1 + id % 20 AS INT)) END AS valid_to,
       id AS rev_from, CAST(NULL AS BIGINT) AS rev_to, CAST((id DIV 10) % 64 AS INT) AS s_bucket
FROM range({first}, {last})
"""


def stability(catalog: Catalog, rebuild: str) -> tuple[float, float, str, float]:
    cfg = load_config(None, overrides={"warehouse": catalog.warehouse,
                                       "stability": {"rebuild": rebuild}})
    wall, cpu = time.monotonic(), cpu_seconds()
    result = run_stage(StageContext(cfg, catalog), "stability")
    return (time.monotonic() - wall, cpu_seconds() - cpu, result.note,
            result.metrics.get("keys touched", 0))


def one_size(spark, root: Path, rows: int, day: int, repeat: int) -> None:
    from pyspark.sql import functions as F

    base = root / f"rows-{rows}"
    shutil.rmtree(base, ignore_errors=True)
    catalog = Catalog(base, spark)
    tl = "statement_timeline"
    items = rows // 10
    catalog.merge(tl, spark.sql(TIMELINE.format(items=items, tag="", first=0, last=rows)))
    stability(catalog, "auto")  # the run before the day: a record to start from
    files = len(catalog._delta(tl).file_uris())
    # the day: new keys, and open rows (id % 3 != 0) closed after 2 days, every bucket
    catalog.merge(tl, spark.sql(TIMELINE.format(items=items, tag="", first=rows,
                                                last=rows + day)))
    step = max(1, rows // day)
    closed = spark.sql(TIMELINE.format(items=items, tag="", first=0, last=rows)
                       + f" WHERE id % {step} = 1 AND id % 3 <> 0").withColumn(
        "valid_to", F.expr("valid_from + INTERVAL 2 DAYS"))
    catalog.merge(tl, closed)
    after = catalog._delta(tl).file_uris()
    print(f"{rows:,} rows in {files} files; the day: {day} keys appended, "
          f"{closed.count()} closed; {len(after)} files after it", flush=True)
    figures: dict[str, list[tuple[float, float]]] = {"incremental": [], "full": []}
    tables = {}
    for i in range(repeat):
        for mode, setting in (("incremental", "auto"), ("full", "full")):
            copy = root / f"copy-{mode}"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(base, copy)
            wall, cpu, note, touched = stability(Catalog(copy, spark), setting)
            figures[mode].append((wall, cpu))
            print(f"  {mode:<11} run {i + 1}: {wall:5.1f} s wall, {cpu:5.1f} CPU-s "
                  f"({note}{f', {touched:,.0f} keys' if touched else ''})", flush=True)
            if i == 0:
                tables[mode] = sorted(map(repr, Catalog(copy, spark).read_arrow(
                    "stable_statements").to_pylist()))
    assert tables["incremental"] == tables["full"], "the incremental table differs"
    best = {m: min(f, key=lambda x: x[1]) for m, f in figures.items()}
    print(f"{rows:,} rows: incremental {best['incremental'][0]:.1f} s / "
          f"{best['incremental'][1]:.1f} CPU-s, full {best['full'][0]:.1f} s / "
          f"{best['full'][1]:.1f} CPU-s (best of {repeat}); the same "
          f"{len(tables['full']):,} stable rows", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="250000,1000000",
                    help="timeline rows per size, comma-separated")
    ap.add_argument("--day", type=int, default=1000, help="keys appended and closed")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench-stability"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with spark_session(EngineSettings(call_timeout_s=3600)) as spark:
        for rows in (int(r) for r in args.rows.split(",")):
            one_size(spark, args.out, rows, args.day, args.repeat)


if __name__ == "__main__":
    main()
