"""The Label Studio side without a server: the labeling config, the tasks, and the reading
of its JSON export (users by id or e-mail, skipped tasks, what is refused)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from emerge_lib.annotation.labelstudio import (
    LABEL_CONFIG,
    annotator_names,
    passage_html,
    question,
    read_export,
    task,
)
from emerge_lib.annotation.release import AnnotationError
from emerge_lib.curation.prompts import render
from emerge_lib.formats.format import ASSERTION, DEPRECATION

RECORD = {"hash_id": "h1", "passage": "Excerpt: Ann <b> met Bob and Ann.",
          "delta_dates": ["2024-01-01", "2024-01-08"],
          "mentions": [{"mention_text": "Ann", "qid": "Q1", "start_char": 9, "end_char": 12},
                       {"mention_text": "Bob", "qid": "Q2", "start_char": 21, "end_char": 24},
                       {"mention_text": "Ann", "qid": "Q1", "start_char": 29, "end_char": 32},
                       {"mention_text": "<b>", "qid": "Q9", "start_char": 13, "end_char": 16}]}
TRIPLE = {"triple": ["Q1", "P3", "Q2"], "triple_labels": ["Ann", "knows", "Bob"],
          "tkgu_operations": ["d-triples", "e-triples"]}


def test_the_config_names_every_variable_the_tasks_carry() -> None:
    root = ET.fromstring(LABEL_CONFIG)
    variables = {el.get("value")[1:] for el in root.iter() if (el.get("value") or "").startswith("$")}
    data = task(RECORD, TRIPLE, ASSERTION, "knows a person", "v1")["data"]
    assert variables <= set(data)
    assert [c.get("value") for c in root.iter("Choice")] == ["YES", "NO"]
    assert {el.get("name") for el in root.iter() if el.tag in ("Choices", "TextArea")} == {
        "verdict", "comment"}


def test_a_task_asks_the_papers_question_about_the_marked_triple() -> None:
    for kind in (ASSERTION, DEPRECATION):
        prompt = render(kind, "PASSAGE", [("a", "b", "c")])
        assert question(kind) in prompt and "PASSAGE" not in question(kind)
    assert question(DEPRECATION).startswith("Does this text imply")
    data = task(RECORD, TRIPLE, DEPRECATION, "knows a person", "v1")["data"]
    assert data["hash_id"] == "h1" and data["triple"] == ["Q1", "P3", "Q2"]
    assert data["prompt_type"] == DEPRECATION and data["snapshot"] == "2024-01-01"
    assert data["human_readable_triple"] == "['Ann / Ann (Q1)', 'knows (P3)', 'Bob (Q2)']"
    # the operations as a person reads them: the paper's names beside the ids
    assert data["operations_text"] == ("Operations: d-triples = D (Deprecate), "
                                       "e-triples = E (Add)")
    html = passage_html(RECORD, ("Q1", "P3", "Q2"))
    assert html.count('<mark title="Q1 (head)">Ann</mark>') == 2
    assert '<mark title="Q2 (tail)">Bob</mark>' in html
    assert '<u title="Q9">&lt;b&gt;</u>' in html and "<b>" not in html  # escaped


def _export(*annotations, data=None):
    data = data or {"hash_id": "h1", "triple": ["Q1", "P3", "Q2"], "prompt_type": ASSERTION}
    return [{"id": 7, "data": data, "annotations": list(annotations)}]


def _answer(user, choice, comment=None, cancelled=False):
    result = [] if choice is None else [{"from_name": "verdict", "type": "choices",
                                         "value": {"choices": [choice]}}]
    if comment:
        result.append({"from_name": "comment", "type": "textarea", "value": {"text": [comment]}})
    return {"id": 1, "completed_by": user, "result": result, "was_cancelled": cancelled}


def test_users_are_named_by_the_user_by_id_or_by_their_e_mail() -> None:
    tasks = _export(_answer(2, "YES", "clear"), _answer(3, "NO"), _answer(4, "YES", cancelled=True))
    verdicts = read_export(tasks, "x.json", names={"2": "annotator_1", "3": "annotator_2"})
    assert sorted((v.annotator, v.assessment, v.comment) for v in verdicts) == [
        ("annotator_1", True, "clear"), ("annotator_2", False, None)]  # skipped: no verdict
    expanded = _export(_answer({"id": 5, "email": "ann@lab.org"}, "NO"))
    assert read_export(expanded, "x.json")[0].annotator == "ann"
    assert read_export(expanded, "x.json", names={"ann@lab.org": "annotator_3"})[0].annotator \
        == "annotator_3"
    assert read_export(_export(_answer(9, "YES")), "x.json", annotator="solo")[0].annotator == "solo"


@pytest.mark.parametrize(("tasks", "kwargs", "message"), [
    (_export(_answer(2, "YES"), _answer(3, "NO")), {"annotator": "solo"}, "annotations by 2 users"),
    (_export(_answer(2, "YES")), {}, "name them with --annotator ID=NAME"),
    (_export(_answer(2, "MAYBE")), {"annotator": "a"}, "is not YES or NO"),
    (_export(_answer(2, "YES"), data={"hash_id": "h1"}), {}, "no 'triple'"),
    ([{"id": 1, "data": {"hash_id": "h"}, "verdict": "YES"}], {}, "export the project as JSON"),
    ({"tasks": []}, {}, "not a Label Studio JSON export"),
])
def test_what_cannot_be_read_is_one_line_naming_the_file(tasks, kwargs, message) -> None:
    with pytest.raises(AnnotationError, match=message) as info:
        read_export(tasks, "export.json", **kwargs)
    assert str(info.value).startswith("export.json") and "\n" not in str(info.value)


def test_annotator_flags() -> None:
    assert annotator_names(["solo"]) == ("solo", {})
    assert annotator_names(["2=annotator_1", "3=annotator_2"]) == (
        None, {"2": "annotator_1", "3": "annotator_2"})
    with pytest.raises(AnnotationError):
        annotator_names(["solo", "2=annotator_1"])
