"""Label Studio: the labeling config, the tasks ``emerge annotate export`` writes, and the
reading of a Label Studio JSON export. No server here: Label Studio runs as a service of
its own (``make labelstudio``, scripts/labelstudio-local.sh, the ``labelstudio`` compose
service), and talks to emerge only through these files.

A task is one question (a triple under one prompt type). Its ``data`` carries what the
annotator sees (the question of the paper's prompt, the passage with the triple's
mentions marked, the triple with its ids, the relation's definition) and what brings the
answer home (``hash_id``, ``triple``, ``prompt_type``); Label Studio keeps ``data`` as it is
and returns it in its export. The JSON export (Label Studio 1.23: a list of tasks, each
with ``annotations``: ``completed_by`` a user id, or ``{id, email, …}`` when the export
expands users; ``result`` the choices; ``was_cancelled`` for a skipped task) is read here;
skipped tasks and annotations without a verdict count as no verdict.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from emerge_lib.annotation.release import AnnotationError, Triple
from emerge_lib.core.ops import op_label
from emerge_lib.curation.prompts import TEMPLATES
from emerge_lib.formats.format import OP_NAMES, PROMPT_TYPES, human_readable_triple

RELEASE_OPS = {name: op for op, name in OP_NAMES.items()}  # "d-triples" → "D"

VERDICT, COMMENT = "verdict", "comment"  # the config's control names
YES, NO = "YES", "NO"

#: the labeling config (Label Studio XML): question, passage, triple, definition, YES/NO,
#: an optional comment. The triple's operations (ids with the paper's names) are task
#: data for the project's Data Manager, not shown while labeling: the paper's annotators
#: judged support without being told which update a triple stands for
LABEL_CONFIG = """<View>
  <Header value="$question" size="4"/>
  <HyperText name="passage" value="$passage_html"/>
  <Header value="$triple_text" size="5"/>
  <Text name="definition" value="$definition_text"/>
  <Choices name="verdict" toName="passage" choice="single" required="true" showInline="true">
    <Choice value="YES"/>
    <Choice value="NO"/>
  </Choices>
  <TextArea name="comment" toName="passage" rows="2" maxSubmissions="1"
            placeholder="Optional comment (why, doubts)"/>
</View>
"""


def question(prompt_type: str) -> str:
    """The question of the paper's prompt (Appendix B) for a prompt type: the template's
    sentence between the passage and the triples, word for word."""
    template = TEMPLATES[prompt_type]
    return template.split("{passage}\n\n", 1)[1].split("\n{triples}", 1)[0]


def passage_html(record: Mapping[str, Any], spo: Triple) -> str:
    """The passage as HTML: the triple's head and tail mentions in ``<mark>``, the other
    linked mentions underlined, each with its item id as a tooltip (overlaps skipped)."""
    text = record.get("passage") or ""
    out, at = [], 0
    ends = {spo[0]: "head", spo[2]: "tail"}
    for m in sorted(record.get("mentions") or (), key=lambda m: (m["start_char"], m["end_char"])):
        start, end = m.get("start_char"), m.get("end_char")
        if not (isinstance(start, int) and isinstance(end, int) and at <= start <= end <= len(text)):
            continue
        out.append(html.escape(text[at:start]))
        qid = html.escape(str(m.get("qid")))
        inner = html.escape(text[start:end])
        if m.get("qid") in ends:
            out.append(f'<mark title="{qid} ({ends[m["qid"]]})">{inner}</mark>')
        else:
            out.append(f'<u title="{qid}">{inner}</u>')
        at = end
    out.append(html.escape(text[at:]))
    return "<p>" + "".join(out) + "</p>"


def operations_text(operations: Iterable[str]) -> str:
    """A triple's operations as the task shows them: each release name with its id and
    the paper's name beside it, ``"Operations: d-triples = D (Deprecate)"``."""
    ops = [f"{name} = {op_label(RELEASE_OPS[name])}" if name in RELEASE_OPS else str(name)
           for name in operations]
    return "Operations: " + (", ".join(ops) or "none listed")


def task(record: Mapping[str, Any], triple: Mapping[str, Any], prompt_type: str,
         definition: str, release: str, extra: Mapping[str, Any] | None = None
         ) -> dict[str, Any]:
    """One Label Studio task: a triple of a line under one prompt type."""
    spo = tuple(triple["triple"])
    labels = triple.get("triple_labels") or [None] * 3
    hrt = human_readable_triple(record, triple)
    data = {
        "question": question(prompt_type),
        "passage_html": passage_html(record, spo),
        "triple_text": f"({labels[0]} [{spo[0]}], {labels[1]} [{spo[1]}], "
                       f"{labels[2]} [{spo[2]}])",
        "definition_text": f"{labels[1]} ({spo[1]}): {definition}",
        "operations_text": operations_text(triple.get("tkgu_operations") or ()),
        "hash_id": record["hash_id"],
        "triple": list(spo),
        "tkgu_operations": list(triple.get("tkgu_operations") or ()),
        "prompt_type": prompt_type,
        "snapshot": str((record.get("delta_dates") or [""])[0]),
        "human_readable_triple": hrt,
        "definition_relation": definition,
        "release": release,
        **(extra or {}),
    }
    return {"data": data}


@dataclass(frozen=True)
class Verdict:
    """One human answer to one question."""

    hash_id: str
    triple: Triple
    prompt_type: str
    annotator: str
    assessment: bool
    comment: str | None
    where: str  # file and task, for errors


def _user(completed_by: Any) -> tuple[str, str | None]:
    """(the user's id as text, its e-mail when the export expands users) of
    ``completed_by`` (an id, or ``{id, email, …}``)."""
    if isinstance(completed_by, Mapping):
        email = completed_by.get("email")
        return str(completed_by.get("id")), email if isinstance(email, str) else None
    return str(completed_by), None


