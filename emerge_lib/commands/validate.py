"""``emerge validate``: a release's validation verdict and the checks that did not pass,
in a table, from its manifest and ``validation/results.json`` (nothing is run again)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from emerge_lib.formats.manifest import Verification

OBSERVED = 60  # characters of an observed value in the table (results.json has it whole)


def register(sub: argparse._SubParsersAction) -> None:
    from emerge_lib.commands._common import examples

    p = sub.add_parser(
        "validate",
        help="a release's validation verdict and its failed checks, as a table",
        description=(
            "Print what a release says of its validation: the verdict (publishable or not, "
            "and why), each snapshot's table and release-file suites with when the tables "
            "were checked, croissant.json's check and the human annotation's, whether "
            "every file still matches manifest.json, and the checks that did not pass "
            "(--all: every check). Reads the manifest and validation/results.json; runs "
            "nothing again. Exits 1 when the release is not publishable. The same checks "
            "for a browser: validation/index.html. See docs/validation.md."
        ),
    )
    examples(p, "emerge validate --release demo/release",
             "emerge validate --release demo/release --all",
             "emerge validate --release demo/release --json > verdict.json")
    p.add_argument("--release", required=True, metavar="DIR", help="a release folder")
    p.add_argument("--all", action="store_true",
                   help="every check, not only those that did not pass")
    p.add_argument("--json", action="store_true",
                   help="the verdict, the file check and the checks' rows as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from emerge_lib.core.errors import InputError
    from emerge_lib.formats.about import check_rows
    from emerge_lib.formats.layout import VALIDATION_RESULTS
    from emerge_lib.formats.manifest import ManifestError, read_manifest, verify_release

    root = Path(args.release)
    try:
        manifest = read_manifest(root)
    except ManifestError as exc:
        raise InputError(f"validate: {exc}") from None
    verdict: dict[str, Any] = manifest.get("validation") or {}
    results_path = root / VALIDATION_RESULTS
    rows = check_rows(json.loads(results_path.read_text(encoding="utf-8"))) \
        if results_path.is_file() else []
    files = verify_release(root)
    publishable = bool(verdict.get("success")) and files.ok
    if args.json:
        print(json.dumps({"release": str(root), "version": manifest.get("version"),
                          "publishable": publishable, "validation": verdict,
                          "files": {"checked": files.checked, "missing": files.missing,
                                    "changed": files.mismatched},
                          "checks": rows if args.all else
                          [r for r in rows if r["status"] != "passed"]},
                         indent=1, default=str))
        return 0 if publishable else 1
    print(_summary(root, manifest, verdict, files, rows, publishable))
    shown = rows if args.all else [r for r in rows if r["status"] != "passed"]
    if shown:
        print()
        print(_table(["status", "snapshot", "part", "suite", "check", "unexpected", "observed"],
                     [[r["status"], r["snapshot"][:10] or "–", r["part"], r["suite"], r["check"],
                       "" if r["unexpected"] is None else f"{r['unexpected']:,}",
                       _cut(r["observed"])] for r in shown]))
    elif rows:
        print(f"\nevery one of the {len(rows):,} checks passed")
    return 0 if publishable else 1


def _summary(root: Path, manifest: dict[str, Any], verdict: dict[str, Any],
             files: Verification,
             rows: list[dict[str, Any]], publishable: bool) -> str:
    """The verdict's lines: publishable or why not, the snapshots, croissant.json, the
    human annotation, the files, the checks counted by status."""
    from collections import Counter

    if publishable:
        why = ""
    elif not verdict:
        why = "the manifest records no validation (a release built without the gate)"
    elif not files.ok:
        why = verdict.get("reason") or "its files no longer match the manifest"
    else:
        why = verdict.get("reason") or "validation did not pass"
    lines = [f"release {manifest.get('version')} ({root}): "
             + ("validated, publishable" if publishable else f"NOT publishable: {why}")]
    states = verdict.get("snapshots") or {}
    if states:
        lines.append(_table(["snapshot", "table suites", "release suites"],
                            [[snap[:10], str(st.get("tables")), str(st.get("release"))]
                             for snap, st in sorted(states.items())]))
        lines += [f"warning, {snap[:10]}: {w}" for snap, st in sorted(states.items())
                  for w in st.get("warnings") or ()]
    croissant = verdict.get("croissant")
    if isinstance(croissant, dict):
        lines.append("croissant.json: " + ("validates with mlcroissant" if croissant.get(
            "success") else "does not validate: " + "; ".join(croissant.get("problems", []))))
    annotation = verdict.get("human_annotation")
    if isinstance(annotation, dict):
        lines.append("human annotation: " + ("passed" if annotation.get("success")
                                             else str(annotation.get("reason"))))
    lines.append(f"files: {files.checked:,} match manifest.json" if files.ok else
                 f"files: {len(files.mismatched)} changed, {len(files.missing)} missing since "
                 f"manifest.json (e.g. {(files.mismatched + files.missing)[0]})")
    counts = Counter(r["status"] for r in rows)
    if rows:
        lines.append(f"checks: {len(rows):,}: " + ", ".join(f"{n:,} {s}" for s, n in sorted(
            counts.items())))
    return "\n".join(lines)


def _cut(value: Any) -> str:
    import json

    text = "" if value is None else value if isinstance(value, str) else json.dumps(
        value, default=str, ensure_ascii=False, sort_keys=True)
    text = " ".join(text.split())
    return text if len(text) <= OBSERVED else text[:OBSERVED] + " …"


def _table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in [head, *rows])
