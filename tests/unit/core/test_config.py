from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from emerge_lib.core.config import ConfigError, load_config


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "config.yaml"
    p.write_text(text)
    return p


def test_defaults_follow_design() -> None:
    cfg = load_config(environ={})
    assert cfg.snapshots.windows == 5
    assert cfg.snapshots.window_days == 7
    assert cfg.stability.kg_hours == 168
    assert cfg.stability.passage_minutes == 30
    # incremental by default; how it is computed is not the release's content
    assert cfg.stability.rebuild == "auto"
    assert "rebuild" not in cfg.dataset_settings()["stability"]
    forced = load_config(environ={"EMERGE__STABILITY__REBUILD": "full"})
    assert (forced.stability.rebuild, forced.dataset_settings()) == ("full",
                                                                      cfg.dataset_settings())
    assert (cfg.passages.min_tokens, cfg.passages.max_tokens) == (25, 1000)
    assert cfg.passages.max_markup_ratio == 0.5
    assert cfg.passages.min_entities == 2
    assert "P582" in cfg.qualifiers.end and "P580" in cfg.qualifiers.start
    assert cfg.engine.url == "embedded"


def test_semantics_default_to_what_the_released_data_shows(tmp_path: Path) -> None:
    """The three switches of docs/data-model.md default to the released data, not to the
    docs/semantics.md §1.1 rule; each can still be set to it."""
    cfg = load_config(environ={})
    assert cfg.passages.windows == "cumulative"
    assert cfg.deltas.emerging == "created_after_snapshot"
    assert cfg.deltas.deprecate_window_additions is True
    design = load_config(write(tmp_path, """
passages: {windows: first_appearance}
deltas: {emerging: not_in_snapshot, deprecate_window_additions: false}
"""), environ={})
    assert (design.passages.windows, design.deltas.emerging,
            design.deltas.deprecate_window_additions) == ("first_appearance", "not_in_snapshot", False)


def test_good_file_with_relative_paths(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        """
warehouse: wh
engine: {url: "sc://spark.example:15002"}
dumps:
  mirror: file://mirror
  wikidata: {wiki: wikidatawiki, dates: ["20240301"]}
snapshots:
  timestamps: ["2024-04-01T00:00:00+02:00", 2024-01-01]
  windows: 3
  window_days: 10
""",
    )
    cfg = load_config(p, environ={})
    assert cfg.warehouse == str((tmp_path / "wh").resolve())
    assert cfg.dumps.mirror == (tmp_path / "mirror").resolve().as_uri()
    assert cfg.engine.url == "sc://spark.example:15002"
    # sorted, UTC, the +02:00 offset converted
    assert cfg.snapshots.timestamps == [
        datetime(2024, 1, 1, tzinfo=UTC),
        datetime(2024, 3, 31, 22, tzinfo=UTC),
    ]
    assert cfg.snapshots.windows == 3 and cfg.snapshots.window_days == 10


def test_environment_overrides_file(tmp_path: Path) -> None:
    p = write(tmp_path, "snapshots: {windows: 3}\n")
    cfg = load_config(
        p,
        environ={
            "EMERGE__SNAPSHOTS__WINDOWS": "4",
            "EMERGE__ENGINE__URL": "sc://127.0.0.1:15002",
            "UNRELATED": "x",
        },
    )
    assert cfg.snapshots.windows == 4
    assert cfg.engine.url == "sc://127.0.0.1:15002"


def test_a_curation_endpoint_alone_keeps_the_released_judge_names(tmp_path: Path) -> None:
    """Pointing a route at a server (as docker-compose does) must not rename the model the
    release records; naming it explicitly does."""
    p = write(tmp_path, "curation: {deprecations: {url: 'http://b:8000/v1', name: Big}}\n")
    cfg = load_config(p, environ={"EMERGE__CURATION__ADDITIONS__URL": "http://a:8000/v1"})
    assert (cfg.curation.additions.name, cfg.curation.additions.url) == (
        "Meta-Llama-3.1-8B", "http://a:8000/v1")
    assert (cfg.curation.deprecations.name, cfg.curation.deprecations.served) == ("Big", "Big")
    assert load_config(p).curation.additions.url is None
    with pytest.raises(ConfigError, match="curation.additions.url"):
        load_config(p, overrides={"curation": {"additions": {"url": "ftp://x"}}})


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ("snapshots: {windowz: 3}\n", "snapshots.windowz", "unknown key"),
        ("bogus: 1\n", "bogus", "unknown key"),
        ("snapshots: {timestamps: ['2024-13-45']}\n", "snapshots.timestamps.0", "ISO 8601"),
        ("snapshots: {windows: 0}\n", "snapshots.windows", "greater than or equal to 1"),
        ("snapshots: {window_days: -7}\n", "snapshots.window_days", "greater than 0"),
        (
            "snapshots: {timestamps: ['2024-01-01', '2024-01-01T00:00:00Z']}\n",
            "snapshots.timestamps",
            "unique",
        ),
        ("engine: {url: 'http://x:1'}\n", "engine.url", "scheme sc"),
        ("engine: {url: 'sc://host:99999'}\n", "engine.url", "bad port"),
        ("dumps: {mirror: 'ftp://x'}\n", "dumps.mirror", "scheme"),
        ("dumps: {wikidata: {wiki: w, dates: ['2024-03-01']}}\n", "dumps.wikidata.dates", "YYYYMMDD"),
        ("s3: {endpoint_url: 'localhost:9000'}\n", "s3.endpoint_url", "scheme"),
        ("warehouse: 'gs://bucket/x'\n", "warehouse", "scheme"),
        ("passages: {min_tokens: 50, max_tokens: 10}\n", "passages", "exceeds max_tokens"),
        ("qualifiers: {end: ['Q5']}\n", "qualifiers.end", "not a property id"),
    ],
)
def test_bad_files_name_field_and_reason(tmp_path: Path, text: str, field: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text), environ={})
    message = str(info.value)
    assert field in message, message
    assert reason in message, message


