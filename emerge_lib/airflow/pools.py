"""The Airflow pools (and Celery queues) of curation, one per model: the additions model
(Llama-3.1-8B class, one GPU a server) and the deprecations model (Llama-3.1-405B class,
a node of 8 GPUs a server) are served, sized and scaled apart, so each route's curate
task waits in a pool of its own, with one slot per server of that route
(``curation.<route>.workers``): a snapshot run holding the deprecations model never
blocks another run's additions. The final judge's tasks (``final_judge_<route>``, after
``select``) wait in the same pools: the one of the route it asks (``curation.final_judge``,
the deprecations model by default) asks, the other has nothing to. The same name is the
task's Celery queue, so a worker near a model's GPUs can serve that queue alone (``airflow
celery worker --queues``).

``python -m emerge_lib.airflow.pools [-c CONFIG]`` prints the pools as the JSON of
``airflow pools import`` (``make airflow`` and the deployment's airflow-init import it
before anything is scheduled: a task naming a missing pool waits forever). It reads the
configuration (``$EMERGE_CONFIG`` and ``EMERGE__*`` as everywhere), and imports nothing
of Airflow.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from emerge_lib.core.config import Config, Judge

#: curation's routes (``curation.additions``, ``curation.deprecations``), each a task
JUDGES: tuple[Judge, ...] = ("additions", "deprecations")
#: the pool, and the Celery queue, of each route's curate and final_judge tasks
LLM_POOLS = {judge: f"emerge_llm_{judge}" for judge in JUDGES}
#: the Celery queue every other task goes to (Airflow's ``[operators] default_queue``)
DEFAULT_QUEUE = "default"
#: what a Celery worker serving every task listens to
ALL_QUEUES = (DEFAULT_QUEUE, *LLM_POOLS.values())


def pools(cfg: Config) -> dict[str, dict[str, Any]]:
    """``airflow pools import``'s JSON: each route's pool with one slot per server."""
    out = {}
    for judge, pool in LLM_POOLS.items():
        route = cfg.curation.route(judge)
        out[pool] = {"slots": route.workers, "include_deferred": False,
                     "description": f"curation by the {judge} model ({route.name}): one "
                                    f"slot per server (curation.{judge}.workers)"}
    return out


def main(argv: list[str] | None = None) -> int:
    from emerge_lib.core.config import load_config

    parser = argparse.ArgumentParser(description="curation's Airflow pools, as JSON for "
                                                 "`airflow pools import`")
    parser.add_argument("-c", "--config", default=os.environ.get("EMERGE_CONFIG") or None)
    args = parser.parse_args(argv)
    print(json.dumps(pools(load_config(args.config)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
