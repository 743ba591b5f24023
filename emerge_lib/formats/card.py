"""The dataset card of a release: README.md in the Hugging Face Hub's card format, card.html,
and the plots.

README.md is a Hub dataset card: YAML front matter written by huggingface_hub's
``DatasetCardData`` (licence, language, task categories, size, source, annotation
creators, and ``configs``: every snapshot, the evaluation set, the triples and the KG
tables mapped to their Parquet files and splits, so ``datasets.load_dataset(RELEASE)``
and the Hub's viewer read typed files without inferring anything), then the sections of
the Hub's dataset-card template filled from the release. card.html is that Markdown
rendered (markdown-it-py) for a browser, under what the Hub's page shows above a card: the
YAML's metadata (licence, tasks, size, configurations) and a preview of the first lines
of each configuration, read from its Parquet files. Self-contained: no script, no
stylesheet or font from elsewhere, so it opens offline.

The figures are computed from the release files themselves (the JSONL lines and the KG
Parquet), so the card says what a downloader gets: per snapshot, the paper's Table 2
(entities, relation types and triples annotated in the passages, passages; the KG
snapshot's entities, relation types and triples), the operations, the evaluation set, and
three plots (operations per snapshot, instances per window, passage lengths). What the
release was made with (its version, the judges, the validation verdict) comes in as
:class:`CardFacts` from the writer. All Markdown is rendered in one place,
:func:`sections` (a section is one template variable), so a new section is one entry
there and one line of :data:`TEMPLATE`. Pure: no engine.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from emerge_lib.core.ops import OP_LABELS, op_label
from emerge_lib.formats import about
from emerge_lib.formats.format import OP_NAMES
from emerge_lib.formats.layout import (
    AGREEMENT,
    CARD,
    CARD_HTML,
    CORPUS,
    CROISSANT,
    EVALUATION_SET,
    HUMAN_ANNOTATION,
    KG_SNAPSHOTS,
    PARQUET_CONTEXT,
    PARQUET_CORPUS,
    PARQUET_EVALUATION,
    PARQUET_SPLITS,
    PARQUET_TRIPLES,
    PLOTS,
    RELATION_PRIORS,
    SPLITS,
    snapshot_dir_name,
    table_parquet_path,
)

OP_ORDER = ("X", "E", "EE", "EE-KG", "D")
NAME_TO_OP = {v: k for k, v in OP_NAMES.items()}
TABLE2 = ("Snapshot", "Entities", "Rel. Types", "Triples", "Supported Triples", "Passages",
          "KG Entities", "KG Rel. Types", "KG Triples")
#: the authors' corpus statistics judge (their scripts/stats/compute_405bv1_dataset_stats.py:39)
RULE_C_ASSESSOR = "Meta-Llama-3.1-405B_prompt_v1"


def rule_c(triple: dict[str, Any], assessor: str | None = None) -> bool | None:
    """Is a released triple LLM-supported, counted as the authors count their corpus
    ("rule C", compute_405bv1_dataset_stats.py:50-69): the deprecation verdict when D is
    among its operations, else the assertion verdict; a missing verdict is False. Our
    lines name the supported operations (``asserted_operations``, the configured judges);
    on files without them (the authors'), ``assessor``'s verdicts decide (default
    ``Meta-Llama-3.1-405B_prompt_v1``, else its unsuffixed name, which is how their
    released files name the same judge). None: the line was never curated."""
    ops = triple["tkgu_operations"]
    if assessor is None and "asserted_operations" in triple:
        asserted = triple["asserted_operations"]
        if asserted is None:
            return None if not triple.get("llm_assessment") else False
        return ("d-triples" in asserted) if "d-triples" in ops else ops[0] in asserted
    prompt = "triple_deprecation" if "d-triples" in ops else "triple_assertion"
    names = [assessor] if assessor else [RULE_C_ASSESSOR,
                                         RULE_C_ASSESSOR.removesuffix("_prompt_v1")]
    entries = triple.get("llm_assessment") or []
    for name in names:
        for e in entries:
            if e.get("llm_name") == name and e.get("llm_prompt_type") == prompt:
                return e.get("llm_assessment") is True
    return False if entries else None


@dataclass
class SnapshotStats:
    """A snapshot's statistics on the card: counts, not the sets counted (what a worker
    sends back, and what the release's carry sidecar keeps of a carried snapshot:
    :meth:`record`)."""

    snapshot: str
    entities: int = 0  # distinct, in its lines' triples
    relations: int = 0
    triples: int = 0
    passages: int = 0
    kg: dict[str, int] = field(default_factory=dict)  # kg_triples / entities / relations rows
    ops: Counter[str] = field(default_factory=Counter)  # op → instances (triples × ops)
    per_window: dict[int, int] = field(default_factory=dict)  # window → instances
    evaluation: Counter[str] = field(default_factory=Counter)  # op → evaluation instances
    lengths: list[int] = field(default_factory=list)  # tokens per passage (distinct)
    supported: int = 0  # distinct triples rule C supports in some line
    supported_ops: Counter[str] = field(default_factory=Counter)  # primary op → rule C triples
    uncurated: int = 0  # triples of lines never curated
    # Figure 3: triples by their first operation, rule C's (every triple when uncurated),
    # in the corpus and in the evaluation set
    figure: Counter[str] = field(default_factory=Counter)
    figure_evaluation: Counter[str] = field(default_factory=Counter)

    @property
    def curated(self) -> bool:
        return not self.uncurated

    def row(self) -> dict[str, Any]:
        return {"snapshot": self.snapshot, "entities": self.entities,
                "relation_types": self.relations, "triples": self.triples,
                "passages": self.passages, "kg_entities": self.kg.get("entities", 0),
                "kg_relation_types": self.kg.get("relations", 0),
                "kg_triples": self.kg.get("kg_triples", 0),
                "instances": dict(sorted(self.ops.items())),
                "evaluation_instances": dict(sorted(self.evaluation.items())),
                "supported_triples": self.supported if self.curated else None,
                "supported_instances": dict(sorted(self.supported_ops.items()))
                if self.curated else None}

    def record(self) -> dict[str, Any]:
        """As JSON values (:meth:`from_record` gives it back, counters in their order)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}  # asdict miscopies
        # a Counter (it counts the pairs it is given)
        for name, value in out.items():
            if isinstance(value, (dict, list)):
                out[name] = dict(value) if isinstance(value, dict) else list(value)
        out["per_window"] = [[k, v] for k, v in self.per_window.items()]
        return out

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SnapshotStats:
        """From :meth:`record`'s JSON; a malformed record raises ``TypeError``,
        ``ValueError`` or ``KeyError``."""
        names = {f.name for f in fields(cls)}
        if names != set(record):
            raise KeyError(f"fields {sorted(names ^ set(record))}")
        out = cls(str(record["snapshot"]), entities=int(record["entities"]),
                  relations=int(record["relations"]), triples=int(record["triples"]),
                  passages=int(record["passages"]), supported=int(record["supported"]),
                  uncurated=int(record["uncurated"]),
                  kg={str(k): int(n) for k, n in record["kg"].items()},
                  per_window={int(k): int(n) for k, n in record["per_window"]},
                  lengths=[int(n) for n in record["lengths"]])
        for name in ("ops", "evaluation", "supported_ops", "figure", "figure_evaluation"):
            setattr(out, name, Counter({str(k): int(n) for k, n in record[name].items()}))
        return out


