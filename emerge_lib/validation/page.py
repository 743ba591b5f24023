"""The validation checks as one HTML page that opens offline: a release's
``validation/index.html`` and a warehouse snapshot's ``_validation/snapshot_D/index.html``.

Great Expectations' Data Docs loaded their styling, scripts and icons from CDNs (offline the
index listed no suite and every status icon was blank), took 2.1 MB of the demo's 3.0 MB
release, and showed a fixed run time. This page is rendered from the results alone
(``emerge_lib.formats.about.check_rows``): its styling inline, its status icons inline
SVG, no script, folded sections as ``<details>``. A warehouse snapshot's page shows when
its checks ran; a release's does not (nor do its card and manifest): when is the
warehouse's record (``validated_at`` of ``validation_results``, ``emerge validate``), and a
release holds nothing of the clock, so the same tables give the same bytes, from any
warehouse, at any time. The page states the release's version, so it is one of the files
the version's hash leaves out (``emerge_lib.formats.manifest.SELF_DESCRIBING``). Pure: no
engine.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import groupby
from pathlib import Path
from typing import Any

from emerge_lib.formats.about import STATUSES, check_rows
from emerge_lib.formats.layout import VALIDATION_PAGE, VALIDATION_RESULTS

#: each status's icon: a coloured disc and a white mark (inline SVG: no font, no request)
ICON_COLOURS = {"passed": "#1e8e3e", "failed": "#d93025", "warning": "#f29900",
                "could not run": "#5f6368"}
_MARKS = {"passed": '<path d="M4.5 8.5l2.5 2.5 4.5-5" fill="none" stroke="#fff" '
                    'stroke-width="2"/>',
          "failed": '<path d="M5 5l6 6M11 5l-6 6" stroke="#fff" stroke-width="2"/>',
          "warning": '<path d="M8 3.5v6" stroke="#fff" stroke-width="2"/>'
                     '<circle cx="8" cy="12" r="1.2" fill="#fff"/>',
          "could not run": '<path d="M6 6a2 2 0 1 1 2 2v1.5" fill="none" stroke="#fff" '
                           'stroke-width="1.6"/><circle cx="8" cy="12" r="1" fill="#fff"/>'}
OBSERVED_CHARS = 240  # an observed value is cut here (results.json has it whole)

STYLE = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#202124}
table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f1f3f4}td.n{text-align:right}
.icon{width:16px;height:16px;vertical-align:-3px}.verdict{font-size:120%;padding:8px 12px;
border-radius:4px}.ok{background:#e6f4ea}.bad{background:#fce8e6}summary{cursor:pointer;
margin:.3em 0}code,.obs{font-family:monospace;font-size:90%}.obs{color:#5f6368;
word-break:break-all}"""


def icon(status: str) -> str:
    """The status's icon, an inline reference to its symbol (defined once per page)."""
    slug = status.replace(" ", "-")
    return (f'<svg class="icon {slug}" role="img" aria-label="{status}"><title>{status}'
            f'</title><use href="#{slug}"/></svg>')


def _symbols() -> str:
    return ('<svg width="0" height="0" style="position:absolute" aria-hidden="true">'
            + "".join(f'<symbol id="{s.replace(" ", "-")}" viewBox="0 0 16 16"><circle cx="8" '
                      f'cy="8" r="8" fill="{ICON_COLOURS[s]}"/>{_MARKS[s]}</symbol>'
                      for s in STATUSES) + "</svg>")


def worst(statuses: Sequence[str]) -> str:
    """The status a group of checks shows: its worst (failed before could not run before
    warning before passed)."""
    return min(statuses, key=STATUSES.index) if statuses else "passed"


def _observed(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str,
                                                           ensure_ascii=False, sort_keys=True)
    return text if len(text) <= OBSERVED_CHARS else text[:OBSERVED_CHARS] + " …"


def _check_table(rows: Sequence[Mapping[str, Any]], where: bool) -> str:
    head = ["", *(["snapshot", "part", "suite"] if where else []), "check", "unexpected",
            "observed"]
    out = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for r in rows:
        cells = [icon(r["status"])]
        if where:
            cells += [html.escape(r["snapshot"][:10] or "–"), html.escape(r["part"]),
                      html.escape(r["suite"])]
        unexpected = "" if r["unexpected"] is None else f"{r['unexpected']:,}"
        cells += [html.escape(r["check"]), f'<span class="n">{unexpected}</span>',
                  f'<span class="obs">{html.escape(_observed(r["observed"]))}</span>']
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return "".join(out) + "</table>"


