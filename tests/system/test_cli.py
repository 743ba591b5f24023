"""The fault suite: what a probe of every command with bad input, faults and forged data
tries, run as a user runs it (the ``emerge`` command in a subprocess, the default
settings). Each case asserts one line (never a traceback), no credential in any output
and no process left behind. The forged releases are in system/publish/test_upload.py."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from s3kit import AnyKeyS3, make_release
from worlds import TINY, TINY2

from emerge_lib.catalog import Catalog

EMERGE = [sys.executable, "-m", "emerge_lib.cli"]
SECRETS = {"AWS_ACCESS_KEY_ID": "ASIAFAULTSUITEKEY0001",
           "AWS_SECRET_ACCESS_KEY": "fault-suite-secret-access-key-0123456789",
           "AWS_SESSION_TOKEN": "FwoGZXIvYXdzEFAULTSUITESESSIONTOKEN0123456789abcdef",
           "OPENAI_API_KEY": "sk-fault-suite-api-key-0123456789"}
CONFIG_SECRET = "config-file-secret-value-0123456789"


def emerge(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
           timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EMERGE, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=cwd)


INFO_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ INFO ")


def one_line(run: subprocess.CompletedProcess[str]) -> str:
    """The single ``emerge: …`` line of a failed run (argparse's usage line allowed)."""
    lines = [ln for ln in run.stderr.splitlines() if ln.strip() and not ln.startswith("usage:")
             and not ln.startswith(" ") and not re.search(r"\d+%\|", ln)  # bars
             and not INFO_LINE.match(ln)]  # what the command was doing
    assert run.returncode != 0, run.stdout
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert len(lines) == 1, run.stderr[-3000:]
    return lines[0]


def test_no_credential_in_any_output_or_file_with_verbose(tmp_path: Path) -> None:
    release = tmp_path / "release"
    make_release(release, seed=5, big_mb=0)
    config = tmp_path / "config.yaml"
    config.write_text(f"s3: {{secret_access_key: {CONFIG_SECRET}}}\n"
                      "curation: {additions: {name: m, url: 'http://127.0.0.1:9/v1', "
                      f"api_key: {CONFIG_SECRET}x}}}}\n")
    with AnyKeyS3() as server:
        env = {**SECRETS, "AWS_ENDPOINT_URL": server.endpoint_url,
               "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE": "/nonexistent",
               "AWS_EC2_METADATA_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1"}
        runs = [
            emerge("--verbose", "publish", "--release", str(release), "--to",
                   "s3://releases/creds", "-c", str(config), env=env),
            emerge("--verbose", "download", "--from", "s3://releases/creds", "--to",
                   str(tmp_path / "down"), "-c", str(config), env=env),
            emerge("--verbose", "config", "-c", str(config), env=env),
            emerge("--verbose", "tables", "-c", str(config), "--warehouse",
                   str(tmp_path / "none"), env=env),
            emerge("--verbose", "download", "--from", "s3://releases/none", "--to",
                   str(tmp_path / "none-down"), env=env),
        ]
        sent = server.headers
    assert runs[0].returncode == 0 and runs[1].returncode == 0, runs[0].stderr + runs[1].stderr
    # the credentials were really used (signed requests carry the token) ...
    assert any(SECRETS["AWS_SESSION_TOKEN"] in str(h) for h in sent)
    assert any(SECRETS["AWS_ACCESS_KEY_ID"] in str(h) for h in sent)
    assert any("DEBUG" in r.stderr for r in runs)  # --verbose was on
    # ... and appear in no output and no file written
    printed = "".join(r.stdout + r.stderr for r in runs)
    files = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()
                     and p != config)
    for secret in [*SECRETS.values(), CONFIG_SECRET]:
        assert secret not in printed, f"{secret[:8]}… printed"
        assert secret.encode() not in files, f"{secret[:8]}… written"


