"""What states a release (emerge_lib/release/describe.py): a release built from a generated
mirror (settings ``synthetic``, from ``dumps.synthetic``) says so on its card, in
croissant.json and in its manifest; one from Wikimedia's dumps does not. Files only."""

from __future__ import annotations

from pathlib import Path

from hubkit import described

from emerge_lib.core.config import Config
from emerge_lib.formats import about


def test_a_release_of_a_generated_mirror_says_it_is_synthetic(tmp_path: Path) -> None:
    cfg = Config.model_validate({"dumps": {"synthetic": True}})
    card, croissant, manifest = described(tmp_path / "r", cfg.dataset_settings())
    head = card.split("---", 2)  # the metadata block, then the text
    assert "- synthetic" in head[1] and "language_creators:\n- machine-generated" in head[1]
    assert "**Synthetic data.**" in head[2].split("## Dataset Details")[0]  # on top
    assert "not from Wikimedia's dumps" in head[2]
    assert croissant["rai:dataCollectionType"] == ["Others"]
    assert "emerge sample" in croissant["rai:dataCollectionRawData"]
    assert croissant["rai:dataCollection"].startswith(about.SYNTHETIC_NOTICE)
    assert "synthetic" in croissant["keywords"]
    assert manifest["settings"]["synthetic"] is True


def test_a_release_of_wikimedia_dumps_does_not(tmp_path: Path) -> None:
    settings = Config().dataset_settings()
    assert settings["synthetic"] is False  # recorded either way
    card, croissant, manifest = described(tmp_path / "r", settings)
    assert "synthetic" not in card.lower()
    assert croissant["rai:dataCollectionType"] == ["Secondary Data Analysis"]
    assert "rai:dataCollectionRawData" not in croissant
    assert "synthetic" not in croissant["keywords"]
    assert manifest["settings"]["synthetic"] is False


def test_the_card_states_the_papers_names_beside_the_ids_once(tmp_path: Path) -> None:
    from emerge_lib.core.ops import OP_LABELS, op_label
    from emerge_lib.formats.format import OP_NAMES

    card, croissant, _ = described(tmp_path / "r", Config().dataset_settings())
    glossary = card.split("## Glossary", 1)[1].split("## More Information")[0]
    assert "G_t = (V_t, R_t, T_t)" in glossary and "τ_k = t + k·7 days" in glossary
    for op, name in OP_LABELS.items():
        assert glossary.count(f"| `{op}` | {name} | `{OP_NAMES[op]}` |") == 1
        assert f"| {op_label(op)} " in card.split("## Glossary")[0]  # the statistics' head
        assert f"{op_label(op)}: " in croissant["description"]  # and the summary's list