def _where(row: Mapping[str, Any]) -> tuple[str, str, str]:
    return str(row["snapshot"]), str(row["part"]), str(row["suite"])


def _group(rows: Sequence[Mapping[str, Any]]
           ) -> list[tuple[tuple[str, str, str], list[Mapping[str, Any]]]]:
    """Consecutive rows of one suite (snapshot, part, suite) together, in order."""
    return [(k, list(g)) for k, g in groupby(rows, key=_where)]


def render_page(*, title: str, verdict: str, ok: bool, rows: Sequence[Mapping[str, Any]],
                run_times: Mapping[str, str] | None = None, note: str = "") -> str:
    """The page (see the module docstring): the verdict, the run time of each snapshot's
    checks (``run_times``: snapshot → ISO instant; None: not shown, as in a release), a
    table of the suites, the checks that did not pass, then every check, by snapshot,
    part and suite, folded."""
    groups = _group(rows)
    counts = Counter(r["status"] for r in rows)
    summary = ", ".join(f"{counts[s]:,} {s}" for s in reversed(STATUSES) if counts[s])
    times = None if run_times is None else "; ".join(
        f"{html.escape(snap[:10])}: {html.escape(at)}"
        for snap, at in sorted(run_times.items())) or "not recorded"
    suites = ["<table><tr><th></th><th>snapshot</th><th>part</th><th>suite</th><th>checks</th>"
              "<th>passed</th><th>failed</th><th>warnings</th></tr>"]
    for (snap, part, suite), members in groups:
        c = Counter(r["status"] for r in members)
        anchor = f"{snap[:10]}-{part}-{suite}".replace(" ", "-")
        suites.append(
            f"<tr><td>{icon(worst([r['status'] for r in members]))}</td>"
            f"<td>{html.escape(snap[:10] or '–')}</td><td>{html.escape(part)}</td>"
            f'<td><a href="#{html.escape(anchor)}">{html.escape(suite)}</a></td>'
            f'<td class="n">{len(members)}</td><td class="n">{c["passed"]}</td>'
            f'<td class="n">{c["failed"] + c["could not run"]}</td>'
            f'<td class="n">{c["warning"]}</td></tr>')
    suites.append("</table>")
    not_passed = [r for r in rows if r["status"] != "passed"]
    body = [f"<h1>{html.escape(title)}</h1>",
            f'<p class="verdict {"ok" if ok else "bad"}">{icon("passed" if ok else "failed")} '
            f"{html.escape(verdict)}</p>",
            (f"<p>Run time (the tables' checks): {times}. {html.escape(note)}</p>"
             if times is not None else f"<p>{html.escape(note)}</p>"),
            f"<p>{len(rows):,} checks: {summary or 'none'}.</p>",
            "<h2>Suites</h2>", "".join(suites),
            "<h2>Checks that did not pass</h2>",
            _check_table(not_passed, where=True) if not_passed else "<p>None.</p>",
            "<h2>Every check</h2>"]
    for snap, in_snapshot in groupby(groups, key=lambda g: g[0][0]):
        body.append(f'<h3 id="snapshot-{html.escape(snap[:10])}">'
                    f"{'Snapshot ' + html.escape(snap[:10]) if snap else 'Human annotation'}"
                    "</h3>")
        for (_, part, suite), members in in_snapshot:
            status = worst([r["status"] for r in members])
            anchor = f"{snap[:10]}-{part}-{suite}".replace(" ", "-")
            body.append(
                f'<details id="{html.escape(anchor)}"{" open" if status != "passed" else ""}>'
                f"<summary>{icon(status)} {html.escape(part)}: <b>{html.escape(suite)}</b> "
                f"({len(members)} check{'' if len(members) == 1 else 's'}, {status})</summary>"
                f"{_check_table(members, where=False)}</details>")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n<body>"
            f"{_symbols()}\n" + "\n".join(body) + "\n</body></html>\n")


def write_release_page(out: Path, verdict: Mapping[str, Any], version: str, line: str) -> str:
    """``validation/index.html`` of the release in ``out`` from its ``results.json`` and
    the manifest's ``verdict`` (``line``: the card's sentence on it); returns its path."""
    results = json.loads((out / VALIDATION_RESULTS).read_text(encoding="utf-8"))
    page = render_page(
        title=f"EMERGE release {version}: validation", verdict=line,
        ok=bool(verdict.get("success")), rows=check_rows(results),
        note="The release files' suites ran on the lines as written; every observed value "
             f"is whole in {VALIDATION_RESULTS}.")
    path = out / VALIDATION_PAGE
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return VALIDATION_PAGE
