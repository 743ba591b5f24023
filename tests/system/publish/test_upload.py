"""emerge publish / emerge download against a real S3 server (SeaweedFS on 127.0.0.1):
round trip, resume both ways, corruption, credentials, a missing bucket, the validation
gate, republishing, publishers racing on ``latest``, the download filters, and
``load_release`` / ``emerge query`` on a published release (fetched once into a cache)."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from s3kit import (
    BUCKET,
    LEAKED_KEYS,
    PASSED,
    PUBLIC_BUCKET,
    cli_env,
    client_of,
    keys,
    make_release,
    watch,
)

from emerge_lib.catalog import Catalog
from emerge_lib.cli import main
from emerge_lib.core.config import ReleaseSettings, load_config
from emerge_lib.core.stage import StageContext
from emerge_lib.formats.manifest import MANIFEST, read_manifest, verify_release
from emerge_lib.pipeline.runner import build_steps, run_stage
from emerge_lib.publish import (
    PublishReport,
    ReleaseGateError,
    S3AccessError,
    S3NotFoundError,
    TransferError,
    download_release,
)

PART_MB = 5


def publish(release: Path, to: str, client: Any, tmp_path: Path, **settings: Any) -> PublishReport:
    """The publish stage through the registry, as every caller runs it."""
    cfg = load_config(overrides={"publish": {"to": to, "part_size_mb": PART_MB, **settings}})
    ctx = StageContext(cfg, Catalog(tmp_path / "warehouse"), release_dir=release,
                       s3_client=client)
    return run_stage(ctx, "publish").detail


def files_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def latest(server: Any, prefix: str) -> dict[str, Any]:
    body = server.client("admin").get_object(Bucket=BUCKET, Key=f"{prefix}/latest")["Body"]
    return json.loads(body.read())


def test_round_trip_through_the_cli(s3_server: Any, tmp_path: Path, monkeypatch, capsys) -> None:
    release = tmp_path / "release"
    manifest = make_release(release)
    version = manifest["version"]
    cli_env(monkeypatch, s3_server, "publisher")
    assert main(["publish", "--release", str(release), "--to", f"s3://{BUCKET}/rt",
                 "--part-size-mb", str(PART_MB)]) == 0
    published = capsys.readouterr()
    assert f"published {version}" in published.out and "11 of 11 files uploaded" in published.out
    secret = s3_server.credentials["publisher"][1]
    assert secret not in published.out + published.err
    # the layout: every file under v/<version>/, the manifest among them, then latest
    assert keys(s3_server, BUCKET, "rt/") == sorted(
        [f"rt/v/{version}/{f['path']}" for f in manifest["files"]]
        + [f"rt/v/{version}/{MANIFEST}", "rt/latest"])
    pointer = latest(s3_server, "rt")
    assert pointer["version"] == version
    assert pointer["manifest_sha256"] == hashlib.sha256((release / MANIFEST).read_bytes()).hexdigest()
    assert [p["version"] for p in pointer["published"]] == [version]
    head = s3_server.client("admin").head_object(
        Bucket=BUCKET, Key=f"rt/v/{version}/corpus/snapshot_all/passages.jsonl", ChecksumMode="ENABLED")
    assert head["ChecksumType"] == "COMPOSITE" and head["ChecksumSHA256"].endswith("-3")
    big = next(f for f in manifest["files"] if f["path"] == "corpus/snapshot_all/passages.jsonl")
    assert head["Metadata"]["sha256"] == big["sha256"]  # the real sha256 beside the composite

    out = tmp_path / "download"
    assert main(["download", "--from", f"s3://{BUCKET}/rt", "--to", str(out)]) == 0
    assert "11 files verified" in capsys.readouterr().out
    assert files_of(out) == files_of(release)  # byte-identical, manifest included
    assert verify_release(out).ok


def test_republishing_sends_nothing(s3_server: Any, tmp_path: Path) -> None:
    release = tmp_path / "release"
    make_release(release, seed=2)
    first = publish(release, f"s3://{BUCKET}/again", client_of(s3_server), tmp_path)
    assert first.uploaded_files == 11 and first.latest_changed
    client = client_of(s3_server)
    requests = watch(client)
    second = publish(release, f"s3://{BUCKET}/again", client, tmp_path)
    assert second.already_published and not second.latest_changed
    assert second.uploaded_files == 0 and requests.writes == []
    # bucket, manifest, latest, and the check of what the bucket holds: a listing, a HEAD
    # per file (its stored checksum), one more per multipart file (its first part's size)
    assert sum(requests.ops.values()) <= 4 + 11 + 2


def test_a_republish_repairs_a_damaged_publication(s3_server: Any, tmp_path: Path,
                                                   monkeypatch, capsys) -> None:
    """An object of a published version changed (same size, its ``sha256`` metadata
    forged to the manifest's) and another deleted: every download failed on them while a
    republish said "already published, nothing uploaded". The republish checks each
    object's stored checksum, sends those two again, and the download is byte-identical."""
    release = tmp_path / "release"
    manifest = make_release(release, seed=6)
    target = f"s3://{BUCKET}/damaged"
    publish(release, target, client_of(s3_server), tmp_path)
    admin = s3_server.client("admin")
    changed, deleted = "corpus/snapshot_2024-01-01/delta_2024-01-08.jsonl", \
        "corpus/snapshot_all/passages.jsonl"  # a small file, and a multipart one
    entry = next(f for f in manifest["files"] if f["path"] == changed)
    data = bytearray((release / changed).read_bytes())
    data[100] ^= 0x01
    admin.put_object(Bucket=BUCKET, Key=f"damaged/v/{manifest['version']}/{changed}",
                     Body=bytes(data), Metadata={"sha256": entry["sha256"]})
    admin.delete_object(Bucket=BUCKET, Key=f"damaged/v/{manifest['version']}/{deleted}")
    again = publish(release, target, client_of(s3_server), tmp_path)
    assert again.already_published and again.uploaded_files == 2
    assert "repaired" in again.brief() and "repaired 2 files" in " ".join(again.notes)
    cli_env(monkeypatch, s3_server, "reader")
    out = tmp_path / "download"
    assert main(["download", "--from", target, "--to", str(out)]) == 0
    assert files_of(out) == files_of(release)
    third = publish(release, target, client_of(s3_server), tmp_path)
    assert third.uploaded_files == 0  # repaired once and for all


def test_an_interrupted_upload_resumes_with_what_is_missing(s3_server: Any,
                                                            tmp_path: Path) -> None:
    from botocore.exceptions import ConnectionClosedError

    release = tmp_path / "release"
    manifest = make_release(release, seed=3)
    target = f"s3://{BUCKET}/cut"
    client = client_of(s3_server, retries=0)
    parts_sent = []

    def cut_after_two_parts(request: Any, **_: Any) -> None:
        if len(parts_sent) >= 2:
            raise ConnectionClosedError(endpoint_url=request.url)
        parts_sent.append(request.url)

    client.meta.events.register("before-send.s3.UploadPart", cut_after_two_parts)
    with pytest.raises(TransferError, match="run again|cannot reach|Connection"):
        publish(release, target, client, tmp_path, workers=1)
    version = manifest["version"]
    left = keys(s3_server, BUCKET, "cut/")
    assert f"cut/v/{version}/{MANIFEST}" not in left and "cut/latest" not in left

    client = client_of(s3_server)
    requests = watch(client)
    report = publish(release, target, client, tmp_path)
    assert report.resumed_parts == 2 and requests.ops["UploadPart"] == 1  # only the third
    assert requests.ops["CreateMultipartUpload"] == 0
    small_before = [k for k in left if not k.endswith("passages.jsonl")]
    # the small files already there were not sent again; the rest was, with the manifest
    assert requests.ops["PutObject"] == (len(manifest["files"]) - 1 - len(small_before)) + 2
    out = tmp_path / "download"
    download_release(target, out, client_of(s3_server))
    assert files_of(out) == files_of(release)


def test_an_interrupted_download_continues_its_part_file(s3_server: Any, tmp_path: Path) -> None:
    from botocore.exceptions import ResponseStreamingError

    release = tmp_path / "release"
    make_release(release, seed=4)
    target = f"s3://{BUCKET}/dl-cut"
    publish(release, target, client_of(s3_server), tmp_path)
    big = "corpus/snapshot_all/passages.jsonl"
    cut_at = 3 << 20

    class CutBody:
        def __init__(self, body: Any) -> None:
            self.body = body

        def iter_chunks(self, size: int):
            sent = 0
            for chunk in self.body.iter_chunks(size):
                if sent + len(chunk) > cut_at:
                    yield chunk[:cut_at - sent]
                    raise ResponseStreamingError(error="connection reset by peer")
                sent += len(chunk)
                yield chunk

    def cut(http_response: Any, parsed: Any, model: Any, **kwargs: Any) -> None:
        if "ContentRange" not in parsed and parsed.get("ContentLength", 0) > cut_at:
            parsed["Body"] = CutBody(parsed["Body"])

    client = client_of(s3_server)
    client.meta.events.register("after-call.s3.GetObject", cut)
    out = tmp_path / "download"
    with pytest.raises(TransferError, match="run again to resume"):
        download_release(target, out, client, retries=0)
    assert not (out / big).exists() and (out / f"{big}.part").stat().st_size == cut_at
    assert not (out / MANIFEST).exists()

    client = client_of(s3_server)
    requests = watch(client)
    report = download_release(target, out, client)
    assert report.resumed_files == 1
    assert [r for _, r in requests.ranges] == [f"bytes={cut_at}-"]
    assert files_of(out) == files_of(release) and not list(out.rglob("*.part"))

    # a dropped connection inside one run is continued by that run
    client = client_of(s3_server)
    client.meta.events.register("after-call.s3.GetObject", cut)
    requests = watch(client)
    again = tmp_path / "again"
    assert download_release(target, again, client, retries=2).downloaded_files == 11
    assert [r for _, r in requests.ranges] == [f"bytes={cut_at}-"]
    assert files_of(again) == files_of(release)


def test_a_corrupted_object_fails_the_download_clearly(s3_server: Any, tmp_path: Path,
                                                       monkeypatch, capsys) -> None:
    release = tmp_path / "release"
    manifest = make_release(release, seed=5, big_mb=0)
    publish(release, f"s3://{BUCKET}/bad", client_of(s3_server), tmp_path)
    path = "corpus/snapshot_2024-01-01/delta_2024-01-08.jsonl"
    data = bytearray((release / path).read_bytes())
    data[100] ^= 0x01  # one bit, same size
    s3_server.client("admin").put_object(
        Bucket=BUCKET, Key=f"bad/v/{manifest['version']}/{path}", Body=bytes(data))
    cli_env(monkeypatch, s3_server, "reader")
    out = tmp_path / "download"
    assert main(["download", "--from", f"s3://{BUCKET}/bad", "--to", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("emerge: ") and path in err and "sha256" in err
    assert not (out / path).exists() and not (out / f"{path}.part").exists()
    assert not (out / MANIFEST).exists()


def test_wrong_or_missing_credentials_are_refused(s3_server: Any, tmp_path: Path,
                                                  monkeypatch) -> None:
    import boto3

    from emerge_lib.core.config import S3Settings
    from emerge_lib.publish import make_client

    release = tmp_path / "release"
    make_release(release, seed=6, big_mb=0)
    target = f"s3://{BUCKET}/creds"
    key, _ = s3_server.credentials["publisher"]
    settings = S3Settings(endpoint_url=s3_server.endpoint_url)
    wrong_secret = make_client(settings, session=boto3.Session(
        aws_access_key_id=key, aws_secret_access_key="not-the-secret", region_name="us-east-1"))
    with pytest.raises(S3AccessError, match="secret key does not match"):
        publish(release, target, wrong_secret, tmp_path)
    # the developer's own keys in the server's environment did not become an identity
    leaked = make_client(settings, session=boto3.Session(
        aws_access_key_id=LEAKED_KEYS[0], aws_secret_access_key=LEAKED_KEYS[1],
        region_name="us-east-1"))
    with pytest.raises(S3AccessError, match="access key is unknown"):
        publish(release, target, leaked, tmp_path)
    with pytest.raises(S3AccessError, match="access denied"):
        publish(release, target, client_of(s3_server, "reader"), tmp_path)
    cli_env(monkeypatch, s3_server, None)  # no credentials anywhere
    with pytest.raises(S3AccessError, match="no AWS credentials found"):
        publish(release, target, None, tmp_path)
    assert keys(s3_server, BUCKET, "creds/") == []


def test_a_missing_bucket_is_an_error_not_a_new_bucket(s3_server: Any, tmp_path: Path) -> None:
    release = tmp_path / "release"
    make_release(release, seed=7, big_mb=0)
    with pytest.raises(S3NotFoundError, match="bucket 'no-such-bucket' does not exist"):
        publish(release, "s3://no-such-bucket/x", client_of(s3_server), tmp_path)
    with pytest.raises(S3NotFoundError, match="bucket 'no-such-bucket' does not exist"):
        download_release("s3://no-such-bucket/x", tmp_path / "out", client_of(s3_server))
    buckets = {b["Name"] for b in s3_server.client("admin").list_buckets()["Buckets"]}
    assert "no-such-bucket" not in buckets


@pytest.mark.parametrize("case", ["no validation", "failed", "changed file",
                                  "edited, manifest rewritten"])
def test_the_gate_refuses_and_sends_nothing(s3_server: Any, tmp_path: Path, monkeypatch,
                                            capsys, case: str) -> None:
    release = tmp_path / "release"
    failed = {"success": False, "results": "validation/results.json",
              "suites": {"instances": {"success": False}, "kg_triples": {"success": True}}}
    make_release(release, seed=8, big_mb=0, validation={
        "no validation": None, "failed": failed}.get(case, {"success": True}))
    if case == "changed file":
        (release / "README.md").write_text("# edited after the build\n")
    if case == "edited, manifest rewritten":  # the manifest's own verdict said publishable
        from emerge_lib.formats.manifest import write_manifest

        path = "corpus/snapshot_2024-01-01/delta_2024-01-08.jsonl"
        (release / path).write_bytes(b'{"hash_id": "forged", "passage": "x"}\n')
        manifest = read_manifest(release)
        write_manifest(release, [f["path"] for f in manifest["files"]],
                       meta={"validation": manifest["validation"]})
    prefix = f"gate-{case.replace(' ', '-')}"
    cli_env(monkeypatch, s3_server, "publisher")
    assert main(["publish", "--release", str(release), "--to", f"s3://{BUCKET}/{prefix}"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("emerge: refusing to publish")
    assert {"no validation": "no validation results", "failed": "failed: instances",
            "changed file": "1 changed (README.md)",
            "edited, manifest rewritten": "1 files are not the ones its validation checked "
                                          "(corpus/snapshot_2024-01-01/delta_2024-01-08.jsonl)"
            }[case] in err[0]
    assert keys(s3_server, BUCKET, f"{prefix}/") == []
    with pytest.raises(ReleaseGateError):
        publish(release, f"s3://{BUCKET}/{prefix}", client_of(s3_server), tmp_path)


def test_publishers_racing_on_latest_both_end_consistent(s3_server: Any, tmp_path: Path) -> None:
    target = f"s3://{BUCKET}/race"
    a, b = tmp_path / "a", tmp_path / "b"
    va = make_release(a, seed=10, big_mb=0)["version"]
    vb = make_release(b, seed=11, big_mb=0)["version"]
    client = client_of(s3_server)
    interleaved = []

    def b_wins_meanwhile(request: Any, **_: Any) -> None:
        # A read latest and is about to write it: B publishes completely in between
        if request.url.split("?")[0].endswith("/race/latest") and not interleaved:
            interleaved.append(publish(b, target, client_of(s3_server), tmp_path))

    client.meta.events.register("before-send.s3.PutObject", b_wins_meanwhile)
    report_a = publish(a, target, client, tmp_path)
    assert interleaved and interleaved[0].latest_changed and report_a.latest_changed
    pointer = latest(s3_server, "race")
    assert [p["version"] for p in pointer["published"]] == [vb, va]  # nobody's entry lost
    assert pointer["version"] == va

    # free-running: four publishers at once, each ends with its entry and a sound latest
    releases = [tmp_path / f"r{i}" for i in range(4)]
    versions = [make_release(r, seed=20 + i, big_mb=0)["version"] for i, r in enumerate(releases)]
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def go(release: Path) -> None:
        try:
            barrier.wait()
            publish(release, target, client_of(s3_server), tmp_path / release.name)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(r,)) for r in releases]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    pointer = latest(s3_server, "race")
    assert sorted(p["version"] for p in pointer["published"][2:]) == sorted(versions)
    assert pointer["version"] == pointer["published"][-1]["version"]
    got = download_release(target, tmp_path / "latest", client_of(s3_server))
    assert got.version == pointer["version"] and got.downloaded_files == 10


def test_filters_and_versions(s3_server: Any, tmp_path: Path) -> None:
    target = f"s3://{BUCKET}/filters"
    old, new = tmp_path / "old", tmp_path / "new"
    v_old = make_release(old, seed=30, big_mb=0)["version"]
    v_new = make_release(new, seed=31, big_mb=0)["version"]
    publish(old, target, client_of(s3_server), tmp_path)
    publish(new, target, client_of(s3_server), tmp_path)
    client = client_of(s3_server, "reader")

    def fetched(out: Path, **kw: Any) -> list[str]:
        report = download_release(target, out, client, **kw)
        assert read_manifest(out)["version"] == report.version
        return sorted(p for p in files_of(out) if p != MANIFEST)

    assert fetched(tmp_path / "d1", snapshots=["2024-04-01T00:00:00Z"]) == [
        "corpus/snapshot_2024-04-01/delta_2024-04-08.jsonl",
        "evaluation_set/snapshot_2024-04-01/delta_2024-04-08.jsonl",
        "kg_snapshots/kg_snapshot_2024-04-01.tsv.gz",
        "kg_snapshots/snapshot_2024-04-01/kg_triples.parquet"]
    assert fetched(tmp_path / "d2", evaluation_set_only=True) == [
        "evaluation_set/snapshot_2024-01-01/delta_2024-01-08.jsonl",
        "evaluation_set/snapshot_2024-04-01/delta_2024-04-08.jsonl"]
    assert fetched(tmp_path / "d3", evaluation_set_only=True, snapshots=["2024-01-01"]) == [
        "evaluation_set/snapshot_2024-01-01/delta_2024-01-08.jsonl"]
    assert read_manifest(tmp_path / "d3")["version"] == v_new  # latest by default
    files = fetched(tmp_path / "d4", version=v_old)
    assert {p: b for p, b in files_of(tmp_path / "d4").items()} == files_of(old) and files
    with pytest.raises(S3NotFoundError, match="no snapshot 2023-01-01 in this release; it "
                                              "has 2024-01-01, 2024-04-01"):
        download_release(target, tmp_path / "d5", client, snapshots=["2023-01-01"])
    with pytest.raises(S3NotFoundError, match=f"no such version; published: .*{v_old}"):
        download_release(target, tmp_path / "d6", client, version="0123456789abcdef")
    with pytest.raises(S3NotFoundError, match="nothing published there"):
        download_release(f"s3://{BUCKET}/nothing-here", tmp_path / "d7", client)
    # latest gone (a publish stopped before it, or deleted): the versions the prefix holds
    prefix = target.removeprefix(f"s3://{BUCKET}/")
    s3_server.client("admin").delete_object(Bucket=BUCKET, Key=f"{prefix}/latest")
    with pytest.raises(S3NotFoundError, match=f"no latest pointer, but the prefix holds "
                                              f"versions .*{v_old}.*--version"):
        download_release(target, tmp_path / "d8", client)


def test_a_public_bucket_needs_no_credentials(s3_server: Any, tmp_path: Path, monkeypatch,
                                              capsys) -> None:
    release = tmp_path / "release"
    make_release(release, seed=40, big_mb=0)
    publish(release, f"s3://{PUBLIC_BUCKET}/emerge", s3_server.client("admin"), tmp_path)
    cli_env(monkeypatch, s3_server, None)
    out = tmp_path / "download"
    assert main(["download", "--from", f"s3://{PUBLIC_BUCKET}/emerge", "--to", str(out),
                 "--no-sign-request", "--evaluation-set-only"]) == 0
    assert "2 files verified" in capsys.readouterr().out
    assert verify_release(out, [p for p in files_of(out) if p != MANIFEST]).ok
    other = tmp_path / "other"  # anonymous may read, not write
    make_release(other, seed=41, big_mb=0)
    with pytest.raises(S3AccessError):
        publish(other, f"s3://{PUBLIC_BUCKET}/emerge", client_of(s3_server, None), tmp_path)


def test_a_build_publishes_after_the_release_when_configured(tmp_path: Path) -> None:
    cfg = load_config(overrides={"snapshots": {"timestamps": ["2024-01-01T00:00:00Z"]}})
    ctx = StageContext(cfg, Catalog(tmp_path), release_dir=tmp_path / "out")
    assert [n for n, _ in build_steps(ctx)][-1] == "release"
    cfg = load_config(overrides={"snapshots": {"timestamps": ["2024-01-01T00:00:00Z"]},
                                 "publish": {"to": "s3://bucket/emerge"}})
    ctx = StageContext(cfg, Catalog(tmp_path), release_dir=tmp_path / "out")
    assert [n for n, _ in build_steps(ctx)][-2:] == ["release", "publish"]
    with pytest.raises(Exception, match="publish.to must be a URL with scheme s3"):
        load_config(overrides={"publish": {"to": "https://bucket/emerge"}})


def test_the_local_server_listens_on_loopback_only(s3_server: Any) -> None:
    """weed mini on 127.0.0.1 only, on the ports it was given (WebDAV, Iceberg, Lance and
    the admin UI off), with the identities file readable by its owner alone."""
    import psutil

    from emerge_lib.publish.local_s3 import PORT_FLAGS

    listening = [c.laddr for c in psutil.Process(s3_server.pid).net_connections("inet")
                 if c.status == psutil.CONN_LISTEN]
    assert listening and {a.ip for a in listening} == {"127.0.0.1"}
    assert len({a.port for a in listening}) <= len(PORT_FLAGS)
    assert int(s3_server.endpoint_url.rsplit(":", 1)[1]) in {a.port for a in listening}
    config = s3_server.directory / "s3-identities.json"
    assert config.stat().st_mode & 0o077 == 0


def test_a_killed_publish_is_continued_by_the_next_one(s3_server: Any, tmp_path: Path) -> None:
    """SIGKILL in the middle of a multipart upload, then the same command again: the parts
    already in the bucket are kept, the rest is sent, and the download verifies."""
    import os
    import signal
    import subprocess
    import sys
    import time

    release = tmp_path / "release"
    manifest = make_release(release, seed=50, big_mb=30)
    version = manifest["version"]
    env = {**os.environ, **s3_server.environment("publisher"), "AWS_EC2_METADATA_DISABLED": "true"}
    cmd = [sys.executable, "-m", "emerge_lib.cli", "publish", "--release", str(release), "--to",
           f"s3://{BUCKET}/killed", "--part-size-mb", str(PART_MB), "--workers", "1"]
    admin = s3_server.client("admin")
    key = f"killed/v/{version}/corpus/snapshot_all/passages.jsonl"
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kept = 0
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and kept < 2:
            uploads = admin.list_multipart_uploads(Bucket=BUCKET, Prefix=key).get("Uploads", [])
            if uploads:
                parts = admin.list_parts(Bucket=BUCKET, Key=key, UploadId=uploads[0]["UploadId"])
                kept = len(parts.get("Parts", []))
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL and kept >= 2
    assert f"killed/v/{version}/{MANIFEST}" not in keys(s3_server, BUCKET, "killed/")

    client = client_of(s3_server)
    requests = watch(client)
    report = publish(release, f"s3://{BUCKET}/killed", client, tmp_path)
    assert report.resumed_parts >= 2 and requests.ops["CreateMultipartUpload"] == 0
    assert requests.ops["UploadPart"] == 6 - report.resumed_parts  # 30 MiB in 5 MiB parts
    out = tmp_path / "download"
    download_release(f"s3://{BUCKET}/killed", out, client_of(s3_server))
    assert files_of(out) == files_of(release)


def _forged_paths(victim: Path) -> dict[str, bytes]:
    return {"README.md": b"# a release\n",
            "corpus/snapshot_2024-01-01/delta_2024-01-08.jsonl": b'{"hash_id": "1"}\n',
            "../../escaped.txt": b"written outside --to\n",
            str(victim): b"overwritten\n"}


@pytest.mark.parametrize("server", ["seaweedfs", "any-key"])
def test_a_forged_release_writes_nothing_outside_the_target(server: str, s3_server: Any,
                                                             tmp_path: Path, capsys) -> None:
    """A manifest naming absolute and '..' paths, its hashes self-consistent, served by
    the project's SeaweedFS and by a server that keeps any key as AWS does: download
    refuses it as a whole with one line, and writes nothing anywhere."""
    from s3kit import AnyKeyS3, plant_forgery

    victim = tmp_path / "home" / ".bashrc"
    victim.parent.mkdir()
    victim.write_bytes(b"the user's own file\n")
    out = tmp_path / "area" / "sub" / "download"
    before = files_of(tmp_path)
    stand_in = AnyKeyS3() if server == "any-key" else None
    try:
        if stand_in is not None:
            client = stand_in.client()
            plant_forgery(lambda k, b: stand_in.put(BUCKET, k, b), "forged", _forged_paths(victim))
        else:
            admin = s3_server.client("admin")
            client = client_of(s3_server)
            paths = {p: b for p, b in _forged_paths(victim).items() if not p.startswith("..")}
            plant_forgery(lambda k, b: admin.put_object(Bucket=BUCKET, Key=k, Body=b),
                          "forged", paths)
        with pytest.raises(Exception, match="refusing the release: file path") as err:
            download_release(f"s3://{BUCKET}/forged", out, client)
        assert "\n" not in str(err.value)
        if stand_in is not None:  # only the pointer and the manifest were read
            assert [k.rsplit("/", 1)[-1] for k in stand_in.requests] == ["latest", MANIFEST]
    finally:
        if stand_in is not None:
            stand_in.stop()
    assert files_of(tmp_path) == before  # nothing written, not even --to
    assert not out.exists() and victim.read_bytes() == b"the user's own file\n"


def test_a_link_in_the_target_does_not_lead_a_download_out(s3_server: Any, tmp_path: Path) -> None:
    release = tmp_path / "release"
    make_release(release, seed=7, big_mb=0)
    client = client_of(s3_server)
    publish(release, f"s3://{BUCKET}/linked", client, tmp_path)
    out, elsewhere = tmp_path / "download", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "corpus").symlink_to(elsewhere)
    with pytest.raises(Exception, match="symbolic link"):
        download_release(f"s3://{BUCKET}/linked", out, client)
    assert list(elsewhere.iterdir()) == []


def test_a_consumer_pins_the_version_they_reviewed(s3_server: Any, tmp_path: Path, monkeypatch,
                                                   capsys) -> None:
    first, second = tmp_path / "r1", tmp_path / "r2"
    make_release(first, seed=11, big_mb=0)
    make_release(second, seed=12, big_mb=0)
    cli_env(monkeypatch, s3_server, "publisher")
    to = f"s3://{BUCKET}/pinned"
    assert main(["publish", "--release", str(first), "--to", to]) == 0
    printed = capsys.readouterr().out
    reviewed = read_manifest(first)["version"]
    sha = hashlib.sha256((first / MANIFEST).read_bytes()).hexdigest()
    assert f"manifest sha256 {sha}" in printed
    assert main(["publish", "--release", str(second), "--to", to]) == 0
    capsys.readouterr()
    # latest moved on: the pin refuses it, nothing fetched
    assert main(["download", "--from", to, "--to", str(tmp_path / "d1"),
                 "--expect-version", reviewed]) == 1
    err = capsys.readouterr().err
    assert f"not the version you expect ({reviewed})" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "d1").exists()
    assert main(["download", "--from", to, "--to", str(tmp_path / "d2"), "--version", reviewed,
                 "--manifest-sha256", sha]) == 0
    assert files_of(tmp_path / "d2") == files_of(first)
    assert main(["download", "--from", to, "--to", str(tmp_path / "d3"),
                 "--manifest-sha256", sha]) == 1
    assert "you pinned" in capsys.readouterr().err


def test_load_release_fetches_a_published_release_once(s3_server: Any, tmp_path: Path,
                                                       capsys) -> None:
    """``load_release("s3://…")``: the latest version fetched verified into the cache, read
    as the local folder reads; later calls ask only for ``latest`` and the manifest (their
    time is benchmarks/load_release.py's); a pinned version already cached sends no request; a snapshot asks
    for that snapshot's files only; ``emerge query`` reads the same release."""

    from hubkit import SNAPS, build_release, check_load_release, jsonl_truth, line

    from emerge_lib.hub import load_release, version_of

    a = line(SNAPS[0], 1, "a", [("E", "Q1", "Q2"), ("X", "Q1", "Q3")], verdict=True)
    b = line(SNAPS[0], 1, "b", [("D", "Q2", "Q3")])
    c = line(SNAPS[1], 1, "c", [("EE", "Q9", "Q1")])
    release = build_release(tmp_path / "release", {(SNAPS[0], 1): [a, b], (SNAPS[1], 1): [c]},
                            {(SNAPS[0], 1): [b]}, meta={"validation": PASSED},
                            derived=ReleaseSettings())  # the splits and context, as a build has
    url = f"s3://{BUCKET}/hub"
    version = publish(release, url, client_of(s3_server), tmp_path).version
    client, cache = client_of(s3_server, "reader"), tmp_path / "cache"
    requests = watch(client)
    first = load_release(url, format="arrow", cache_dir=cache, client=client)
    assert first.equals(load_release(release, format="arrow")) and version_of(first) == version
    folder = cache / BUCKET / "hub" / version
    # latest, the manifest (read again by the download it hands the version to), each file
    assert verify_release(folder).ok and requests.ops["GetObject"] == 3 + len(
        read_manifest(release)["files"])
    for _ in range(3):  # from the cache: only latest and the manifest are asked for
        before = requests.ops["GetObject"]
        again = load_release(url, cache_dir=cache, client=client)
        assert requests.ops["GetObject"] - before == 2
    assert again.num_rows == 3 and version_of(again) == version
    before = sum(requests.ops.values())
    pinned = load_release(f"{url}/v/{version}", kind="triples", format="pandas",
                          cache_dir=cache, client=client)
    assert len(pinned) == 4 and sum(requests.ops.values()) == before
    check_load_release(url, jsonl_truth(release), cache_dir=cache, client=client)
    # one snapshot into a fresh cache: its files only
    one = load_release(url, snapshot="2024-04-01", format="pandas",
                       cache_dir=tmp_path / "one", client=client)
    assert list(one["hash_id"]) == [c["hash_id"]]
    fetched = {p.relative_to(tmp_path / "one" / BUCKET / "hub" / version).as_posix()
               for p in (tmp_path / "one").rglob("*") if p.is_file()}
    assert fetched and all("2024-04-01" in p or p == MANIFEST for p in fetched)
    cli_env_for_reader = s3_server.environment("reader")
    with pytest.MonkeyPatch.context() as env:
        for name, value in cli_env_for_reader.items():
            env.setenv(name, value)
        env.setenv("EMERGE__S3__ENDPOINT_URL", s3_server.endpoint_url)
        assert main(["query", "--release", url, "--cache-dir", str(cache), "--format", "csv",
                     "SELECT operation, count(*) AS n FROM operations GROUP BY ALL "
                     "ORDER BY ALL"]) == 0
    assert capsys.readouterr().out == "operation,n\nd-triples,1\ne-triples,1\nee-triples,1\n" \
        "x-triples,1\n"
