"""The demo through Airflow: the snapshot DAG on the sample world with `airflow dags test`.

``python -m emerge_lib.demo.dagtest --out DIR`` (``make demo-airflow``) generates the demo
world (once), runs ``airflow dags test emerge_snapshot`` on its dump files in a throw-away
Airflow home under DIR (the DAG's own tasks, one process, no scheduler), curating with the
local llama.cpp server when it is installed (through the ``emerge_llm`` connection), and
prints the release folder and what it holds. Airflow is run as a command: the library
never imports it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from emerge_lib.airflow.home import DAGS, airflow_command, airflow_env
from emerge_lib.core.children import dying_with_parent
from emerge_lib.core.errors import EmergeError
from emerge_lib.demo.world import DEMO_BUCKET, DEMO_RELEASES, DemoResult, world_for


class AirflowDemoError(EmergeError):
    """The DAG run failed (its log says why)."""


def s3_connection(server: Any) -> str:
    """The ``emerge_s3`` Airflow connection (the amazon provider's ``aws`` type) of a local
    S3 server, as an ``AIRFLOW_CONN_*`` value: its publisher identity."""
    key, secret = server.credentials["publisher"]
    return json.dumps({"conn_type": "aws", "login": key, "password": secret,
                       "extra": {"endpoint_url": server.endpoint_url,
                                 "region_name": server.region}})


def run_snapshot_dag(world: Path, out: Path, snapshot: str | None = None,
                     curate: bool | None = None, log: Path | None = None,
                     publish_to: str | None = None, s3: Any = None) -> Path:
    """``airflow dags test emerge_snapshot`` on the world's files; returns the release
    folder. ``curate``: with the local LLM server (default: when installed);
    ``publish_to``: publish the release there (``s3``: the local S3 server it is on)."""
    from emerge_lib.core.config import load_config
    from emerge_lib.curation import local_server

    if not (DAGS / "emerge_snapshot.py").is_file():
        raise AirflowDemoError(f"the DAG files are not beside the library ({DAGS}): "
                               "run the demo from a source checkout")
    cfg = load_config(world / "config.yaml")
    t = snapshot or cfg.snapshots.timestamps[0].strftime("%Y-%m-%dT%H:%M:%SZ")
    release = out / "release"
    home = out / "airflow"
    home.mkdir(parents=True, exist_ok=True)
    airflow = str(airflow_command())
    conf = {"snapshot": t, "config": str(world / "config.yaml"), "release_dir": str(release),
            # the mirror holds every history file as .bz2 and .7z (as Wikimedia's): the 7z
            "wikidata_files": [str(p) for p in sorted(world.glob("mirror/wikidatawiki/*/*.7z"))],
            "wikipedia_files": [str(p) for p in sorted(world.glob("mirror/enwiki/*/*.7z"))],
            "publish": publish_to is not None}
    if publish_to is not None:
        conf["release_to"] = publish_to
    extra = {"EMERGE__WAREHOUSE": str(out / "warehouse")}
    with ExitStack() as stack:
        if curate or (curate is None and local_server.available()):
            server = stack.enter_context(local_server.start())
            host, port = server.host_port
            extra["AIRFLOW_CONN_EMERGE_LLM"] = json.dumps({
                "conn_type": "emerge_llm", "host": host, "port": port,
                "extra": {"backend": "llamacpp", "model": server.model, "concurrency": 1}})
            conf["curate"] = True
        else:
            conf["curate"] = False
        if s3 is not None:
            extra["AIRFLOW_CONN_EMERGE_S3"] = s3_connection(s3)
        env = airflow_env(home, **extra)
        logfile = log or out / "airflow-dags-test.log"
        with open(logfile, "w") as fh:
            for cmd in ([airflow, "db", "migrate"],
                        [airflow, "dags", "test", "emerge_snapshot", t[:10], "-c",
                         json.dumps(conf)]):
                print("$", " ".join(cmd[:4]), "…", flush=True)
                if subprocess.run(dying_with_parent(cmd), env=env, stdout=fh,
                                  stderr=subprocess.STDOUT).returncode:
                    raise AirflowDemoError(f"{' '.join(cmd[1:3])} failed; see {logfile}")
        if "state=success" not in logfile.read_text(errors="replace"):
            raise AirflowDemoError(f"the emerge_snapshot run did not succeed; see {logfile}")
    return release


def run_demo_airflow(out: str | Path, seed: int = 1, curate: bool | None = None,
                     publish: bool | None = None,
                     on_generate: Callable[[Path], None] | None = None) -> DemoResult:
    """The demo as its users run it: the ``emerge_snapshot`` DAG (``airflow dags test``,
    ``emerge_lib.demo.dagtest``) on the demo world's first snapshot, curating with the
    local LLM server and publishing to the local S3 server through the DAG's connections
    (each when installed, or as asked), then the release downloaded back and verified,
    and the instances compared with the planted truth of that snapshot."""
    from emerge_lib.catalog import Catalog
    from emerge_lib.core.config import load_config
    from emerge_lib.formats.manifest import read_manifest
    from emerge_lib.publish import download_release, local_s3
    from emerge_lib.sample.compare import built, planted

    started = time.monotonic()
    root = Path(out).resolve()
    world = world_for(root, seed, on_generate)
    cfg = load_config(world / "config.yaml", overrides={"warehouse": str(root / "warehouse")})
    snapshot = cfg.plans()[0].key
    with ExitStack() as stack:
        s3 = None
        if publish or (publish is None and local_s3.available()):
            s3 = stack.enter_context(local_s3.start(root / "s3", buckets=[DEMO_BUCKET]))
        release = run_snapshot_dag(world, root, snapshot, curate,
                                   publish_to=DEMO_RELEASES if s3 else None, s3=s3)
        result = DemoResult(cfg, world, release)
        result.card = read_manifest(release).get("card", [])
        if s3 is not None:
            result.downloaded = download_release(DEMO_RELEASES, root / "downloaded",
                                                 s3.client("reader"))
    got, _ = built(Catalog(cfg.warehouse))
    result.compare({k for k in got if k[0] == snapshot},
                   {k for k in planted(world) if k[0] == snapshot})
    result.seconds = time.monotonic() - started
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m emerge_lib.demo.dagtest",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="demo-airflow", help="output folder (default demo-airflow)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--snapshot", help="ISO timestamp (default: the world's first snapshot)")
    p.add_argument("--no-curate", action="store_true", help="skip LLM curation")
    args = p.parse_args(argv)
    out = Path(args.out).resolve()
    world = world_for(out, args.seed, lambda w: print(f"generating the sample world in {w}"))
    try:
        release = run_snapshot_dag(world, out, args.snapshot, False if args.no_curate else None)
    except EmergeError as exc:
        print(f"emerge: {exc}", file=sys.stderr)
        return 1
    listing = json.loads((release / "release.json").read_text())
    print(f"release:   {release}")
    print(f"snapshots: {', '.join(listing['snapshots'])}")
    print("operation  triples")
    for op, n in sorted(listing["ops"].items()):
        print(f"{op:<10} {n:>7}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
