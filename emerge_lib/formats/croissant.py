"""``croissant.json``: the release described in Croissant 1.1 with its responsible-AI fields
(mlcommons.org/croissant), which the Hugging Face Hub, Kaggle and dataset tracks read.

Generated from the manifest's file entries (each data file a ``FileObject`` with its
sha256 and size) and the Parquet files' own Arrow schemas (every column a ``Field`` of its
type), so it cannot disagree with the files. Record sets, each over a ``FileSet`` of
Parquet files (relative ``includes`` globs, resolved against the folder of this file):

- ``corpus``: the lines (``parquet/corpus/``), one record per line, key ``hash_id``;
- ``evaluation_set``: the evaluation lines (``parquet/evaluation_set/``);
- ``triples``: one record per TKGU triple of a corpus line (``parquet/triples/``), its
  ``llm_assessment`` and ``human_assessment`` as lists of records, ``hash_id`` the line;
- ``kg_triples``, ``entities``, ``relations``: the KG snapshots (``kg_snapshots/``).

mlcroissant 1.1.1 reads one level of nesting (a struct, or a list of structs, of
scalars), so the lines' ``tkgu_triples`` (nested two levels deep) are described by the
``triples`` record set instead of inside the lines. The version is the manifest's, as
Semantic Versioning's build metadata behind the newest snapshot's date (``2024.4.1+
b83f30fb47d81f95``: mlcroissant asks for MAJOR.MINOR.PATCH, and a quarter's extension
counts up); the file itself states it, so it is one of the files the version's hash
leaves out (``emerge_lib.formats.manifest.SELF_DESCRIBING``). ``datePublished`` is the
date of the newest dump the release was built from (nothing in it is newer), else the end
of its newest snapshot's last window. No clock: the same release gives the same bytes. Pure (pyarrow for the schemas); checked with mlcroissant by the release's
validation (``emerge_lib.validation.validate.check_croissant``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from emerge_lib.formats import about
from emerge_lib.formats.format import iso_date, window_end
from emerge_lib.formats.layout import (
    CROISSANT,
    PARQUET_CONTEXT,
    PARQUET_CORPUS,
    PARQUET_EVALUATION,
    PARQUET_SPLITS,
    PARQUET_TRIPLES,
    RELATION_PRIORS,
    SPLITS,
)

CONFORMS_TO = ["http://mlcommons.org/croissant/1.1", "http://mlcommons.org/croissant/RAI/1.0"]
#: the JSON-LD context of Croissant 1.1, as mlcroissant 1.1.1 writes it (``make_context``)
CONTEXT: dict[str, Any] = {
    "@language": "en", "@vocab": "https://schema.org/", "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs", "column": "cr:column", "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn", "cr": "http://mlcommons.org/croissant/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"}, "dct": "http://purl.org/dc/terms/",
    "description": {"@container": "@language"}, "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"}, "extract": "cr:extract",
    "field": "cr:field", "fileObject": "cr:fileObject", "fileProperty": "cr:fileProperty",
    "fileSet": "cr:fileSet", "format": "cr:format", "includes": "cr:includes",
    "isArray": "cr:isArray", "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath",
    "key": "cr:key", "md5": "cr:md5", "name": {"@container": "@language"},
    "parentField": "cr:parentField", "path": "cr:path", "rai": "http://mlcommons.org/croissant/RAI/",
    "recordSet": "cr:recordSet", "references": "cr:references", "regex": "cr:regex",
    "repeated": "cr:repeated", "replace": "cr:replace", "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/", "separator": "cr:separator", "source": "cr:source",
    "subField": "cr:subField", "transform": "cr:transform",
}
#: the RAI properties this file may use (the vocabulary's names, croissant_rai.ttl):
#: mlcroissant does not report an unknown ``rai:`` key, so a test holds ours to this list
RAI_PROPERTIES = frozenset({
    "rai:dataCollection", "rai:dataCollectionType", "rai:dataCollectionMissingData",
    "rai:dataCollectionRawData", "rai:dataCollectionTimeframe", "rai:dataImputationProtocol",
    "rai:dataPreprocessingProtocol", "rai:dataManipulationProtocol",
    "rai:dataAnnotationProtocol", "rai:dataAnnotationPlatform", "rai:dataAnnotationAnalysis",
    "rai:annotationsPerItem", "rai:annotatorDemographics", "rai:machineAnnotationTools",
    "rai:dataBiases", "rai:dataUseCases", "rai:dataLimitations", "rai:dataSocialImpact",
    "rai:personalSensitiveInformation", "rai:dataReleaseMaintenancePlan",
})
ENCODING = {".parquet": "application/x-parquet", ".jsonl": "application/jsonlines",
            ".gz": "application/gzip", ".json": "application/json"}
PARQUET_MIME = ENCODING[".parquet"]  # not the IANA type: mlcroissant reads only this one



@dataclass(frozen=True)
class RecordSetSpec:
    """One record set: its FileSet's glob, its key, the columns left to another record
    set, and what a record is."""

    includes: str
    description: str
    key: str | None = None
    skip: tuple[str, ...] = ()


_LINES = ("One line per passage of a delta file ({jsonl} as typed Parquet); its TKGU "
          "triples are the `triples` record set (tkgu_triples is nested deeper than "
          "Croissant readers read).")
RECORD_SETS: dict[str, RecordSetSpec] = {
    "corpus": RecordSetSpec(f"{PARQUET_CORPUS}/*/*.parquet",
                            _LINES.format(jsonl="corpus/snapshot_*/delta_*.jsonl"),
                            "hash_id", ("tkgu_triples",)),
    "evaluation_set": RecordSetSpec(
        f"{PARQUET_EVALUATION}/*/*.parquet",
        _LINES.format(jsonl="evaluation_set/snapshot_*/delta_*.jsonl"), "hash_id",
        ("tkgu_triples",)),
    "triples": RecordSetSpec(f"{PARQUET_TRIPLES}/*/*.parquet",
                             "One TKGU triple of a corpus line (its tkgu_triples unnested), "
                             "with the line's hash_id, snapshot, window end and window."),
    **{split: RecordSetSpec(
        f"{PARQUET_SPLITS}/*/{split}.parquet",
        f"The lines of the leak-free `{split}` split (train, validation and test share no "
        "article; test is the evaluation set); their triples are the `triples` record set's "
        "of the same hash_id.", "hash_id", ("tkgu_triples",)) for split in SPLITS},
    "context": RecordSetSpec(f"{PARQUET_CONTEXT}/*/delta_*.parquet",
                             "A corpus line's k-hop context: the triples of its snapshot's "
                             "KG around the entities it mentions.", "hash_id"),
    RELATION_PRIORS: RecordSetSpec(f"{PARQUET_CONTEXT}/*/{RELATION_PRIORS}.parquet",
                                   "R_t's prior: the triples of T_t per relation."),
    "kg_triples": RecordSetSpec("kg_snapshots/*/kg_triples.parquet",
                                "T_t: the KG snapshot's triples (s, p, o), per snapshot."),
    "entities": RecordSetSpec("kg_snapshots/*/entities.parquet",
                              "V_t: the KG snapshot's entities."),
    "relations": RecordSetSpec("kg_snapshots/*/relations.parquet",
                               "R_t: the KG snapshot's relation types."),
}


class CroissantError(ValueError):
    """A column this generator cannot describe (nested deeper than mlcroissant reads)."""


def _data_type(kind: pa.DataType) -> str:
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "sc:Text"
    if pa.types.is_boolean(kind):
        return "sc:Boolean"
    if pa.types.is_int64(kind):
        return "cr:Int64"
    if pa.types.is_int32(kind):
        return "cr:Int32"
    if pa.types.is_floating(kind):
        return "cr:Float64"
    if pa.types.is_date32(kind):
        return "sc:Date"
    if pa.types.is_timestamp(kind):
        return "sc:DateTime"
    raise CroissantError(f"no Croissant data type for {kind}")


def _scalar(kind: pa.DataType) -> bool:
    return not (pa.types.is_struct(kind) or pa.types.is_list(kind))


def _source(file_set: str, column: str, json_path: str | None = None) -> dict[str, Any]:
    source: dict[str, Any] = {"fileSet": {"@id": file_set}, "extract": {"column": column}}
    if json_path is not None:
        source["transform"] = {"jsonPath": json_path}
    return source


def fields(record_set: str, file_set: str, schema: pa.Schema,
           skip: Sequence[str] = ()) -> list[dict[str, Any]]:
    """A Croissant ``Field`` per column of ``schema`` (but ``skip``): scalars and lists of
    scalars (``isArray``), structs and lists of structs of scalars (``subField``s reading
    the column with a ``jsonPath``). Deeper nesting is a CroissantError."""
    out = []
    for f in schema:
        if f.name in skip:
            continue
        field_id = f"{record_set}/{f.name}"
        base = {"@type": "cr:Field", "@id": field_id, "name": f.name}
        kind, array = f.type, False
        if pa.types.is_list(kind):
            kind, array = kind.value_type, True
        if _scalar(kind):
            field = {**base, "dataType": _data_type(kind), "source": _source(file_set, f.name)}
        elif pa.types.is_struct(kind) and all(_scalar(c.type) or (
                pa.types.is_list(c.type) and _scalar(c.type.value_type)) for c in kind):
            subs = []
            for child in kind:
                sub_kind = child.type.value_type if pa.types.is_list(child.type) else child.type
                sub = {"@type": "cr:Field", "@id": f"{field_id}/{child.name}",
                       "name": child.name, "dataType": _data_type(sub_kind),
                       "source": _source(file_set, f.name, child.name)}
                if pa.types.is_list(child.type):
                    sub |= {"isArray": True, "arrayShape": "-1"}
                subs.append(sub)
            field = {**base, "subField": subs}
        else:
            raise CroissantError(f"{record_set}.{f.name}: {f.type} is nested deeper than "
                                 "mlcroissant reads")
        if array:
            field |= {"isArray": True, "arrayShape": "-1"}
        out.append(field)
    return out


def _file_id(path: str) -> str:
    return path


def _schema_of(out: Path, files: Sequence[str]) -> pa.Schema | None:
    return pq.read_schema(out / files[0]) if files else None


def _matches(path: str, pattern: str) -> bool:
    """The FileSet's glob as mlcroissant applies it (``fnmatch``: ``*`` crosses ``/``)."""
    from fnmatch import fnmatch

    return fnmatch(path, pattern)