def label(snapshot: str) -> str:
    """``2024-04-01 (2024.Q2)``: the date and, at a quarter start, the paper's name."""
    day = snapshot[:10]
    month = int(day[5:7])
    quarter = f" ({day[:4]}.Q{(month - 1) // 3 + 1})" if day[8:10] == "01" and month % 3 == 1 \
        else ""
    return day + quarter


def _count(value: int) -> str:
    return f"{value:,}"


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    if path.exists():
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)


def collect(out: Path, snapshots: Sequence[str], kg_rows: dict[str, dict[str, int]],
            assessor: str | None = None) -> list[SnapshotStats]:
    """Statistics of each snapshot, read from its release files (``corpus/``, or a folder
    of ``snapshot_*/`` as the authors' corpus download has it)."""
    stats = []
    corpus = out / CORPUS if (out / CORPUS).is_dir() else out
    for snap in snapshots:
        st = SnapshotStats(snap, kg=kg_rows.get(snap, {}))
        folder = snapshot_dir_name(snap)
        entities: set[str] = set()
        relations: set[str] = set()
        triples: set[tuple[str, str, str]] = set()
        supported: set[tuple[str, str, str]] = set()
        passages: set[str] = set()
        for path in sorted((corpus / folder).glob("delta_*.jsonl")):
            for rec in _lines(path):
                window = int(rec.get("window") or 0)
                if rec["passage_id"] not in passages:
                    st.lengths.append(len(rec["passage"].split()))
                passages.add(rec["passage_id"])
                for tr in rec["tkgu_triples"]:
                    s, p, o = tr["triple"]
                    entities.update((s, o))
                    relations.add(p)
                    triples.add((s, p, o))
                    ops = [NAME_TO_OP[n] for n in tr["tkgu_operations"]]
                    st.ops.update(ops)
                    st.per_window[window] = st.per_window.get(window, 0) + len(ops)
                    verdict = rule_c(tr, assessor)
                    if verdict is None:
                        st.uncurated += 1
                    elif verdict:
                        supported.add((s, p, o))
                        st.supported_ops[ops[0]] += 1
                    if verdict is not False:
                        st.figure[ops[0]] += 1
        st.entities, st.relations, st.triples = len(entities), len(relations), len(triples)
        st.supported, st.passages = len(supported), len(passages)
        for path in sorted((out / EVALUATION_SET / folder).glob("delta_*.jsonl")):
            for rec in _lines(path):
                for tr in rec["tkgu_triples"]:
                    st.evaluation.update(NAME_TO_OP[n] for n in tr["tkgu_operations"])
                    if rule_c(tr, assessor) is not False:
                        st.figure_evaluation[NAME_TO_OP[tr["tkgu_operations"][0]]] += 1
        stats.append(st)
    return stats