def annotator_names(spec: Sequence[str]) -> tuple[str | None, dict[str, str]]:
    """``--annotator`` values: ``NAME`` (every annotation of the export is NAME's) or
    ``ID=NAME`` pairs (Label Studio user id or e-mail → name), not both."""
    single = [s for s in spec if "=" not in s]
    pairs = dict(s.split("=", 1) for s in spec if "=" in s)
    if single and (pairs or len(single) > 1):
        raise AnnotationError("--annotator: give one NAME (a single annotator's export) or "
                              "ID=NAME pairs, not both")
    return (single[0] if single else None), {k.strip(): v.strip() for k, v in pairs.items()}


def _choice(annotation: Mapping[str, Any], control: str) -> Any:
    for r in annotation.get("result") or ():
        if isinstance(r, Mapping) and r.get("from_name") == control:
            return r.get("value") or {}
    return None


def read_export(tasks: Any, source: str, annotator: str | None = None,
                names: Mapping[str, str] | None = None) -> list[Verdict]:
    """The verdicts of a Label Studio JSON export (a list of tasks). ``annotator`` names
    every annotation (refused when the export holds more than one user's); else each
    user is named by ``names`` (id or e-mail → name), else by its e-mail's local part
    when the export expands users, else refused in one line that lists the ids."""
    if not isinstance(tasks, list):
        raise AnnotationError(f"{source}: not a Label Studio JSON export (a list of tasks)")
    names = dict(names or {})
    users: dict[str, str | None] = {}
    pending: list[tuple[Mapping[str, Any], Mapping[str, Any], str]] = []
    for i, t in enumerate(tasks):
        where = f"{source}: task {t.get('id', i + 1) if isinstance(t, Mapping) else i + 1}"
        if not isinstance(t, Mapping) or not isinstance(t.get("data"), Mapping):
            raise AnnotationError(f"{where}: not a Label Studio task (no data)")
        if "annotations" not in t:
            raise AnnotationError(f"{where}: no annotations list; export the project as "
                                  "JSON (not JSON_MIN or CSV)")
        data = t["data"]
        for key in ("hash_id", "triple", "prompt_type"):
            if key not in data:
                raise AnnotationError(f"{where}: data has no {key!r}: not a task of "
                                      "`emerge annotate export`")
        if data["prompt_type"] not in PROMPT_TYPES:
            raise AnnotationError(f"{where}: prompt_type {data['prompt_type']!r} is not one "
                                  f"of {', '.join(PROMPT_TYPES)}")
        for a in t.get("annotations") or ():
            if not isinstance(a, Mapping) or a.get("was_cancelled"):
                continue  # a skipped task: no verdict
            user, email = _user(a.get("completed_by"))
            users.setdefault(user, email)
            pending.append((data, a, f"{where}, annotation {a.get('id')} by user {user}"))
    if annotator and len(users) > 1:
        raise AnnotationError(f"{source}: annotations by {len(users)} users (ids "
                              f"{', '.join(sorted(users))}); --annotator NAME names a "
                              "single annotator's export: give ID=NAME for each instead")
    resolved: dict[str, str] = {}
    for user, email in users.items():
        name = annotator or names.get(user) or (email and names.get(email)) or (
            email.split("@", 1)[0] if email and "@" in email else None)
        if not name:
            raise AnnotationError(f"{source}: Label Studio names annotators by user id "
                                  f"({', '.join(sorted(users))}); name them with "
                                  "--annotator ID=NAME (or --annotator NAME for one)")
        resolved[user] = name
    out: dict[tuple, Verdict] = {}
    for data, a, where in pending:
        value = _choice(a, VERDICT)
        choices = (value or {}).get("choices") or []
        if not choices:
            continue  # submitted without a verdict (the config requires one): no verdict
        if len(choices) != 1 or choices[0] not in (YES, NO):
            raise AnnotationError(f"{where}: verdict {choices!r} is not YES or NO")
        comment = " ".join((_choice(a, COMMENT) or {}).get("text") or []) or None
        spo = tuple(data["triple"]) if isinstance(data["triple"], list) else ()
        if len(spo) != 3:
            raise AnnotationError(f"{where}: data.triple {data['triple']!r:.60} is not [s, p, o]")
        user = _user(a.get("completed_by"))[0]
        v = Verdict(str(data["hash_id"]), spo, data["prompt_type"], resolved[user],
                    choices[0] == YES, comment, where)
        out[(v.hash_id, v.triple, v.prompt_type, v.annotator)] = v  # the later one wins
    return list(out.values())


def read_annotation_lines(records: Sequence[tuple[str, Mapping[str, Any]]],
                          annotator: str | None = None) -> list[Verdict]:
    """The verdicts of annotation lines in the authors' layout (``human_assessment``
    entries); ``annotator`` renames them all (e.g. a file annotated in s09b as one user)."""
    out = []
    for where, rec in records:
        for t in rec["tkgu_triples"]:
            for e in t.get("human_assessment") or ():
                if not isinstance(e, Mapping) or not isinstance(e.get("assessment"), bool) \
                        or e.get("prompt_type") not in PROMPT_TYPES \
                        or not isinstance(e.get("annotator_name"), str):
                    raise AnnotationError(f"{where}: a human_assessment entry of "
                                          f"{t.get('triple')} is not in the authors' format "
                                          f"(annotator_name, prompt_type, assessment: bool): "
                                          f"{e!r:.120}")
                out.append(Verdict(rec["hash_id"], tuple(t["triple"]), e["prompt_type"],
                                   annotator or e["annotator_name"], e["assessment"], None,
                                   where))
    return out