def semantic_version(version: str, snapshots: Sequence[str]) -> str:
    """``2024.4.1+b83f30fb47d81f95``: the newest snapshot's date as MAJOR.MINOR.PATCH (what
    mlcroissant accepts without a warning) and the release's content version as build
    metadata, which alone names the content (``0.0.0+…`` without a snapshot)."""
    day = max((s[:10] for s in snapshots), default=None)
    numbers = ".".join(str(int(n)) for n in day.split("-")) if day else "0.0.0"
    return f"{numbers}+{version}"


def date_published(settings: Mapping[str, Any], dumps: Sequence[Mapping[str, Any]],
                   snapshots: Sequence[str], history: Sequence[Mapping[str, Any]] = ()
                   ) -> str | None:
    """The day the newest history the release holds ends (``history``'s newest
    ``revisions_before``), or the newest dump's date it was built from (``2024-05-20``),
    else the end of the newest snapshot's last window; None with none of them."""
    ends = [str(h["revisions_before"]) for h in history if h.get("revisions_before")]
    if ends:
        return max(ends)
    dates = [str(d.get("dump_date")) for d in dumps if d.get("dump_date")]
    if dates:
        newest = max(dates)
        return f"{newest[:4]}-{newest[4:6]}-{newest[6:8]}"
    windows = about._setting(settings, "snapshots.windows")
    days = about._setting(settings, "snapshots.window_days")
    if not snapshots or windows is None or days is None:
        return None
    return iso_date(window_end(max(snapshots), int(windows), float(days)))