def _plots(stats: Sequence[SnapshotStats], folder: Path) -> list[str]:
    """Four PNG plots (the operations per snapshot, the instances per window, the paper's
    Figure 3, the passage lengths); returns their names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    folder.mkdir(parents=True, exist_ok=True)
    names = []
    labels = [label(s.snapshot) for s in stats]
    meta = {"Software": None}  # no version string: the same data gives the same bytes

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.savefig(folder / name, dpi=100, metadata=meta)
        plt.close(fig)
        names.append(name)

    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(OP_ORDER)
    for i, op in enumerate(OP_ORDER):
        ax.bar([x + i * width for x in range(len(stats))], [s.ops.get(op, 0) for s in stats],
               width, label=op_label(op))
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(stats))], labels, fontsize=8)
    ax.set_ylabel("instances")
    ax.set_title("TKGU operations per snapshot")
    ax.legend(fontsize=8)
    save(fig, "operations.png")

    fig, ax = plt.subplots(figsize=(8, 4))
    for st, name in zip(stats, labels, strict=True):
        windows = sorted(st.per_window)
        ax.plot(windows, [st.per_window[w] for w in windows], marker="o", label=name)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("delta (window k)")
    ax.set_ylabel("instances")
    ax.set_title("Instances per weekly delta (cumulative)")
    if stats:
        ax.legend(fontsize=8)
    save(fig, "instances_per_window.png")

    _figure3(plt, stats, save)

    fig, ax = plt.subplots(figsize=(8, 4))
    lengths = [n for st in stats for n in st.lengths]
    ax.hist(lengths or [0], bins=30, color="#4c72b0")
    ax.set_xlabel("tokens per passage")
    ax.set_ylabel("passages")
    ax.set_title("Passage length distribution")
    save(fig, "passage_lengths.png")
    return names


# seaborn's "colorblind" palette, their figure's colours (without seaborn)
FIGURE3_COLOURS = ("#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc")


def _figure3(plt: Any, stats: Sequence[SnapshotStats], save: Callable[[Any, str], None]
             ) -> None:
    """The paper's Figure 3 as their script draws it (figure_tkgu_distribution_v2_405bv1.py:
    two pies, the corpus and the test set, of the LLM-supported triples by rule C, each
    counted once under its first operation; every triple when the release is uncurated),
    summed over the release's snapshots."""
    curated = all(s.curated for s in stats)
    fig, axes = plt.subplots(1, 2, figsize=(10, 5.5))
    for ax, title, counts in (
            (axes[0], "Complete dataset", sum((s.figure for s in stats), Counter())),
            (axes[1], "Test set (evaluation_set)",
             sum((s.figure_evaluation for s in stats), Counter()))):
        values = [counts.get(op, 0) for op in OP_ORDER]
        if sum(values):
            _, texts, autotexts = ax.pie(
                values, labels=[f"{OP_LABELS[op]}\n{v:,}" for op, v in
                                zip(OP_ORDER, values, strict=True)],
                autopct="%1.1f%%", startangle=90, colors=FIGURE3_COLOURS,
                labeldistance=1.0, pctdistance=0.8, radius=0.85)
            for t in texts:
                t.set_multialignment("center")
            for t in autotexts:
                t.set_fontsize(9)
        else:
            ax.text(0.5, 0.5, "no triples", ha="center", va="center")
            ax.axis("off")
        ax.set_title(title + ("" if curated else " (uncurated: every triple)"))
    save(fig, "tkgu_distribution.png")


def table2_rows(stats: Sequence[SnapshotStats]) -> list[list[str]]:
    return [[label(s.snapshot), _count(s.entities), _count(s.relations), _count(s.triples),
             _count(s.supported) if s.curated else "uncurated", _count(s.passages),
             _count(s.kg.get("entities", 0)), _count(s.kg.get("relations", 0)),
             _count(s.kg.get("kg_triples", 0))] for s in stats]


def table2_text(rows: Sequence[dict[str, Any]]) -> str:
    """The card's table as fixed-width text (for a terminal), from ``SnapshotStats.row``."""
    def cell(r: dict[str, Any], k: str) -> str:
        return "uncurated" if r.get(k, 0) is None else _count(r.get(k, 0))

    cells = [list(TABLE2)] + [[label(r["snapshot"]), *(cell(r, k) for k in (
        "entities", "relation_types", "triples", "supported_triples", "passages",
        "kg_entities", "kg_relation_types", "kg_triples"))] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(TABLE2))]
    return "\n".join("  ".join(c.rjust(w) if i else c.ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True)))
                     for row in cells)


def _markdown_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


@dataclass
class CardFacts:
    """What the card states beyond the files' statistics, from the release writer: the
    manifest's version and provenance, the curation record (one entry per judge, model
    and prompt type: ``llm_name``, ``judge``, ``prompt_type``, ``served_model``,
    ``backend``, ``quantization``, ``template_sha256``, ``verdicts``), which judge made the
    gold (``gold``: ``rule``, ``llm_name``, ``route``, ``prompts``; None: not recorded or
    uncurated) and the manifest's validation verdict (``results``, ``docs``,
    per-snapshot states, ``croissant``)."""

    version: str | None = None
    code_version: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    settings_sha256: str | None = None
    dumps: Sequence[Mapping[str, Any]] = ()
    history: Sequence[Mapping[str, Any]] = ()  # the manifest's history (release.provenance)
    judges: Sequence[Mapping[str, Any]] = ()
    gold: Mapping[str, Any] | None = None
    validation: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Prepared:
    """The card's statistics and plots, made before the version is known (the plots are
    part of what the version names; the card's text, which states it, is not)."""

    snapshots: list[str]
    stats: list[SnapshotStats]
    plots: list[str]


def prepare(out: Path, snapshots: Sequence[str], kg_rows: dict[str, dict[str, int]]
            ) -> Prepared:
    """Statistics of the release files, and the plots written under ``plots/``."""
    return plotted(out, snapshots, collect(out, snapshots, kg_rows))


def plotted(out: Path, snapshots: Sequence[str], stats: list[SnapshotStats]) -> Prepared:
    """The plots of ``stats`` (:func:`collect`'s, in the order of ``snapshots``) written
    under ``plots/``: :func:`prepare` once the statistics are collected (a release's
    writer collects each snapshot's in a process of its own)."""
    return Prepared(list(snapshots), stats, _plots(stats, out / PLOTS))


# --- the Hub's configs ---------------------------------------------------------------------
def split_name(snapshot_folder: str) -> str:
    """``snapshot_2024-01-01`` → ``snapshot_2024_01_01`` (datasets refuses ``-`` in split
    names)."""
    return snapshot_folder.replace("-", "_")


