"""``emerge predict``: the paper's baselines (EDC+, ReLiK RE, ReLiK cIE) on EMERGE gold
passages, written as predictions JSONL for ``emerge evaluate``."""

from __future__ import annotations

import argparse

from emerge_lib.commands._common import examples


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predict", help="run a baseline (EDC+, ReLiK) into predictions JSONL",
                       description="Run one of the paper's baselines over the passages of "
                                   "EMERGE gold files; see docs/evaluation.md.")
    examples(p, "emerge predict edc --gold demo/release --endpoint http://127.0.0.1:8012/v1 "
             "--llm mistral-7b-instruct --limit 200 --out edc.jsonl",
             "emerge predict relik --variant cie --release demo/release --gold demo/release "
             "--out relik-cie.jsonl")
    kinds = p.add_subparsers(dest="baseline", metavar="BASELINE", required=True)
    e = kinds.add_parser(
        "edc", help="EDC+ through an OpenAI-compatible endpoint",
        description="EDC+ (the paper's Appendix C prompt, word for word, with few-shot "
                    "examples) on each distinct passage of the gold, through any "
                    "OpenAI-compatible endpoint (vLLM, llama.cpp); its answers parsed into "
                    "add, deprecate and infer triples. See docs/evaluation.md.")
    examples(e, "emerge predict edc --gold demo/release --endpoint http://127.0.0.1:8012/v1 "
             "--llm mistral-7b-instruct --limit 200 --out edc.jsonl",
             "emerge predict edc --gold emerge-authors/data --endpoint https://api.example/v1 "
             "--llm gpt-4o-mini --api-key-env OPENAI_API_KEY --out edc.jsonl")
    e.add_argument("--endpoint", required=True,
                   help="the server's base URL, e.g. http://127.0.0.1:8012/v1 (vLLM, llama.cpp; "
                        "/v1 is added when missing)")
    e.add_argument("--llm", required=True, help="the endpoint's model name")
    e.add_argument("--api-key-env", default=None, metavar="VAR",
                   help="environment variable holding the API key, if the endpoint needs one")
    e.add_argument("--max-tokens", type=int, default=512, metavar="N",
                   help="the longest answer asked for, in tokens (default 512)")
    e.add_argument("--concurrency", type=int, default=8,
                   help="requests in flight (vLLM batches them; default 8)")
    e.add_argument("--examples", default=None, metavar="FILE",
                   help="few-shot examples (text) instead of the built-in ones")
    r = kinds.add_parser(
        "relik", help="ReLiK RE or cIE (needs the relik environment)",
        description="ReLiK (the paper's Appendix D models) on each gold passage, its "
                    "entities and relations retrieved from the snapshot's KG dictionaries "
                    "(indexes built once per snapshot, or the whole dictionaries as "
                    "candidates). Needs the relik environment (requirements-models.txt). "
                    "See docs/evaluation.md.")
    examples(r, "emerge predict relik --variant re --release demo/release --gold demo/release "
             "--out relik-re.jsonl",
             "emerge predict relik --variant cie --release demo/release --gold demo/release "
             "--device cuda --limit 50 --out relik-cie.jsonl")
    r.add_argument("--variant", choices=("re", "cie"), required=True,
                   help="re: relation extraction between linked entities; cie: closed "
                        "information extraction (entity linking and relations together)")
    r.add_argument("--release", required=True, metavar="DIR",
                   help="release with kg_snapshots/snapshot_*/entities.parquet and relations.parquet")
    r.add_argument("--relik-model", default=None, metavar="NAME|PATH",
                   help="a ReLiK model (default: the paper's for --variant, Appendix D)")
    r.add_argument("--device", default="cpu",
                   help="torch device for the retriever and reader: cpu (default), cuda, "
                        "cuda:1")
    r.add_argument("--index-dir", default=None, metavar="DIR",
                   help="per-snapshot entity and relation indexes, built here once and reused "
                        "(default: OUT.relik-indexes/ next to --out)")
    r.add_argument("--candidates", action="store_true",
                   help="pass the snapshot's whole dictionaries as candidates of every text "
                        "instead of indexes; refused when they exceed the reader's slots")
    r.add_argument("--top-k", type=int, default=None,
                   help="candidates retrieved per window (default 100, capped at the reader's "
                        "slots)")
    r.add_argument("--relation-threshold", type=float, default=0.5, metavar="P",
                   help="the reader's lowest relation probability kept (default 0.5)")
    for q, limit in ((e, "N random instances per delta (the paper ran EDC+ on 200 per "
                         "delta); default all"),
                     (r, "N random instances per delta, to try a model on a sample; "
                         "default all")):
        q.add_argument("--gold", action="append", required=True, metavar="PATH",
                       help="EMERGE gold: a release, the authors' data/, or a JSONL file "
                            "(repeatable); its passages are what the model reads")
        q.add_argument("--limit", type=int, default=0, metavar="N", help=limit)
        q.add_argument("--seed", type=int, default=0, help="the --limit sample's seed")
        q.add_argument("--out", required=True, metavar="FILE", help="predictions JSONL")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    import os
    from pathlib import Path

    from tqdm import tqdm

    from emerge_lib.evaluation.data import read_gold

    instances = read_gold(args.gold)
    if args.limit:
        instances = sample_per_delta(instances, args.limit, args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    partial = out.with_name(f".{out.name}.part")  # a failed run leaves no file under --out
    try:
        with partial.open("w", encoding="utf-8") as fh, tqdm(
                total=len(instances), unit="inst", disable=None) as bar:
            for line in _lines(args, instances, os.environ):
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
                n += 1
                bar.update(1)
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
    print(f"{n} prediction lines written to {out}")
    return 0


def sample_per_delta(instances, n: int, seed: int):
    """``n`` instances drawn at random (seeded) from each delta (snapshot, delta end),
    kept in gold order: the same sample on every run with the same seed."""
    import random
    from collections import defaultdict

    by_delta = defaultdict(list)
    for pos, inst in enumerate(instances):
        by_delta[(inst.snapshot, inst.delta_end)].append(pos)
    keep: set[int] = set()
    for key in sorted(by_delta, key=lambda k: (k[0], k[1] or "")):
        members = by_delta[key]
        rng = random.Random(f"{seed}:{key[0]}:{key[1]}")
        keep.update(members if len(members) <= n else rng.sample(members, n))
    return [inst for pos, inst in enumerate(instances) if pos in keep]


def _lines(args, instances, environ):
    if args.baseline == "edc":
        from pathlib import Path

        from emerge_lib.evaluation.adapters.edc import FEW_SHOT_EXAMPLES, EdcPlus, endpoint

        key = environ.get(args.api_key_env) if args.api_key_env else None
        from emerge_lib.core.logs import register_secrets

        register_secrets([key])  # never echoed, whatever the variable's name
        examples = Path(args.examples).read_text() if args.examples else FEW_SHOT_EXAMPLES
        yield from EdcPlus(endpoint(args.endpoint, args.llm, key), examples=examples,
                           max_tokens=args.max_tokens,
                           concurrency=args.concurrency).predict(instances)
        return
    from collections import defaultdict
    from pathlib import Path

    from emerge_lib.evaluation.adapters.common import release_dictionaries
    from emerge_lib.evaluation.adapters.relik import RelikAdapter, build_indexes, inventory

    adapter = RelikAdapter(args.variant, model=args.relik_model, device=args.device,
                           relation_threshold=args.relation_threshold, top_k=args.top_k)
    index_dir = Path(args.index_dir or f"{args.out}.relik-indexes")
    by_snapshot = defaultdict(list)
    for inst in instances:
        by_snapshot[inst.snapshot].append(inst)
    for snap, group in sorted(by_snapshot.items()):
        inv = inventory(release_dictionaries(args.release, snap), args.variant)
        index = None
        if not args.candidates:
            index = build_indexes(adapter.model, inv, index_dir / args.variant / f"snapshot_{snap}",
                                  args.variant, args.device)
        yield from adapter.predict(group, inv, index)