def build_croissant(out: str | Path, files: Sequence[Mapping[str, Any]], *, version: str,
                    settings: Mapping[str, Any], dumps: Sequence[Mapping[str, Any]],
                    snapshots: Sequence[str], judges: Sequence[Mapping[str, Any]] = (),
                    history: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The Croissant document of the release in ``out`` whose data files are ``files``
    (manifest entries: path, bytes, sha256)."""
    root = Path(out)
    data = [f for f in files if Path(f["path"]).suffix in ENCODING]
    distribution: list[dict[str, Any]] = [
        {"@type": "cr:FileObject", "@id": _file_id(f["path"]), "name": f["path"],
         "contentUrl": f["path"], "encodingFormat": ENCODING[Path(f["path"]).suffix],
         "contentSize": f"{f['bytes']} B", "sha256": f["sha256"]}
        for f in sorted(data, key=lambda f: f["path"])]
    record_sets = []
    for name, spec in RECORD_SETS.items():
        members = sorted(f["path"] for f in data if _matches(f["path"], spec.includes))
        schema = _schema_of(root, members)
        if schema is None or not any(pq.ParquetFile(root / m).metadata.num_rows
                                     for m in members):
            continue  # no record to read (a split of no line): no record set
        file_set = f"{name}-parquet"
        distribution.append({"@type": "cr:FileSet", "@id": file_set, "name": file_set,
                             "description": f"{len(members)} Parquet files (each listed "
                             "above with its sha256)", "encodingFormat": PARQUET_MIME,
                             "includes": spec.includes})
        rs: dict[str, Any] = {"@type": "cr:RecordSet", "@id": name, "name": name,
                              "description": spec.description,
                              "field": fields(name, file_set, schema, spec.skip)}
        if spec.key:
            rs["key"] = {"@id": f"{name}/{spec.key}"}
        record_sets.append(rs)
    days = sorted(s[:10] for s in snapshots)
    machine = [f"{j['llm_name']} ({j['prompt_type']}; served as {j.get('served_model') or '?'}"
               f", quantization {j.get('quantization') or 'not recorded'})" for j in judges]
    doc: dict[str, Any] = {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": about.NAME,
        "description": about.SUMMARY,
        "version": semantic_version(version, snapshots),
        "datePublished": date_published(settings, dumps, snapshots, history),
        "license": about.LICENSE_URL,
        "url": about.PAPER_URL,
        "citeAs": about.CITATION,
        "keywords": about.tags(settings),
        "creator": {"@type": "sc:Organization", "name": "emerge"},
        "temporalCoverage": f"{days[0]}/{days[-1]}" if days else None,
        "rai:dataCollection": about.collection(settings, dumps, history),
        "rai:dataCollectionType": [about.COLLECTION_TYPE[about.synthetic(settings)]],
        "rai:dataCollectionRawData": about.SYNTHETIC_RAW_DATA if about.synthetic(settings)
        else None,
        "rai:dataCollectionTimeframe": [f"snapshots {', '.join(days)}"] if days else None,
        "rai:dataPreprocessingProtocol": about.preprocessing(settings),
        "rai:dataAnnotationProtocol": about.annotation(settings),
        "rai:machineAnnotationTools": machine or None,
        "rai:dataBiases": about.BIASES,
        "rai:dataLimitations": about.LIMITATIONS,
        "rai:personalSensitiveInformation": about.PERSONAL,
        "rai:dataUseCases": about.USES,
        "rai:dataReleaseMaintenancePlan": about.MAINTENANCE,
        "distribution": distribution,
        "recordSet": record_sets,
    }
    return {k: v for k, v in doc.items() if v is not None}


def write_croissant(out: str | Path, files: Sequence[Mapping[str, Any]], **facts: Any) -> str:
    """Write ``croissant.json`` into ``out`` (see :func:`build_croissant`); returns its
    path relative to ``out``."""
    doc = build_croissant(out, files, **facts)
    path = Path(out) / CROISSANT
    tmp = path.with_name(f".{CROISSANT}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return CROISSANT