def _rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def hub_configs(out: Path) -> list[dict[str, Any]]:
    """The card's ``configs``: each kind of Parquet file of the release as a config with a
    split per snapshot (the lines' config, the default, also has ``test``: the evaluation
    set), every file named. Files without rows are left out and a split without any is not
    listed (datasets 5.2 fails on a split with no data)."""
    def per_snapshot(pattern: str) -> dict[str, list[str]]:
        splits: dict[str, list[str]] = {}
        for path in sorted(out.glob(pattern)):
            if _rows(path):
                rel = path.relative_to(out).as_posix()
                splits.setdefault(split_name(path.parent.name), []).append(rel)
        return splits

    def files(splits: Mapping[str, list[str]]) -> list[dict[str, Any]]:
        return [{"split": name, "path": paths} for name, paths in splits.items()]

    configs: list[dict[str, Any]] = []
    corpus = per_snapshot(f"{PARQUET_CORPUS}/snapshot_*/delta_*.parquet")
    evaluation = per_snapshot(f"{PARQUET_EVALUATION}/snapshot_*/delta_*.parquet")
    test = [p for paths in evaluation.values() for p in paths]
    if corpus or test:
        configs.append({"config_name": "corpus", "default": True,
                        "data_files": files(corpus) + ([{"split": "test", "path": test}]
                                                       if test else [])})
    if evaluation:
        configs.append({"config_name": "evaluation_set", "data_files": files(evaluation)})
    leak_free = {split: [p.relative_to(out).as_posix() for p in
                         sorted(out.glob(f"{PARQUET_SPLITS}/snapshot_*/{split}.parquet"))
                         if _rows(p)] for split in SPLITS}
    if any(leak_free.values()):
        configs.append({"config_name": "leak_free", "data_files": [
            {"split": split, "path": paths} for split, paths in leak_free.items() if paths]})
    for name, pattern in (("triples", f"{PARQUET_TRIPLES}/snapshot_*/delta_*.parquet"),
                          ("context", f"{PARQUET_CONTEXT}/snapshot_*/delta_*.parquet"),
                          (RELATION_PRIORS,
                           f"{PARQUET_CONTEXT}/snapshot_*/{RELATION_PRIORS}.parquet"),
                          *((t, f"{KG_SNAPSHOTS}/snapshot_*/{t}.parquet")
                            for t in ("kg_triples", "entities", "relations"))):
        splits = per_snapshot(pattern)
        if splits:
            configs.append({"config_name": name, "data_files": files(splits)})
    instances = out / table_parquet_path("instances")
    if instances.is_file() and _rows(instances):
        configs.append({"config_name": "instances", "data_files": [
            {"split": "train", "path": [table_parquet_path("instances")]}]})
    return configs


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` value for ``n`` rows."""
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
              (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"),
              (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]
    return next((name for bound, name in bounds if n < bound), "n>1B")


# --- the text ------------------------------------------------------------------------------
#: The Hub's dataset-card template (huggingface_hub/templates/datasetcard_template.md):
#: its sections, in its order, each filled by :func:`sections`; an optional section of the
#: Hub's that the release cannot fill (funding, a demo) is left out rather than left as
#: "[More Information Needed]".
TEMPLATE = """---
# Dataset card metadata: https://github.com/huggingface/hub-docs/blob/main/datasetcard.md
{{ card_data }}
---

# Dataset Card for {{ pretty_name }}

{{ dataset_summary }}

## Dataset Details

### Dataset Description

{{ dataset_description }}

- **Curated by:** {{ curators }}
- **Language(s) (NLP):** English
- **License:** {{ license_text }}

### Dataset Sources

- **Paper:** {{ paper }}
- **The authors' code and release:** {{ repo }}

## Uses

### Direct Use

{{ direct_use }}

### Out-of-Scope Use

{{ out_of_scope_use }}

## Dataset Structure

{{ dataset_structure }}

## Dataset Creation

### Curation Rationale

{{ curation_rationale_section }}

### Source Data

#### Data Collection and Processing

{{ data_collection_and_processing_section }}

#### Who are the source data producers?

{{ source_data_producers_section }}

### Annotations

#### Annotation process

{{ annotation_process_section }}

#### Who are the annotators?

{{ who_are_annotators_section }}

#### Personal and Sensitive Information

{{ personal_and_sensitive_information }}

### Validation

{{ validation_section }}

## Bias, Risks, and Limitations

{{ bias_risks_limitations }}

### Recommendations

{{ bias_recommendations }}

## Citation

**BibTeX:**

```bibtex
{{ citation_bibtex }}
```

## Glossary

{{ glossary }}

## More Information

{{ more_information }}
"""


def _bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _statistics(prepared: Prepared) -> str:
    stats = prepared.stats
    t2 = table2_rows(stats)
    ops_head = ["Snapshot", *(op_label(o) for o in OP_ORDER), "evaluation set"]
    ops_rows = [[label(s.snapshot), *(_count(s.ops.get(o, 0)) + (
        f" ({_count(s.supported_ops.get(o, 0))})" if s.curated else "") for o in OP_ORDER),
                 _count(sum(s.evaluation.values()))] for s in stats]
    curated = all(s.curated for s in stats)
    return "\n\n".join([
        "### Statistics",
        "The layout of the paper's Table 2: the entities, relation types and triples "
        "annotated in the passages, the triples an LLM judge supports (counted as the "
        "authors count theirs: the deprecation verdict for a triple with D, else the "
        "assertion verdict), the passages, and the KG snapshot."
        + ("" if curated else " **This release is uncurated**: no LLM judged its triples, "
           "so its lines passed the structural selection only (`emerge curate` judges them "
           "and leaves out the lines without a supported delta triple)."),
        f'<div id="table2">\n\n{_markdown_table(list(TABLE2), t2)}\n\n</div>',
        "Instances (a triple under one operation) per snapshot"
        + (", and in brackets the LLM-supported triples, each counted once under its first "
           "operation." if curated else "."),
        _markdown_table(ops_head, ops_rows),
        "The paper's Figure 3 (`plots/tkgu_distribution.png`): the distribution of the "
        "TKGU operations in the corpus and in the test split, the LLM-supported triples "
        "each counted once under their first operation, as the authors draw it"
        + ("." if curated else " (uncurated: every triple)."),
        *(f"![{p.removesuffix('.png')}]({PLOTS}/{p})" for p in prepared.plots),
    ])


#: what each operation is, in the paper's words (its Section 3), by id
OP_MEANINGS = {
    "X": "an existing triple the passage supports: (s, p, o) ∈ T_t (no edit to the KG)",
    "E": "a new triple between entities the KG has: (s, p, o) ∉ T_t, s ∈ V_t and o ∈ V_t",
    "EE": "a new triple with an emerging entity: (s, p, o) ∉ T_t, s ∉ V_t or o ∉ V_t",
    "EE-KG": "a new triple linking an emerging entity the passage mentions to an entity of "
             "the KG the passage does not mention",
    "D": "a triple of T_t that the passage's new evidence deprecates",
}


def glossary(settings: Mapping[str, Any]) -> str:
    """The card's glossary: the paper's notation, and the operations' ids with the names
    the paper gives them (``core.ops.OP_LABELS``) stated once."""
    days = about._setting(settings, "snapshots.window_days", 7)
    days = f"{days:g}" if isinstance(days, int | float) else days
    rows = [[f"`{op}`", OP_LABELS[op], f"`{OP_NAMES[op]}`", OP_MEANINGS[op]]
            for op in OP_ORDER]
    return "\n\n".join([
        _bullets([
            "**G_t = (V_t, R_t, T_t)**: the Wikidata KG snapshot at time t (the snapshot "
            "date): V_t its entities, R_t its relation types, T_t its triples (s, p, o) with "
            "s, o ∈ V_t and p ∈ R_t (`kg_snapshots/snapshot_YYYY-MM-DD/`).",
            f"**τ_k = t + k·{days} days**: the end of the k-th window after t (the "
            "paper's t + Δ for a delta window Δ); delta k's file is named by τ_k's date and "
            "holds the passages of (t, τ_k] (cumulative).",
            "**TKGU operation**: an edit to G_t that a passage d_t' (t' > t) supports; each "
            "triple of a line lists its operations in `tkgu_operations`.",
        ]),
        "The operations: the paper's names beside the ids this release (and the paper's "
        "tables) use.",
        _markdown_table(["id", "name", "in `tkgu_operations`", "what it is"], rows),
    ])


#: the card's account of the splits: what each is for, and what overlaps what
LEAK_FREE = (
    "Fit and tune on the `leak_free` configuration, score on its `test`. "
    "`test` is the authors' stratified draw (the evaluation set) as it is; `validation` "
    "(for choosing prompts, shots and checkpoints) and `train` (for fitting or few-shot "
    "examples) hold the other lines whose article has no line in `test`, in any snapshot, "
    "an article's lines to one of them by a hash of its page_id "
    "(`release.splits.validation_share` of the articles to validation). The three share no "
    "article and no passage: a passage's repeats in later cumulative windows stay in its "
    "article's split, and a line of an article in `test` that was not drawn is in no split "
    "(the manifest's `splits` counts them). Each snapshot's file is in time order "
    "(window, then the revision the passage appeared in). **The corpus-wide "
    "configurations (`corpus`, its per-snapshot splits, `evaluation_set`, `triples`) "
    "overlap `test`**: every test line is also a corpus line, so a model fitted on them "
    "and scored on `test` is scored on what it saw. A delta file of no more lines than "
    "the draw asks for (`selection.evaluation_per_delta`) is drawn whole: on a small "
    "release `train` and `validation` can then be empty.")


def _structure(out: Path, prepared: Prepared, configs: Sequence[Mapping[str, Any]]) -> str:
    from emerge_lib.formats.schema import LINE_SCHEMA, TRIPLE_ROW_SCHEMA, field_rows

    layout = [
        ["`corpus/snapshot_D/delta_D.jsonl`", "the corpus: a line per passage of window k, "
         "named by τ_k's date (the authors' format)"],
        ["`evaluation_set/snapshot_D/delta_D.jsonl`", "the evaluation set: the same lines, a "
         "seeded stratified draw"],
        ["`kg_snapshots/kg_snapshot_D.tsv.gz`", "T_t as the authors' TSV (head, relation, tail)"],
        ["`kg_snapshots/snapshot_D/{kg_triples,entities,relations}.parquet`", "G_t: T_t, V_t, R_t"],
        [f"`{PARQUET_CORPUS}/`, `{PARQUET_EVALUATION}/`", "the same lines as typed Parquet"],
        [f"`{PARQUET_TRIPLES}/`", "the corpus lines' triples, one row each"],
        [f"`{PARQUET_SPLITS}/snapshot_D/{{train,validation,test}}.parquet`", "the leak-free "
         "splits' lines (below)"],
        [f"`{PARQUET_CONTEXT}/snapshot_D/delta_D.parquet`", "each corpus line's k-hop "
         "context in G_t"],
        [f"`{PARQUET_CONTEXT}/snapshot_D/{RELATION_PRIORS}.parquet`", "triples per relation "
         "in T_t"],
        ["`parquet/instances.parquet`", "the instances: one row per (line, triple, operation)"],
        ["`human_annotation/`", "human verdicts, when annotated"],
        ["`validation/`", "the validation results (`results.json`) and every check on a "
         "page that opens offline (`index.html`)"],
        ["`croissant.json`", "Croissant 1.1 metadata with its responsible-AI fields"],
        ["`manifest.json`", "every file with its size and sha256; the version"],
    ]
    config_rows = []
    for c in configs:
        for split in c["data_files"]:
            paths = split["path"]
            config_rows.append([f"`{c['config_name']}`" + (" (default)" if c.get("default")
                                                          else ""),
                                f"`{split['split']}`", _count(len(paths)),
                                _count(sum(_rows(out / p) for p in paths))])
    parts = [
        _statistics(prepared),
        "### Files",
        _markdown_table(["path", "what"], layout),
        "### Configurations and splits",
        "Every configuration maps its splits to Parquet files (the YAML above names each "
        "file), so `datasets.load_dataset(RELEASE)` reads typed columns; a split per "
        "snapshot (`snapshot_YYYY_MM_DD`), and `test` (the evaluation set) in `corpus`.",
        _markdown_table(["config", "split", "files", "rows"], config_rows)
        if config_rows else "No Parquet files with rows.",
        "### Leak-free splits",
        LEAK_FREE,
        "### Fields of a line (`corpus`, `evaluation_set`)",
        _markdown_table(["field", "type", "meaning"],
                        [[f"`{n}`", f"`{t}`", _cell(d)] for n, t, d in field_rows(LINE_SCHEMA)]),
        "### Fields of a triple (`triples`)",
        "The line's `hash_id`, then the fields of the `tkgu_triples` element above.",
        _markdown_table(["field", "type"], [[f"`{n}`", f"`{t}`"] for n, t, _ in
                                           field_rows(TRIPLE_ROW_SCHEMA)
                                           if "." not in n]),
    ]
    return "\n\n".join(parts)


def _judges(facts: CardFacts) -> str:
    if not facts.judges:
        return "No LLM verdicts in this release (curation was off)."
    rows = []
    for j in facts.judges:
        v = j.get("verdicts", {})
        rows.append([_cell(j.get("llm_name")), _cell(j.get("judge") or "–"),
                     _cell(j.get("served_model") or "–"), _cell(j.get("backend") or "–"),
                     _cell(j.get("quantization") or "not recorded"),
                     _cell(j.get("prompt_type")), f"`{str(j.get('template_sha256'))[:12]}`",
                     _count(v.get("YES", 0)), _count(v.get("NO", 0)),
                     _count(v.get("UNPARSED", 0)),
                     _count((j.get("asked_again") or {}).get("unparsed", 0)),
                     _count((j.get("asked_again") or {}).get("degenerate", 0))])
    return _markdown_table(["model (`llm_name`)", "route", "served as", "backend",
                            "quantization", "prompt", "template sha256", "YES", "NO",
                            "unparsed", "asked again: unparsed",
                            "asked again: degenerate"], rows) + (
        "\n\nAnswer QA (the authors' Part 3): a later curate asks again an answer stored "
        "as unparsed, or degenerate (an empty, too short, looping or truncated explanation, "
        "or one model's answer repeated word for word for different triples); the columns "
        "count the verdicts whose answer replaced such a one." + _gold(facts))


def _gold(facts: CardFacts) -> str:
    """Which judge's verdicts are the gold (``asserted_operations``, the supported
    triples of Table 2, ``emerge evaluate``'s llm-asserted filter)."""
    gold = facts.gold
    if not gold:
        return ""
    if gold.get("rule") != "final judge":
        return ("\n\nThe gold (`asserted_operations`, Table 2's supported triples, "
                "`emerge evaluate`'s llm-asserted filter) is the configured judges' rule: "
                "no final judge was configured.")
    return (f"\n\nThe gold (`asserted_operations`, Table 2's supported triples, `emerge "
            f"evaluate`'s llm-asserted filter) is the final judge's: {_cell(gold.get('llm_name'))} "
            f"(route `{gold.get('route')}`, route `final` above for what it asked itself) "
            f"judged every operation of every kept line with {gold.get('prompts')}, as the "
            "authors' s05 v9 did with Meta-Llama-3.1-405B and prompt_v1 after their test draw"
            + _gold_lines(gold.get("lines") or {}) + ".")