def test_bad_environment_override_is_rejected() -> None:
    with pytest.raises(ConfigError, match="snapshots.windows"):
        load_config(environ={"EMERGE__SNAPSHOTS__WINDOWS": "many"})


def test_not_yaml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path, "a: [1, 2\n"), environ={})
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml", environ={})
    with pytest.raises(ConfigError, match="mapping"):
        load_config(write(tmp_path, "- 1\n- 2\n"), environ={})


def test_paths_resolve_where_the_user_wrote_them(tmp_path: Path, monkeypatch) -> None:
    """In the file (and the defaults, when a file is given): against the file's folder;
    from the environment or a flag: against the current directory."""
    folder, cwd = tmp_path / "configs", tmp_path / "here"
    folder.mkdir()
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    p = write(folder, "warehouse: wh\ndumps: {staging: st}\n")
    cfg = load_config(p, environ={})
    assert cfg.warehouse == str(folder / "wh") and cfg.dumps.staging == str(folder / "st")
    assert cfg.dumps.download_dir.startswith(str(folder))  # a default, beside the file
    from_env = load_config(p, environ={"EMERGE__WAREHOUSE": "env-wh"})
    assert from_env.warehouse == str(cwd / "env-wh")
    from_flag = load_config(p, overrides={"warehouse": "flag-wh",
                                          "evaluation": {"out": "ev"}}, environ={})
    assert from_flag.warehouse == str(cwd / "flag-wh")
    assert from_flag.evaluation.out == str(cwd / "ev")
    assert load_config(p, overrides={"warehouse": "s3://b/w"}, environ={}).warehouse == "s3://b/w"


def test_a_config_that_is_a_folder_or_not_text_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder"):
        load_config(tmp_path, environ={})
    binary = tmp_path / "c.yaml"
    binary.write_bytes(b"\xff\xfe\x00warehouse")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(binary, environ={})
    with pytest.raises(ConfigError, match=r"EMERGE__\* environment"):
        load_config(environ={"EMERGE__SNAPSHOTS__WINDOWS": "many"})


