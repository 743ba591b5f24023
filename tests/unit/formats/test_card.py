"""The corpus statistics as the authors count them ("rule C", their
scripts/stats/compute_405bv1_dataset_stats.py:50-69): a triple is LLM-supported by the
deprecation verdict when D is among its operations, else by the assertion verdict, and is
counted once, under its first operation; on our lines, the judges' ``asserted_operations``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from emerge_lib.core.ops import OP_LABELS
from emerge_lib.formats.card import SnapshotStats, collect, prepare, rule_c
from emerge_lib.formats.layout import CORPUS, EVALUATION_SET


def _their_lines(realdata: Path) -> list[dict]:
    path = realdata / "emerge" / "solved_disagreements.sample.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_rule_c_on_the_authors_lines(realdata: Path) -> None:
    lines = _their_lines(realdata)
    triples = [t for line in lines for t in line["tkgu_triples"]]
    for name in ("Meta-Llama-3.1-405B", "Meta-Llama-3.1-8B"):
        want = Counter()
        for t in triples:  # the rule read off their script, written out again here
            prompt = "triple_deprecation" if "d-triples" in t["tkgu_operations"] \
                else "triple_assertion"
            said = [a["llm_assessment"] for a in t["llm_assessment"]
                    if (a["llm_name"], a["llm_prompt_type"]) == (name, prompt)]
            if said and said[0] is True:
                want[t["tkgu_operations"][0]] += 1
        got = Counter(t["tkgu_operations"][0] for t in triples if rule_c(t, name))
        assert got == want and sum(got.values()) > 0
    # their default judge is named *_prompt_v1; their released files name it unsuffixed
    assert [rule_c(t) for t in triples] == [rule_c(t, "Meta-Llama-3.1-405B") for t in triples]
    # a two-operation triple with D is judged by deprecation and counted under its first op
    two = next(t for t in triples if t["tkgu_operations"] == ["ee-kg-triples", "d-triples"])
    deprecation = next(a["llm_assessment"] for a in two["llm_assessment"]
                       if (a["llm_name"], a["llm_prompt_type"]) ==
                       ("Meta-Llama-3.1-405B", "triple_deprecation"))
    assert rule_c(two, "Meta-Llama-3.1-405B") is deprecation


def test_our_lines_count_the_judges_asserted_operations() -> None:
    def triple(ops: list[str], asserted: list[str] | None, judged: bool = True) -> dict:
        return {"tkgu_operations": ops, "asserted_operations": asserted,
                "llm_assessment": [{"llm_name": "x"}] if judged else []}

    assert rule_c(triple(["e-triples"], ["e-triples"])) is True
    assert rule_c(triple(["x-triples"], [])) is False
    # D among the ops: the deprecation decides, even when the addition was asserted
    assert rule_c(triple(["d-triples", "e-triples"], ["e-triples"])) is False
    assert rule_c(triple(["ee-kg-triples", "d-triples"], ["d-triples"])) is True
    # never judged: unknown (the card says "uncurated"); judged but unparsed: not supported
    assert rule_c(triple(["e-triples"], None, judged=False)) is None
    assert rule_c(triple(["e-triples"], None)) is False


def test_collect_reads_the_authors_corpus_layout(realdata: Path, tmp_path: Path) -> None:
    """A folder of snapshot_*/ (their corpus download) reads as our corpus/ does."""
    lines = _their_lines(realdata)
    by_snapshot: dict[str, list[dict]] = {}
    for line in lines:
        by_snapshot.setdefault(line["delta_dates"][0], []).append(line)
    for snap, mine in by_snapshot.items():
        folder = tmp_path / f"snapshot_{snap}"
        folder.mkdir()
        (folder / f"delta_{mine[0]['delta_dates'][1]}.jsonl").write_text(
            "".join(json.dumps({**x, "passage_id": x["hash_id"]}) + "\n" for x in mine))
    stats = collect(tmp_path, sorted(by_snapshot), {}, "Meta-Llama-3.1-405B")
    assert sum(s.passages for s in stats) == len(lines)
    assert sum(sum(s.supported_ops.values()) for s in stats) == sum(
        1 for x in lines for t in x["tkgu_triples"] if rule_c(t, "Meta-Llama-3.1-405B"))
    assert all(s.curated for s in stats)


def test_the_stats_command_prints_table_2(realdata: Path, tmp_path: Path, capsys) -> None:
    from emerge_lib.cli import main

    lines = _their_lines(realdata)
    for line in lines:
        folder = tmp_path / "corpus" / f"snapshot_{line['delta_dates'][0]}"
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / f"delta_{line['delta_dates'][1]}.jsonl").open("a") as fh:
            fh.write(json.dumps({**line, "passage_id": line["hash_id"]}) + "\n")
    assert main(["stats", "--release", str(tmp_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sum(r["passages"] for r in rows) == len(lines)
    assert sum(sum(r["supported_instances"].values()) for r in rows) == sum(
        1 for x in lines for t in x["tkgu_triples"] if rule_c(t))
    assert main(["stats", "--release", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Supported Triples" in out
    assert all(f"{op} ({name})" in out for op, name in OP_LABELS.items())  # beside the ids
    assert main(["stats", "--release", str(tmp_path / "nowhere")]) == 1  # one line, no trace
    assert "is not a folder" in capsys.readouterr().err


def test_card_html_shows_the_metadata_and_the_first_lines_of_each_config(tmp_path: Path
                                                                         ) -> None:
    """What the Hub's page shows above a card: the YAML's licence, tasks, size and
    configurations, and a preview of each configuration's first lines; nothing loaded
    from elsewhere (it opens offline)."""
    import re

    from hubkit import A1, SNAPS, small_release

    from emerge_lib.formats.card import prepare, render
    from emerge_lib.formats.layout import CARD_HTML

    release = small_release(tmp_path / "release")
    snapshots = sorted(SNAPS)
    render(release, prepare(release, snapshots, {s: {} for s in snapshots}), "Validated.")
    page = (release / CARD_HTML).read_text()
    metadata = page[page.index('<section id="metadata">'):page.index("</section>")]
    for shown in ("cc-by-sa-4.0", "text-generation, graph-ml", "n&lt;1K",
                  "corpus (default): snapshot_2024_01_01 snapshot_2024_04_01 test",
                  "kg_triples: snapshot_2024_01_01"):
        assert shown in metadata, shown
    previews = dict(re.findall(r'data-config="([^"]+)"><table>(.*?)</table>', page))
    assert set(previews) == {"corpus", "evaluation_set", "triples", "kg_triples"}
    assert A1["hash_id"] in previews["corpus"] and "<th>passage</th>" in previews["corpus"]
    assert previews["corpus"].count("<tr>") == 1 + 2  # the header, the first file's lines
    assert not re.search(r'<(script|link)\b|src="(https?:)?//', page)  # nothing fetched


def test_figure_3_counts_the_supported_triples_under_their_first_operation(
        tmp_path: Path) -> None:
    """Their figure_tkgu_distribution_v2_405bv1.py: rule C's triples, each under its first
    operation, in the corpus and in the test split; uncurated, every triple."""
    def line(pid: str, triples: list[tuple[list[str], list[str] | None]]) -> str:
        return json.dumps({"passage_id": pid, "window": 1, "passage": "some words here",
                           "tkgu_triples": [
                               {"triple": ["Q1", f"P{i}", "Q2"], "tkgu_operations": ops,
                                "asserted_operations": asserted,
                                "llm_assessment": [{"llm_name": "x"}]}
                               for i, (ops, asserted) in enumerate(triples)]}) + "\n"

    snap = "2024-01-01T00:00:00Z"
    for root in (CORPUS, EVALUATION_SET):
        (tmp_path / root / "snapshot_2024-01-01").mkdir(parents=True)
    (tmp_path / CORPUS / "snapshot_2024-01-01" / "delta_2024-01-08.jsonl").write_text(
        line("a", [(["e-triples"], ["e-triples"]), (["x-triples"], []),
                   (["d-triples", "e-triples"], ["e-triples"]),  # D not supported: out
                   (["ee-kg-triples", "d-triples"], ["d-triples"])])  # counted as EE-KG
        + line("b", [(["d-triples"], ["d-triples"])]))
    (tmp_path / EVALUATION_SET / "snapshot_2024-01-01" / "delta_2024-01-08.jsonl").write_text(
        line("b", [(["d-triples"], ["d-triples"])]))
    prepared = prepare(tmp_path, [snap], {})
    (st,) = prepared.stats
    assert st.figure == Counter({"E": 1, "EE-KG": 1, "D": 1})
    assert st.figure_evaluation == Counter({"D": 1})
    assert "tkgu_distribution.png" in prepared.plots
    assert (tmp_path / "plots" / "tkgu_distribution.png").stat().st_size > 1000
    assert list(OP_LABELS.values()) == ["Exists", "Add", "Mint+Add", "Infer", "Deprecate"]


def test_a_snapshots_statistics_come_back_from_their_record() -> None:
    """What the carry sidecar keeps of a snapshot's statistics (JSON) gives them back,
    counters in their order (the plots draw them in it); a malformed record raises."""
    st = SnapshotStats("2024-01-01T00:00:00Z", entities=3, relations=1, triples=2,
                       passages=2, kg={"kg_triples": 5}, per_window={2: 1, 1: 3},
                       lengths=[7, 4], supported=1, uncurated=0)
    st.ops.update(["E", "X", "E"])
    st.figure.update(["D"])
    back = SnapshotStats.from_record(json.loads(json.dumps(st.record())))
    assert back == st
    assert list(back.ops) == ["E", "X"] and list(back.per_window) == [2, 1]
    for bad in ({**st.record(), "passages": "two"}, {**st.record(), "more": 1},
                {k: v for k, v in st.record().items() if k != "figure"}):
        with pytest.raises((KeyError, TypeError, ValueError)):
            SnapshotStats.from_record(bad)