def _gold_lines(lines: Mapping[str, int]) -> str:
    """How many lines the final judge has not judged whole (they keep the configured
    judges' rule), when there are any."""
    rest = lines.get("configured judges", 0)
    return "" if not rest else (
        f" ({_count(lines.get('final judge', 0))} lines; {_count(rest)} it has not judged "
        "whole keep the configured judges' rule)")


def _validation(out: Path, line: str, facts: CardFacts) -> str:
    verdict = facts.validation or {}
    parts = [f'<div id="validation">\n\n{line}\n\n</div>']
    states = verdict.get("snapshots") or {}
    page = verdict.get("page")  # validation/index.html: every check, offline
    if states:
        def link(snap: str) -> str:
            return f"[checks]({page}#snapshot-{snap[:10]})" if page else "–"

        rows = [[label(snap), _cell(st.get("tables")), _cell(st.get("release")), link(snap)]
                for snap, st in sorted(states.items())]
        parts.append(_markdown_table(["snapshot", "table suites", "release suites", "page"],
                                     rows))
        empty = [f"- {label(snap)}: {w}" for snap, st in sorted(states.items())
                 for w in st.get("warnings") or ()]
        if empty:  # warnings: what the history did not give (they block nothing)
            parts.append("What this release does not hold (its history gave none; "
                         "warnings, not failures):\n\n" + "\n".join(empty))
    if verdict.get("results"):
        parts.append(f"Every check with its observed values: [{verdict['results']}]"
                     f"({verdict['results']}).")
    croissant = verdict.get("croissant")
    if isinstance(croissant, Mapping):
        parts.append(f"[{CROISSANT}]({CROISSANT}): " + (
            "validated with mlcroissant, every record set read." if croissant.get("success")
            else "does not validate: " + "; ".join(map(str, croissant.get("problems", [])))))
    return "\n\n".join(parts)