def test_the_presets_are_configuration_files_layered_like_any_other(tmp_path, monkeypatch,
                                                                    caplog) -> None:
    """``-c paper`` is the authors' release (a file of that name, if any, wins); the
    authors' selection rules are the defaults and ``-c no-selection-rules`` is the
    selection before them, a file laid over it winning; the old ``selection.rules`` key
    is still read, with a one-line deprecation message."""
    from emerge_lib.core.config import config_layers, load_config

    cfg = load_config("paper")
    assert [t.year for t in cfg.snapshots.timestamps] == list(range(2019, 2026))
    assert (cfg.snapshots.windows, cfg.snapshots.window_days) == (5, 7)
    assert cfg.curation.enabled and cfg.selection.evaluation_pre_draw == [1000, 400]
    assert cfg.deltas.permanent_removal_years == 15 and cfg.align.ee_kg_persistence_days == 182.5
    default = load_config()
    assert (default.align.between_mentions, default.selection.dedup_passes,
            default.deltas.creation_over_redirects) == (True, "authors", True)
    off = load_config("no-selection-rules")
    rules_off = (False, False, 0.0, 0.0, False, "greedy", [])
    assert (off.align.between_mentions, off.align.interesting, off.align.ee_kg_persistence_days,
            off.deltas.permanent_removal_years, off.selection.require_supported,
            off.selection.dedup_passes, off.selection.evaluation_pre_draw) == rules_off
    # the earlier behaviour of s07's edges and of answer QA is in it too
    assert (off.align.relations_in_snapshot, off.deltas.removal_start_qualifier,
            off.selection.guard_split_at_colon, off.curation.unparsed_fails,
            off.curation.reasks, off.curation.degenerate_check,
            off.curation.single_prompts) == (False, False, False, "triple", 0, False, False)
    assert (off.deltas.resolve_redirects, off.passages.repeat_mentions,
            off.curation.final_judge) == (False, False, None)
    assert (default.deltas.resolve_redirects, default.passages.repeat_mentions,
            default.curation.final_judge) == (True, True, "deprecations")
    assert (default.align.relations_in_snapshot, default.deltas.removal_start_qualifier,
            default.selection.guard_split_at_colon, default.curation.unparsed_fails,
            default.curation.reasks, default.curation.single_prompts) == (
        True, True, True, "operation", 1, True)
    mine = tmp_path / "mine.yaml"
    mine.write_text("align:\n  interesting: true\nwarehouse: wh\n")
    one = load_config(["paper", "no-selection-rules", mine])
    assert one.align.interesting and not one.align.between_mentions
    assert one.snapshots.windows == 5 and one.warehouse == str(tmp_path / "wh")
    assert [layer.label for layer in config_layers(["paper", "no-selection-rules", mine])] == [
        "preset paper", "preset no-selection-rules", str(mine)]
    with caplog.at_level("WARNING"):
        old = load_config(overrides={"selection": {"rules": "none"}, "align": {"interesting": True}})
    assert old.align.interesting and not old.align.between_mentions
    assert [r.message.count("\n") for r in caplog.records] == [0]
    assert "selection.rules is deprecated" in caplog.text and "no-selection-rules" in caplog.text
    monkeypatch.chdir(tmp_path)
    (tmp_path / "paper").write_text("snapshots:\n  windows: 2\n")
    assert load_config("paper").snapshots.windows == 2


@pytest.mark.parametrize("value", ["null", "~", "*starts-with-a-star", "[bracket", "{brace",
                                   "!bang", "@at", "%percent", '"quote', "`tick",
                                   "with a #comment", "  spaced  "])
def test_a_secret_from_the_environment_is_taken_as_the_string_it_is(value: str) -> None:
    """Read as YAML, `null` and `~` unset a secret, ` #…` cut it, `*x` showed in an error
    minus its first character and `[ { ! @ % "` or a backtick failed every command."""
    from emerge_lib.core.config import env_overrides, load_config
    from emerge_lib.core.logs import redact

    env = {"EMERGE__S3__SECRET_ACCESS_KEY": value, "EMERGE__CURATION__ADDITIONS__API_KEY": value}
    assert env_overrides(env) == {"s3": {"secret_access_key": value},
                                  "curation": {"additions": {"api_key": value}}}
    # a setting named like a credential that is not one stays YAML
    assert env_overrides({"EMERGE__PASSAGES__MAX_TOKENS": "500"}) == {
        "passages": {"max_tokens": 500}}
    cfg = load_config(environ={**env, "EMERGE__CURATION__ADDITIONS__URL": "http://h/v1",
                               "EMERGE__CURATION__ADDITIONS__NAME": "m"})
    assert cfg.s3.secret_access_key is not None
    assert cfg.s3.secret_access_key.get_secret_value() == value
    if len(value) >= 6:
        assert value not in redact(f"an error quoting {value}")


@pytest.mark.parametrize("value", ["*alias-like-value", "[unclosed", "@reserved", "{a: b"])
def test_an_override_that_is_not_yaml_is_one_line_naming_its_variable(value: str) -> None:
    from emerge_lib.core.config import ConfigError, env_overrides

    with pytest.raises(ConfigError) as info:
        env_overrides({"EMERGE__DUMPS__MIRROR": value})
    text = str(info.value)
    assert text.startswith("EMERGE__DUMPS__MIRROR: not a YAML value") and "\n" not in text
    assert value.strip("*[@{") not in text and value not in text


def test_paper_v1_is_the_paper_preset_with_the_papers_ten_snapshots() -> None:
    """EMERGE.txt section 4: annual snapshots 2019-2023, quarterly ones in 2024, and
    2025-01-01; every other value the paper preset's."""
    from emerge_lib.core.config import load_config
    from emerge_lib.core.presets import preset_settings

    v1 = load_config("paper-v1")
    assert [t.strftime("%Y-%m-%d") for t in v1.snapshots.timestamps] == [
        "2019-01-01", "2020-01-01", "2021-01-01", "2022-01-01", "2023-01-01",
        "2024-01-01", "2024-04-01", "2024-07-01", "2024-10-01", "2025-01-01"]
    paper, theirs = preset_settings("paper"), preset_settings("paper-v1")
    assert len(theirs["snapshots"]["timestamps"]) == 10
    for settings in (paper, theirs):
        del settings["snapshots"]["timestamps"]
    assert paper == theirs
