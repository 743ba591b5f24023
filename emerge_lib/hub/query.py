"""``emerge query``: SQL over a release's typed Parquet with DuckDB, for quick questions.

Views (each only when the release has its files):

- ``lines``: the corpus lines (``parquet/corpus/``), with ``snapshot`` and ``delta_end``
  (``delta_dates[1]``, ``delta_dates[2]``) in front;
- ``evaluation``: the evaluation set's lines, the same columns;
- ``triples``: one row per TKGU triple of a corpus line (``parquet/triples/``);
- ``operations``: one row per (triple, operation): ``operation`` in front of the triple;
- ``evaluation_triples``, ``evaluation_operations``: the same for the evaluation lines;
- ``train``, ``validation``, ``test``: the leak-free splits' lines (``parquet/splits/``;
  ``test`` holds the evaluation set's lines), the same columns as ``lines``;
- ``context``: a corpus line's k-hop KG context (``parquet/context/``);
  ``relation_priors``: triples per relation of each snapshot's KG;
- ``kg_triples``, ``entities``, ``relations``: the KG snapshots; ``instances``.

``SELECT operation, count(*) FROM operations GROUP BY ALL`` counts the corpus's
instances per operation; ``SELECT * FROM lines WHERE hash_id = '…'`` shows a passage.
The views read the manifest's files (an explicit list, not a glob of the folder), so a
stray file is never read. DuckDB runs single-threaded here when asked (``threads``).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from typing import Any

from emerge_lib.core.errors import EmergeError
from emerge_lib.formats.layout import (
    KG_SNAPSHOTS,
    PARQUET_CONTEXT,
    PARQUET_CORPUS,
    PARQUET_EVALUATION,
    PARQUET_SPLITS,
    PARQUET_TRIPLES,
    RELATION_PRIORS,
    SPLITS,
    table_parquet_path,
)
from emerge_lib.hub.release import OpenRelease

LINE_COLUMNS = "delta_dates[1] AS snapshot, delta_dates[2] AS delta_end, *"


class QueryError(EmergeError, ValueError):
    """The SQL did not run (DuckDB's message, on one line)."""


def connect(release: OpenRelease, threads: int | None = None) -> Any:
    """A DuckDB connection with the release's views (see the module docstring)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    if threads:
        con.execute(f"SET threads = {int(threads)}")

    def view(name: str, pattern: str, project: str | None = None) -> bool:
        files = [str(f) for f in release.files(pattern)]
        if not files:
            return False
        relation = con.read_parquet(files)
        (relation.project(project) if project else relation).create_view(name)
        return True

    view("lines", f"{PARQUET_CORPUS}/snapshot_*/delta_*.parquet", LINE_COLUMNS)
    has_evaluation = view("evaluation", f"{PARQUET_EVALUATION}/snapshot_*/delta_*.parquet",
                          LINE_COLUMNS)
    if view("triples", f"{PARQUET_TRIPLES}/snapshot_*/delta_*.parquet"):
        con.execute("CREATE VIEW operations AS "
                    "SELECT unnest(tkgu_operations) AS operation, * FROM triples")
        if has_evaluation:
            con.execute("CREATE VIEW evaluation_triples AS SELECT * FROM triples "
                        "WHERE hash_id IN (SELECT hash_id FROM evaluation)")
            con.execute("CREATE VIEW evaluation_operations AS SELECT unnest(tkgu_operations) "
                        "AS operation, * FROM evaluation_triples")
    for split in SPLITS:
        view(split, f"{PARQUET_SPLITS}/snapshot_*/{split}.parquet", LINE_COLUMNS)
    view("context", f"{PARQUET_CONTEXT}/snapshot_*/delta_*.parquet")
    view(RELATION_PRIORS, f"{PARQUET_CONTEXT}/snapshot_*/{RELATION_PRIORS}.parquet")
    for table in ("kg_triples", "entities", "relations"):
        view(table, f"{KG_SNAPSHOTS}/snapshot_*/{table}.parquet")
    view("instances", table_parquet_path("instances"))
    return con


def run(release: OpenRelease, sql: str, threads: int | None = None
        ) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run ``sql`` over the release's views: (column names, rows)."""
    import duckdb

    con = connect(release, threads)
    try:
        result = con.sql(sql)
        if result is None:  # a statement without rows
            return [], []
        return list(result.columns), result.fetchall()
    except duckdb.Error as exc:
        raise QueryError(" ".join(str(exc).split())) from None
    finally:
        con.close()


#: C0 controls but tab and newline, DEL, and the C1 controls: what a terminal acts on (ESC
#: and CSI clear the screen, OSC sets the window title or, on some, writes the clipboard)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: in a table cell a tab or a newline breaks the layout too
_CELL_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return {9: "\\t", 10: "\\n", 13: "\\r"}.get(code, f"\\x{code:02x}")


def terminal_safe(text: str, cell: bool = False) -> str:
    """``text`` with the control characters a terminal acts on written as escapes
    (``\\x1b``): a release's cell text must not drive the reader's terminal."""
    return (_CELL_CONTROLS if cell else _CONTROLS).sub(_escape, text)


def _text(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _json_line(row: dict[str, Any]) -> str:
    """One JSON line; C1 controls and DEL (which JSON may hold raw) as \\u escapes."""
    text = json.dumps(row, ensure_ascii=False, default=str)
    return re.sub(r"[\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", text)


def render(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str = "table",
           width: int = 60) -> str:
    """The result as a fixed-width table (cells cut at ``width`` characters), CSV, or JSON
    lines, with no control character a terminal would act on (``terminal_safe``)."""
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow([terminal_safe(c) for c in columns])
        writer.writerows([[terminal_safe(_text(v)) for v in row] for row in rows])
        return buf.getvalue()
    if fmt == "json":
        return "".join(_json_line(dict(zip(columns, row, strict=True))) + "\n" for row in rows)
    cells = [[terminal_safe(c, cell=True) for c in columns]] + [
        [terminal_safe(_text(v), cell=True) for v in row] for row in rows]
    cells = [[c if len(c) <= width else c[: width - 1] + "…" for c in row] for row in cells]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + f"\n({len(rows)} row{'s' if len(rows) != 1 else ''})\n"