def agreement_section(out: Path) -> str:
    """The human annotation's agreement table (Markdown) from ``agreement/agreement.json``
    (``emerge annotate import`` writes it; docs/annotation.md), or "" without one."""
    path = out / AGREEMENT / "agreement.json"
    if not path.is_file():
        return ""
    table = json.loads(path.read_text(encoding="utf-8"))
    metrics = ("cohen_h1_h2", "cohen_h1_llm", "cohen_h2_llm", "fleiss", "krippendorff_alpha")
    cells = {(r["operation"], r["metric"]): r for r in table["rows"]}
    rows = [[op, *("–" if cells[(op, m)]["value"] is None else f"{cells[(op, m)]['value']:.3f}"
                   for m in metrics), _count(cells[(op, metrics[0])]["n"])]
            for op in (*OP_NAMES.values(), "overall") if (op, metrics[0]) in cells]
    h1, h2 = table["annotators"]
    llms = " / ".join(dict.fromkeys(table["assessors"].values()))
    return (f'\n\n<div id="agreement">\n\nAgreement of two annotators ({h1}, {h2}) and the '
            f"LLM judge ({llms}) on the same triples, as the paper computes it "
            f"(`{AGREEMENT}/agreement.md`; – undefined: every rating equal):\n\n"
            + _markdown_table(["operation", "H-H Cohen's κ", "H1-LLM Cohen's κ",
                               "H2-LLM Cohen's κ", "H+LLM Fleiss' κ", "H+LLM Kripp. α",
                               "items"], rows) + "\n\n</div>")