def test_argument_errors_are_one_line(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    built = tmp_path / "wh"
    (built / "instances" / "_delta_log").mkdir(parents=True)
    cases = {
        "inspect --at notadate": (["inspect", "statements", "--wikidata", str(a_file), "--at",
                                   "notadate"], "not an ISO 8601 timestamp"),
        "-c a folder": (["config", "-c", str(tmp_path)], "is a folder"),
        "-c not UTF-8": (["config", "-c", str(binary)], "not UTF-8"),
        "sample --out a file": (["sample", "--out", str(a_file)], str(a_file)),
        "sample --items -5": (["sample", "--out", str(tmp_path / "s"), "--items", "-5"],
                              "below 1"),
        "tables, no warehouse": (["tables", "--warehouse", str(tmp_path / "missing")],
                                 "does not exist"),
        "curate, no warehouse": (["curate", "--warehouse", str(tmp_path / "missing")],
                                 "does not exist"),
        "corrupt _delta_log": (["tables", "--warehouse", str(built)], "instances"),
    }
    (built / "instances" / "_delta_log" / "00000000000000000000.json").write_text("{not json\n")
    for name, (args, expected) in cases.items():
        line = one_line(emerge(*args, cwd=tmp_path))
        assert expected in line, f"{name}: {line}"


def test_a_full_disk_is_one_line_naming_the_folder(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(small)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        line = one_line(emerge("sample", "--out", str(small / "world"), "--items", "300"))
        assert "no space left on device under" in line and str(small) in line, line
        subprocess.run(["rm", "-rf", str(small / "world")], check=True)
        # a download into a full disk: the disk's line at once, not the network's retries
        # ("run again to resume", "retrying may succeed")
        make_release(tmp_path / "release", seed=6, big_mb=2)
        with AnyKeyS3() as server:
            env = {"AWS_ENDPOINT_URL": server.endpoint_url, "AWS_ACCESS_KEY_ID": "k",
                   "AWS_SECRET_ACCESS_KEY": "s", "AWS_DEFAULT_REGION": "us-east-1"}
            assert emerge("publish", "--release", str(tmp_path / "release"), "--to",
                          "s3://releases/full", env=env).returncode == 0
            started = time.monotonic()
            down = emerge("download", "--from", "s3://releases/full", "--to",
                          str(small / "down"), env=env)
            took = time.monotonic() - started
        line = one_line(down)
        assert "no space left on device under" in line and str(small) in line, line
        assert "retry" not in line and "resume" not in line and took < 30, (line, took)
    finally:
        subprocess.run(["umount", str(small)], check=True)


def test_kill_9_of_an_ingest_leaves_no_process(worlds, tmp_path: Path) -> None:
    world = worlds.world(TINY2)
    run = subprocess.Popen([*EMERGE, "ingest", "-c", str(world / "config.yaml"),
                            "--warehouse", str(tmp_path / "wh")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, children = time.monotonic() + 120, []
        while time.monotonic() < deadline and run.poll() is None:
            found = [c for c in psutil.Process(run.pid).children(recursive=True)
                     if "python" in c.name()]
            if len(found) >= 3:  # the resource tracker and the default two workers
                children = found
                break
            time.sleep(0.05)
        assert children, "the ingest never started its worker pool"
    finally:
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == [], f"{len(alive)} processes outlived the killed ingest"
    # and the rerun converges
    rerun = emerge("ingest", "-c", str(world / "config.yaml"), "--warehouse",
                   str(tmp_path / "wh"))
    assert rerun.returncode == 0, rerun.stderr[-2000:]


def _cmdlines(procs: list[psutil.Process]) -> list[str]:
    out = []
    for proc in procs:
        with contextlib.suppress(psutil.Error):  # gone meanwhile
            out.append(" ".join(proc.cmdline()))
    return out


def _workers(n: int):
    return lambda lines: sum("multiprocessing" in c or "spawn_main" in c for c in lines) >= n


def _ppmd_7z(folder: Path) -> Path:
    """A Wikidata history file (16,000 revisions) in a 7z archive compressed with PPMd,
    which the lzma module does not decode: emerge reads it through the program 7z (which
    also ends on its broken pipe once its reader is gone, death signal or not)."""
    from dumpbuilder import PageSpec, Rev, claim, item, render

    if shutil.which("7z") is None:
        pytest.skip("no 7z program (apt-get install p7zip-full)")
    pages = [PageSpec(n, f"Q{n}", [
        Rev(n * 100 + r, f"2023-12-{1 + r % 28:02d}T00:00:00Z",
            item(f"Q{n}", [claim("P31", f"Q{r + 2}", f"s{n}-{r}")], label=f"Item {n}"))
        for r in range(40)]) for n in range(1, 401)]
    folder.mkdir(parents=True, exist_ok=True)
    xml = folder / "wikidatawiki-20240101-pages-meta-history1.xml-p1p400"
    xml.write_text(render(pages))
    archive = xml.with_name(xml.name + ".7z")
    subprocess.run(["7z", "a", "-m0=PPMd", "-bd", str(archive), str(xml)], check=True,
                   capture_output=True)
    xml.unlink()
    return archive


#: each command that starts a child: its arguments (under a world and a folder) and what,
#: among its descendants' command lines, shows that its children are up (`annotate` starts
#: none: Label Studio is a service of its own that reads and writes files, and the
#: release readers and `evaluate` run in-process; lbzip2, the other external
#: decompressor, is only used where indexed_bzip2 is not installed)
CHILDREN = {
    "ingest (the worker pool)": (
        lambda world, tmp: ["ingest", "-c", str(world / "config.yaml"), "--warehouse",
                            str(tmp / "wh")], _workers(2)),
    "build --local-llm (llama.cpp)": (
        lambda world, tmp: ["build", "-c", str(world / "config.yaml"), "--warehouse",
                            str(tmp / "wh"), "--out", str(tmp / "rel"), "--local-llm"],
        lambda lines: any("emerge_lib.curation.local_server" in c for c in lines)),
    "curate --local-llm (llama.cpp)": (
        lambda world, tmp: ["curate", "-c", str(world / "config.yaml"), "--warehouse",
                            str(tmp / "wh"), "--out", str(tmp / "rel"), "--local-llm"],
        lambda lines: any("emerge_lib.curation.local_server" in c for c in lines)),
    "demo (weed, llama.cpp, airflow)": (
        lambda world, tmp: ["demo", "--out", str(tmp / "demo")],
        lambda lines: all(any(w in c for c in lines)
                          for w in ("weed", "emerge_lib.curation.local_server", "airflow"))),
    "inspect of a PPMd 7z (the program 7z)": (
        lambda world, tmp: ["inspect", "statements", "--wikidata", str(_ppmd_7z(tmp / "dump")),
                            "--at", "2024-01-01T00:00:00Z"],
        lambda lines: any(c.split()[0].endswith("7z") and " -so " in c for c in lines)),
    "sample --jobs 2 (a fork pool)": (
        lambda world, tmp: ["sample", "--out", str(tmp / "world"), "--items", "3000",
                            "--articles", "600", "--jobs", "2", "--quiet"],
        lambda lines: len(lines) >= 2),
}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
@pytest.mark.parametrize("case", list(CHILDREN))
def test_no_child_outlives_a_killed_or_terminated_command(case: str, sig: signal.Signals,
                                                          worlds, tmp_path: Path) -> None:
    """Each command that starts a child, killed (-9) or terminated (SIGTERM) once its
    children are up: 10 s after it is gone, none of the processes it had started is left
    (the llama.cpp server and weed outlived kill -9 and SIGTERM, and weed's lock then
    failed the next demo). SIGTERM runs Ctrl-C's cleanup: the command says so and exits
    143."""
    from emerge_lib.curation import local_server
    from emerge_lib.publish import local_s3

    if ("llama" in case and not local_server.available()) or \
            ("weed" in case and not local_s3.available()):
        pytest.skip("the local LLM or S3 server is not installed here (make installs both)")
    make_args, started = CHILDREN[case]
    world = worlds.world(TINY2)
    log = (tmp_path / "stderr.log").open("w+")
    run = subprocess.Popen([*EMERGE, *make_args(world, tmp_path)], stdout=subprocess.DEVNULL,
                           stderr=log, text=True)
    tree: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline and run.poll() is None:
            tree = psutil.Process(run.pid).children(recursive=True)
            if started(_cmdlines(tree)):
                break
            time.sleep(0.2)
        else:
            log.seek(0)
            raise AssertionError(f"{case}: the children never started ({run.poll()}): "
                                 f"{log.read()[-2000:]}")
        tree = psutil.Process(run.pid).children(recursive=True)
    finally:
        os.kill(run.pid, sig)
    code = run.wait(120)
    _, alive = psutil.wait_procs(tree, timeout=10)
    assert alive == [], f"{case}: {_cmdlines(alive)} outlived the {sig.name} of their parent"
    if sig == signal.SIGTERM:
        log.seek(0)
        text = log.read()
        assert code == 143 and "emerge: terminated" in text, (code, text[-2000:])
        assert "Traceback" not in text, text[-3000:]


def test_kill_9_in_each_layer_then_a_rerun_gives_the_same_release(worlds, tmp_path: Path
                                                                  ) -> None:
    """`emerge build` killed with SIGKILL in the ingest (after Wikidata, during Wikipedia),
    in a snapshot's stages (during passages) and in the release (while it is written),
    each time on the warehouse and release folder the last one left; the rerun's release
    is, byte for byte, the release of a build never interrupted, and so are its tables."""
    world = worlds.world(TINY)
    env = {"EMERGE__VALIDATION__ENABLED": "false"}  # the gate is its own tests'

    def args(name: str) -> list[str]:
        return ["build", "-c", str(world / "config.yaml"), "--warehouse",
                str(tmp_path / name / "wh"), "--out", str(tmp_path / name / "release")]

    reference = emerge(*args("reference"), env=env)
    assert reference.returncode == 0, reference.stderr[-2000:]
    for after in ("stage ingest_wikidata", "stage deltas", "stage select"):
        run = subprocess.Popen([*EMERGE, *args("killed")], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **env})
        assert run.stderr is not None
        try:
            for line in run.stderr:
                if after in line:
                    break
            else:
                raise AssertionError(f"the build ended before {after!r}: {run.wait()}")
        finally:
            os.kill(run.pid, signal.SIGKILL)
            run.wait()
    rerun = emerge(*args("killed"), env=env)
    assert rerun.returncode == 0, rerun.stderr[-2000:]

    def files(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes()
                for p in sorted(root.rglob("*")) if p.is_file()}

    want, got = files(tmp_path / "reference" / "release"), files(tmp_path / "killed" / "release")
    assert "manifest.json" in want and sorted(got) == sorted(want)
    assert [name for name in want if got[name] != want[name]] == []
    # no half-written release left (the lock file stays: removing a lock file races; the
    # carry-over's fingerprints stay beside it, release/carry.py)
    assert sorted(p.name for p in (tmp_path / "killed").glob(".release.*")) == [
        ".release.carry.json", ".release.lock"]
    killed, clean = Catalog(tmp_path / "killed" / "wh"), Catalog(tmp_path / "reference" / "wh")
    for name in ("statement_timeline", "paragraph_timeline", "stable_statements",
                 "delta_triples", "passages", "instances"):
        assert sorted(map(repr, killed.read_arrow(name).to_pylist())) == \
            sorted(map(repr, clean.read_arrow(name).to_pylist())), name


#: secrets planted in EMERGE__* variables: the S3 keys and both curation routes' API keys
EMERGE_SECRETS = {"EMERGE__S3__ACCESS_KEY_ID": "planted-s3-key-id-0123456789",
                  "EMERGE__S3__SECRET_ACCESS_KEY": "planted-s3-secret-0123456789",
                  "EMERGE__CURATION__ADDITIONS__API_KEY": "planted-additions-key-0123456789",
                  "EMERGE__CURATION__DEPRECATIONS__API_KEY": "planted-deprecations-key-01234"}


def test_planted_secrets_appear_in_no_channel_of_build_curate_evaluate_annotate(
        worlds, tmp_path: Path) -> None:
    """`build`, `curate`, `evaluate` and `annotate` (export, import, agreement) with
    --verbose and the EMERGE__* secrets in their environment: a build whose LLM endpoint
    refuses each request quoting the key it was sent (the stub's "401"), then a curate
    that the same endpoint answers, writing the release the other commands read, and a
    curate by the real llama.cpp server (--local-llm, two requests). No secret in stdout,
    stderr, or any file under the test's folder (the warehouse, the release, the tasks,
    the agreement, and, TMPDIR being in it, the llama.cpp server's log)."""
    import json

    from annotatekit import answers

    from emerge_lib.curation import local_server
    from emerge_lib.curation.stub import StubServer

    world = worlds.world(TINY)
    config, warehouse, release = world / "config.yaml", tmp_path / "wh", tmp_path / "release"
    (tmp_path / "tmp").mkdir()
    env = {**EMERGE_SECRETS, "EMERGE__VALIDATION__ENABLED": "false",
           "TMPDIR": str(tmp_path / "tmp")}
    runs: list[subprocess.CompletedProcess[str]] = []

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        runs.append(emerge("--verbose", *args, env=env, timeout=600))
        return runs[-1]

    with StubServer() as stub:
        stub.faults.extend(["401"] * 10_000)  # every request refused, the key quoted
        refused = run("build", "-c", str(config), "--warehouse", str(warehouse), "--out",
                      str(tmp_path / "refused"), "--llm-url", stub.url)
        # the key was sent, and the refusal's body was told with the key masked
        assert refused.returncode == 1 and "invalid api key *** (key=***)" in \
            refused.stderr, refused.stderr[-3000:]
        stub.faults.clear()
        curated = run("curate", "-c", str(config), "--warehouse", str(warehouse), "--out",
                      str(release), "--llm-url", stub.url)
        assert curated.returncode == 0, curated.stderr[-3000:]
    if local_server.available():  # (make installs it; CI has it)
        env["EMERGE__CURATION__MAX_REQUESTS"] = "2"
        local = run("curate", "-c", str(config), "--warehouse", str(warehouse), "--local-llm")
        del env["EMERGE__CURATION__MAX_REQUESTS"]
        assert local.returncode == 0, local.stderr[-3000:]
        assert list((tmp_path / "tmp").glob("emerge-llm-*.log"))  # its log, grepped below
    lines = [json.loads(x) for f in sorted(release.glob("**/delta_*.jsonl"))
             for x in f.read_text().splitlines()]
    assert lines, "the release holds no line"
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({
        "hash_id": x["hash_id"], "model": "echo", "predicted": [
            {"triple": t["triple"], "triple_labels": t["triple_labels"], "operation": None}
            for t in x["tkgu_triples"]]}) + "\n" for x in lines))
    scored = run("evaluate", "--gold", str(release), "--predictions", str(predictions),
                 "--metrics", "recall", "--gold-filter", "all", "--out", str(tmp_path / "eval"))
    assert scored.returncode == 0, scored.stderr[-3000:]
    tasks = tmp_path / "tasks"
    exported = run("annotate", "export", "--release", str(release), "--per-op", "3",
                   "--out", str(tasks))
    assert exported.returncode == 0, exported.stderr[-3000:]
    export = tmp_path / "export.json"
    export.write_text(json.dumps(answers(json.loads((tasks / "tasks.json").read_text()),
                                         {1: "annotator_1", 2: "annotator_2"})))
    imported = run("annotate", "import", "--release", str(release), "--from", str(export),
                   "--annotator", "1=annotator_1", "--annotator", "2=annotator_2")
    assert imported.returncode == 0, imported.stderr[-3000:]
    agreed = run("annotate", "agreement", "--annotations", str(release), "--out",
                 str(tmp_path / "agreement"))
    assert agreed.returncode == 0, agreed.stderr[-3000:]
    assert any("DEBUG" in r.stderr for r in runs)  # --verbose was on
    for r, secret in ((r, s) for r in runs for s in EMERGE_SECRETS.values()):
        assert secret not in r.stdout + r.stderr, f"{r.args[3:5]}: {secret[:12]}… printed"
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for secret in EMERGE_SECRETS.values():
            assert secret.encode() not in data, f"{secret[:12]}… written in {path}"
