from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

import pytest

from emerge_lib.cli import build_parser, main


def subcommands() -> list[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return sorted(action.choices)


def test_emerge_help_runs_as_a_console_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "emerge_lib.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "EMERGE benchmark" in out
    for name in subcommands():
        assert name in out


@pytest.mark.parametrize("command", subcommands())
def test_every_subcommand_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert "usage: emerge " + command in capsys.readouterr().out


def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the command, the top one and each sub-command's, with its path."""
    found = [("emerge", build_parser())]
    for path, parser in found:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found += [(f"{path} {name}", sub) for name, sub in action.choices.items()]
    return found


def test_every_command_shows_examples_and_every_argument_says_what_it_is() -> None:
    """Each parser has an ``examples:`` epilog of command lines that parse (so an example
    cannot name a flag that is gone), a description (sub-commands), no prefix matching;
    each argument has a help text; no help cites a file outside the repository."""
    from emerge_lib.commands._common import EXAMPLES

    all_parsers = parsers()
    assert len(all_parsers) > 20
    for path, parser in all_parsers:
        assert parser.allow_abbrev is False, path
        assert path == "emerge" or parser.description, f"{path}: no description"
        assert (parser.epilog or "").startswith(EXAMPLES), f"{path}: no example"
        lines = parser.epilog.splitlines()[1:]
        assert lines, path
        for line in lines:
            words = shlex.split(line)
            argv = words[:next((n for n, w in enumerate(words) if w in (">", "|")),
                               len(words))]  # the command, not a shell redirection
            assert argv[:len(path.split())] == path.split(), (path, line)
            if "--help" not in argv:
                build_parser().parse_args(argv[1:])  # SystemExit here: a bad example
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or isinstance(
                    action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            assert action.help and len(action.help) > 10, (path, action.option_strings
                                                           or action.dest)
        assert "DESIGN" not in parser.format_help(), path


@pytest.mark.parametrize(("argv", "says"), [
    (["biuld", "--out", "x"], "invalid choice: 'biuld'"),
    (["query", "--releas", "DIR", "SELECT 1"], "--releas: did you mean --release?"),
    (["query", "--release", "DIR", "--formt", "csv", "SELECT 1"],
     "--formt: did you mean --format?"),
    (["query", "--release", "DIR", "--format", "jsn", "SELECT 1"], "did you mean 'json'?"),
    (["--verbos"], "--verbose"),
    (["annotate", "agrement"], "did you mean 'agreement'?"),
])
def test_a_mistyped_command_or_flag_is_refused_with_a_suggestion(argv: list[str], says: str,
                                                                 capsys) -> None:
    """No prefix matching (``--releas`` is not taken for ``--release``: a flag renamed
    later would silently change meaning), and the nearest name is suggested."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and says in err, err
    if argv[0] == "biuld":
        assert "did you mean 'build'?" in err


def test_config_command_reports_bad_files(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("snapshots: {windows: -1}\n")
    assert main(["config", "-c", str(bad)]) == 2
    assert "snapshots.windows" in capsys.readouterr().err
    good = tmp_path / "g.yaml"
    good.write_text("snapshots: {windows: 3}\n")
    assert main(["config", "-c", str(good)]) == 0
    assert "windows: 3" in capsys.readouterr().out


def test_tables_command_lists_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    from emerge_lib.catalog import TABLES

    assert main(["tables"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in TABLES)


@pytest.mark.parametrize("command", [["ingest"], ["build", "--snapshot", "2024-01-01T00:00:00Z"],
                                     ["inspect", "statements", "--at", "2024-01-01T00:00:00Z"]])
def test_the_default_workers_is_a_pool_of_one_process_per_core(
        command: list[str], tmp_path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`dumps.workers: 0` (the default, no --workers) asks the ingest for one extraction
    process per usable core. The core count is planted (5), and the pool stops the run
    when it is constructed: no process starts, so one real core is enough."""
    from dumpbuilder import PageSpec, Rev, claim, item, write_bz2

    import emerge_lib.core.resources as resources
    import emerge_lib.ingest.run as ingest
    from emerge_lib.core.config import load_config
    from emerge_lib.core.errors import EmergeError

    assert load_config().dumps.workers == 0
    monkeypatch.setattr(resources, "cpu_count", lambda: 5)
    asked: list[int] = []

    class StopAtThePool(ingest.WorkerPool):
        def __init__(self, workers: int) -> None:
            asked.append(workers)
            raise EmergeError(f"a pool of {workers} processes")

    monkeypatch.setattr(ingest, "WorkerPool", StopAtThePool)
    dump = write_bz2(tmp_path / "wikidatawiki-20240301-pages-meta-history1.xml-p1p1.bz2", [
        PageSpec(1, "Q1", [Rev(1, "2023-12-01T00:00:00Z", item("Q1", [claim("P31", "Q5", "a")],
                                                              "One"))])])
    where = [] if command[0] == "inspect" else ["--warehouse", str(tmp_path / "wh")]
    out = ["--out", str(tmp_path / "release")] if command[0] == "build" else []
    assert main([*command, "--wikidata", str(dump), *where, *out]) == 1
    assert asked == [5]
    assert capsys.readouterr().err.strip().endswith("emerge: a pool of 5 processes")


#: planted secrets, each from one source: a flag naming an environment variable (a name
#: the redactor does not know), EMERGE__* secrets starting with YAML's special characters
PLANTED = {"MY_ENDPOINT_KEY": "planted-endpoint-key-0123456789",
           "EMERGE__S3__SECRET_ACCESS_KEY": "*planted-s3-secret-0123456789 #tail",
           "EMERGE__CURATION__ADDITIONS__API_KEY": "[planted-llm-key-0123456789"}


def _echoing_endpoint():
    """An OpenAI-style endpoint that refuses every request, quoting the key it was sent
    (as some servers' error bodies do)."""
    import http.server
    import json
    import threading

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            body = json.dumps({"error": {"message": f"invalid api key {key} (key={key})"}})
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_planted_secrets_appear_in_no_output_channel(tmp_path) -> None:
    """Every channel (stdout, stderr with --verbose, every file written) of the commands
    that meet each secret source: `predict edc --api-key-env` against an endpoint that
    echoes the key, `config`, a failing `tables` and the release readers (`query`,
    `validate`, `stats`, `diff`) with EMERGE__* secrets that YAML
    mangled (a `*` one showed minus its first character; a `[` one failed every command
    with "please report it"), and a non-secret override that is not YAML: one line naming
    its variable, the value not shown."""
    import os

    from hubkit import SNAPS, build_release, line

    gold = build_release(tmp_path / "gold", {(SNAPS[0], 1): [line(SNAPS[0], 1, "a", [
        ("E", "Q1", "Q2")])]}, {})
    server = _echoing_endpoint()
    env = {**os.environ, **PLANTED}
    url = f"http://127.0.0.1:{server.server_port}/v1"

    def emerge(*args: str, **more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "emerge_lib.cli", "--verbose", *args],
                              capture_output=True, text=True, env={**env, **more}, timeout=120)

    try:
        runs = [emerge("predict", "edc", "--endpoint", url, "--llm", "m", "--api-key-env",
                       "MY_ENDPOINT_KEY", "--gold", str(gold), "--out", str(tmp_path / "p.jsonl")),
                emerge("config"),
                emerge("tables", "--warehouse", str(tmp_path / "none")),
                # the commands that read a release, with the secrets in their environment
                emerge("query", "--release", str(gold), "SELECT count(*) AS n FROM lines"),
                emerge("validate", "--release", str(gold)),
                emerge("stats", "--release", str(gold)),
                emerge("diff", "--old", str(gold), "--new", str(gold))]
        bad = emerge("config", EMERGE__DUMPS__MIRROR="*planted-not-a-secret-0123")
    finally:
        server.shutdown()
    assert runs[1].returncode == 0 and "**********" in runs[1].stdout, runs[1].stderr[-2000:]
    # the release readers did their work (validate: no gate ran on this release)
    assert [r.returncode for r in runs[3:]] == [0, 1, 0, 0], [r.stderr[-500:] for r in runs[3:]]
    for r in [*runs, bad]:  # (--verbose logs a traceback at DEBUG: by design)
        assert "please report it" not in r.stderr, r.stderr[-3000:]
    assert "401" in runs[0].stderr  # the endpoint's refusal was told, key masked
    printed = "".join(r.stdout + r.stderr for r in [*runs, bad])
    files = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    for secret in PLANTED.values():
        for part in (secret, secret[1:], secret.split(" #")[0]):  # whole, minus a `*`, cut
            assert part not in printed, f"{part[:10]}… printed"
            assert part.encode() not in files, f"{part[:10]}… written"
    lines = [x for x in bad.stderr.splitlines() if x.startswith("emerge:")]
    assert bad.returncode == 2 and len(lines) == 1 and "EMERGE__DUMPS__MIRROR" in lines[0]
    assert "planted-not-a-secret" not in bad.stderr


@pytest.mark.parametrize(("argv", "says"), [
    (["--incr", "2024-03-01"], "--incr 2024-03-01: give FIRST[:LAST] as YYYYMMDD days"),
    (["--incr", "20240302:20240301"], "FIRST not after LAST"),
    (["--incr", "20240301", "--wikidata", "x.bz2"], "give no --wikidata/--wikipedia paths"),
])
def test_ingest_incr_refuses_bad_days_in_one_line(argv: list[str], says: str, tmp_path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from emerge_lib.cli import main

    assert main(["ingest", "--warehouse", str(tmp_path / "wh"), *argv]) != 0
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