def sections(out: Path, prepared: Prepared, validation: str, facts: CardFacts,
             configs: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Every section of the card as Markdown, by template variable: the one place the
    card's text is rendered."""
    settings = facts.settings
    days = [label(s) for s in prepared.snapshots]
    lines = sum(s.passages for s in prepared.stats)
    version = f"`{facts.version}`" if facts.version else "not yet versioned"
    human = sorted(p.name for p in (out / HUMAN_ANNOTATION).glob("*.jsonl")) \
        if (out / HUMAN_ANNOTATION).is_dir() else []
    curated = bool(facts.judges)
    return {
        "pretty_name": about.PRETTY_NAME,
        "dataset_summary": (f"> {about.SYNTHETIC_NOTICE}\n\n" if about.synthetic(settings)
                            else "")
        + f"{about.SUMMARY}\n\n**Version {version}** (the hash of the data "
          "files: `manifest.json` lists every file with its sha256).",
        "dataset_description": (
            f"Snapshots: {', '.join(days) or 'none'}; "
            f"{_count(lines)} distinct passages in the corpus. Each line of "
            "`corpus/snapshot_YYYY-MM-DD/delta_YYYY-MM-DD.jsonl` is a passage new in that "
            "weekly delta with its triples and TKGU operations; `evaluation_set/` is the "
            "test split; each snapshot's KG is in `kg_snapshots/`. Every line is also in "
            "typed Parquet under `parquet/` (the configurations below)."),
        "curators": f"emerge {facts.code_version or ''}".strip() + ", from Wikimedia dumps",
        "license_text": f"CC BY-SA 4.0. {about.LICENCE_TEXT}",
        "paper": f"[EMERGE: A Benchmark for Updating Knowledge Graphs with Emerging Textual "
                 f"Knowledge]({about.PAPER_URL})",
        "repo": about.AUTHORS_CODE_URL,
        "direct_use": _bullets(about.USES) + "\n\n" + (
            "```python\nfrom emerge_lib import load_release\n"
            "lines = load_release(\"RELEASE\")                 # a datasets.Dataset\n"
            "triples = load_release(\"RELEASE\", kind=\"triples\", format=\"pandas\")\n"
            "train = load_release(\"RELEASE\", split=\"train\")   # leak-free: no test article\n"
            "context = load_release(\"RELEASE\", kind=\"context\", split=\"test\")  # G_t around\n\n"
            "import datasets\n"
            "ds = datasets.load_dataset(\"RELEASE\")              # every snapshot and test\n"
            "```"),
        "out_of_scope_use": _bullets(about.OUT_OF_SCOPE),
        "dataset_structure": _structure(out, prepared, configs),
        "curation_rationale_section": (
            "Information-extraction benchmarks pair text with a static KG. EMERGE pairs "
            "each passage with the state of Wikidata at a snapshot date and the changes the "
            "passage supports (new triples, emerging entities, deprecations), so models "
            "that keep a KG up to date from text can be measured, and the benchmark can be "
            "extended with every new Wikimedia dump."),
        "data_collection_and_processing_section": about.collection(settings, facts.dumps, facts.history)
        + "\n\n" + _bullets(about.preprocessing(settings)),
        "source_data_producers_section": (
            "No one: `emerge sample` generated every page and edit (synthetic data)."
            if about.synthetic(settings) else
            "The editors of English Wikipedia and Wikidata (people and bots); emerge only "
            "selects and aligns what they wrote."),
        "annotation_process_section": about.annotation(settings) + "\n\n" + _judges(facts)
        + ("\n\nPrompts: the paper's Appendix B, word for word (B.1 `triple_assertion` for "
           "X, E, EE, EE-KG; B.2 `triple_deprecation` for D); `template sha256` identifies "
           "the template text." if curated else ""),
        "who_are_annotators_section": (
            "No person annotated the corpus: the operations come from Wikidata's edit "
            "history" + (", the verdicts from the LLM judges above" if curated else "")
            + ". " + (f"Human annotations: {', '.join(f'`{HUMAN_ANNOTATION}/{h}`' for h in human)}."
                      if human else "No human annotation files in this release.")
            + agreement_section(out)),
        "personal_and_sensitive_information": _bullets(about.PERSONAL),
        "validation_section": _validation(out, validation, facts),
        "bias_risks_limitations": _bullets(about.BIASES + about.LIMITATIONS),
        "bias_recommendations": (
            "Score models on the evaluation set per snapshot and operation (`emerge "
            "evaluate`); use `asserted_operations` or `llm_assessment` to keep the triples "
            "the judges found supported; cite this release by its version."),
        "citation_bibtex": about.CITATION,
        "glossary": glossary(settings),
        "more_information": _bullets([
            f"Version {version}; built by emerge {facts.code_version or '?'}"
            + (f"; settings sha256 `{facts.settings_sha256[:16]}`" if facts.settings_sha256
               else ""),
            f"`{CROISSANT}`: Croissant 1.1 metadata (Hugging Face, Kaggle, dataset tracks).",
            "`emerge diff --old OLD --new NEW` lists the lines one release adds, removes or "
            "changes against another; `emerge query --release DIR \"SQL\"` asks DuckDB.",
        ]),
    }


def render(out: Path, prepared: Prepared, validation: str, facts: CardFacts | None = None
           ) -> list[str]:
    """Write README.md (the Hub's card) and card.html; returns their names."""
    from huggingface_hub import DatasetCard, DatasetCardData
    from markdown_it import MarkdownIt

    facts = facts or CardFacts()
    configs = hub_configs(out)
    lines = sum(s.passages for s in prepared.stats)
    human = (out / HUMAN_ANNOTATION).is_dir() and any((out / HUMAN_ANNOTATION).glob("*.jsonl"))
    data = DatasetCardData(
        license=about.LICENSE, language=["en"], task_categories=list(about.TASK_CATEGORIES),
        size_categories=[size_category(lines)], pretty_name=about.PRETTY_NAME,
        source_datasets=["original"],
        language_creators=["machine-generated" if about.synthetic(facts.settings) else "found"],
        annotations_creators=["machine-generated"] + (["expert-generated"] if human else []),
        multilinguality="monolingual", tags=about.tags(facts.settings), configs=configs)
    text = sections(out, prepared, validation, facts, configs)
    card = DatasetCard.from_template(data, template_str=TEMPLATE, **text)
    card.save(out / CARD)
    body = MarkdownIt("commonmark", {"html": True}).enable("table").render(card.text)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(about.NAME)} release</title>
<style>body{{font-family:sans-serif;max-width:960px;margin:2em auto}}
table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #999;padding:4px 8px}}
img{{max-width:100%}}pre{{background:#f4f4f4;padding:8px;overflow-x:auto}}
#metadata{{background:#f4f6fa;border:1px solid #ccd;padding:4px 12px}}
#metadata dt{{font-weight:bold;float:left;clear:left;width:11em}}
#metadata dd{{margin:0 0 4px 11em}}.preview{{overflow-x:auto;font-size:85%}}
.preview td{{vertical-align:top;max-width:28em}}</style></head>
<body>{_metadata_html(data.to_dict(), configs)}{_preview_html(out, configs)}
{body}</body></html>
"""
    (out / CARD_HTML).write_text(page, encoding="utf-8")
    return [CARD, CARD_HTML]



#: card.html's preview: the first rows of each configuration, each cell cut at this length
PREVIEW_ROWS = 3
PREVIEW_CELL = 160


def _metadata_html(data: Mapping[str, Any], configs: Sequence[Mapping[str, Any]]) -> str:
    """The YAML front matter's metadata as the Hub shows it above a card."""
    def item(name: str, value: Any) -> str:
        shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        return f"<dt>{html.escape(name)}</dt><dd>{html.escape(shown)}</dd>"

    rows = [item("License", data.get("license", "")),
            item("Language", data.get("language", [])),
            item("Tasks", data.get("task_categories", [])),
            item("Size", data.get("size_categories", [])),
            item("Annotations", data.get("annotations_creators", [])),
            item("Source", data.get("source_datasets", [])),
            item("Tags", data.get("tags", [])),
            item("Configurations", [
                f"{c['config_name']}{' (default)' if c.get('default') else ''}: "
                + " ".join(str(split["split"]) for split in c["data_files"])
                for c in configs] or ["none (no Parquet file with rows)"])]
    return f'<section id="metadata"><h2>Metadata</h2><dl>{"".join(rows)}</dl></section>\n'


def _preview_cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str,
                                                           ensure_ascii=False)
    if len(text) > PREVIEW_CELL:
        text = text[:PREVIEW_CELL] + " …"
    return f"<td>{html.escape(text)}</td>"


def _preview_html(out: Path, configs: Sequence[Mapping[str, Any]]) -> str:
    """The first :data:`PREVIEW_ROWS` rows of each configuration (its first split's first
    file), as the Hub's viewer shows them: a table per configuration."""
    import pyarrow.parquet as pq

    parts = []
    for c in configs:
        first = c["data_files"][0]
        path = out / first["path"][0]
        batch = next(pq.ParquetFile(path).iter_batches(batch_size=PREVIEW_ROWS), None)
        if batch is None:
            continue
        rows = batch.to_pylist()[:PREVIEW_ROWS]
        head = "".join(f"<th>{html.escape(n)}</th>" for n in batch.schema.names)
        body = "".join("<tr>" + "".join(_preview_cell(r[n]) for n in batch.schema.names)
                       + "</tr>" for r in rows)
        name = html.escape(str(c["config_name"]))
        parts.append(f'<h3>{name} <small>({html.escape(str(first["split"]))}, '
                     f"{html.escape(first['path'][0])})</small></h3>"
                     f'<div class="preview" data-config="{name}"><table><tr>{head}</tr>'
                     f"{body}</table></div>")
    if not parts:
        return ""
    return ('<section id="preview"><h2>Data preview</h2><p>The first lines of each '
            "configuration, as <code>load_release</code> and <code>datasets</code> read "
            f"them.</p>{''.join(parts)}</section>\n")
