"""Completeness at corpus scale: ``emerge evaluate`` as a user runs it (each distinct text
embedded once, length-sorted batches, vectors shared by every instance; reading the gold
and writing every output included) against the naive scorer (every instance's gold and
predicted texts encoded separately, as the authors' scorer does), in one run. Exits 1
when the speedup is under the 5x target or a compared score differs.

The release is synthesized in the release layout (``evaluation_set/snapshot_*/delta_*.jsonl``, 7 yearly
snapshots × 5 cumulative weekly deltas × 1,000 passages = 35,000 instances, the size of
the authors' full evaluation set) with what makes the real corpus what it is:

- a passage first seen in week k is repeated in deltas k..5 (the authors' cumulative
  deltas, facts §1), so ~3 copies of each paragraph and its triples;
- Zipf-distributed entities (a few like "United States" or "human" are everywhere) with
  label shapes of Wikidata (people, places, clubs, universities, works), real relation
  labels, the authors' operation mix (X most, then EE-KG, EE, E, D; some two-operation
  triples), 1-14 triples per passage (mean ≈ 5.4, the authors' sample);
- predictions of one model per passage (a model sees the same text in every delta):
  exact, case/whitespace variants and paraphrases of gold triples plus unrelated triples.

The naive scorer's time grows linearly with instances, so by default it runs on a random
sample (``--naive-sample``, default 2,000 instances) and its time is projected; the
per-instance completeness hits are then compared **on that sample only** (the output
says so). ``--naive-sample 0`` runs the naive scorer on every instance and compares them
all (about 6x the run time). Default model: the fast all-MiniLM-L6-v2; the mpnet/MiniLM
cost ratio is measured on a few hundred texts and the mpnet figures are projected too
(``--model all-mpnet-base-v2`` runs mpnet itself).

    python benchmarks/evaluate.py        # ~15 min on one idle core (figures: docs/performance.md)
    python benchmarks/evaluate.py --passages-per-delta 200 --naive-sample 500   # a busy machine
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from emerge_lib.evaluation.data import OPS, read_gold
from emerge_lib.evaluation.embed import Embedder, triple_text
from emerge_lib.evaluation.metrics import Settings, model_predictions
from emerge_lib.evaluation.models import ensure

AUTHORS_TRIPLES = 1_190_000
YEARS = range(2019, 2026)
FIRST = ["Anna", "Joe", "Melih", "Vijay", "Li", "Gao", "David", "Maria", "Ahmed", "Sofia",
         "Kenji", "Olga", "Pedro", "Amara", "Lars", "Chen", "Fatima", "Ivan", "Grace", "Tomás"]
LAST = ["Gambardella", "Bulu", "Gokhale", "Siye", "Lloyd Jones", "Okafor", "Nakamura",
        "Petrova", "Silva", "Haddad", "Lindqvist", "Wang", "Kowalski", "Mensah", "Rossi",
        "Fischer", "Dubois", "Novak", "Ibrahim", "García"]
SYL = ["ka", "lo", "mer", "dan", "vi", "tor", "sa", "ne", "ril", "bo", "gan", "ti", "ver",
       "ha", "lin", "mo", "ra", "sel", "u", "zen"]
SHAPES = ["{p}", "{p} {q}", "University of {P}", "{P} River", "{P} FC", "{P} County",
          "{P} ({y} film)", "{y} {P} Open", "Battle of {P}", "{P} Province", "{P} Airport"]
COMMON = ["United States", "human", "England", "France", "association football", "India",
          "Germany", "English", "politician", "film", "Canada", "Italy", "album", "snooker"]
RELATIONS = [
    "instance of", "country", "located in the administrative territorial entity",
    "country of citizenship", "occupation", "member of sports team", "position held",
    "educated at", "employer", "sport", "participant in", "part of", "has part(s)",
    "place of birth", "place of death", "member of political party", "award received",
    "cast member", "director", "performer", "genre", "original language of film or TV show",
    "country of origin", "contains the administrative territorial entity", "officeholder",
    "head of state", "applies to jurisdiction", "capital", "shares border with",
    "located in/on physical feature", "field of work", "given name", "family name",
    "league", "coach of sports team", "owned by", "headquarters location", "spouse", "child",
    "father", "sibling", "notable work", "record label", "follows", "followed by",
    "winner", "candidate", "successful candidate", "facet of", "location",
]
PARAPHRASE = {"country of citizenship": "nationality", "educated at": "studied at",
              "place of birth": "born in", "employer": "works for", "occupation": "profession",
              "member of sports team": "plays for", "position held": "served as",
              "located in the administrative territorial entity": "located in",
              "cast member": "stars", "director": "directed by"}
OP_MIX = [("x-triples", 45), ("ee-kg-triples", 22), ("ee-triples", 12), ("e-triples", 9),
          ("d-triples", 7), ("d+e", 3), ("ee-kg+d", 2)]


def entity_pool(rng: random.Random, n: int) -> list[str]:
    out = list(COMMON)
    while len(out) < n:
        word = "".join(rng.choice(SYL) for _ in range(rng.randint(2, 3)))
        shape = rng.choice(SHAPES + ["{f} {l}"] * 6)
        out.append(shape.format(p=word.capitalize(), q=rng.choice(SYL).capitalize() + "ville",
                                P=word.capitalize(), y=rng.randint(1950, 2025),
                                f=rng.choice(FIRST), l=rng.choice(LAST) + rng.choice(["", "", "e", "i"])))
    return out


def zipf_pick(rng: random.Random, pool: list[str], a: float = 1.1) -> int:
    while True:
        k = int(rng.paretovariate(a)) - 1
        if k < len(pool):
            return k


def synthesize(folder: Path, passages_per_delta: int, seed: int) -> tuple[Path, Path, int]:
    """Write the release (and one model's predictions) under ``folder``."""
    rng = random.Random(seed)
    pool = entity_pool(rng, 200_000)
    ops_pop = [o for o, w in OP_MIX for _ in range(w)]
    folder.mkdir(parents=True)
    preds_path = folder.parent / "predictions.jsonl"
    n_triples = 0
    with preds_path.open("w") as pf:
        for year in YEARS:
            snap = f"{year}-01-01"
            sdir = folder / "evaluation_set" / f"snapshot_{snap}"
            sdir.mkdir(parents=True)
            # ~1/3 of each delta's passages are new, the rest repeat earlier weeks' (cumulative)
            paragraphs: list[tuple[str, list, list]] = []
            for k in range(1, 6):
                fresh = passages_per_delta if k == 1 else passages_per_delta // 3
                for _ in range(fresh):
                    paragraphs.append(_paragraph(rng, pool, ops_pop))
                chosen = paragraphs[-passages_per_delta:] if k > 1 else paragraphs
                end = f"{year}-01-{1 + 7 * k:02d}" if 1 + 7 * k <= 31 else f"{year}-02-{7 * k - 30:02d}"
                with (sdir / f"delta_{end}.jsonl").open("w") as gf:
                    for i, (text, triples, preds) in enumerate(chosen):
                        hid = f"{year}-{k}-{i}"
                        gf.write(json.dumps({"hash_id": hid, "passage": text,
                                             "delta_dates": [snap, end], "tkgu_triples": triples,
                                             "predictions": {}}) + "\n")
                        pf.write(json.dumps({"hash_id": hid, "model": "bench",
                                             "predicted": preds}) + "\n")
                        n_triples += len(triples)
    return folder, preds_path, n_triples


def _paragraph(rng: random.Random, pool: list[str], ops_pop: list[str]):
    n = min(14, max(1, int(rng.expovariate(1 / 5.4)) + 1))
    triples, preds = [], []
    seen = set()
    # the article's own entity (any of the pool, uniformly) heads most triples; the other
    # end is Zipf-distributed (countries, "human", clubs recur everywhere)
    subject = rng.randrange(len(COMMON), len(pool))
    for _ in range(n):
        hi, ti = subject, zipf_pick(rng, pool)
        if rng.random() < 0.3:
            hi, ti = zipf_pick(rng, pool), subject
        if rng.random() < 0.2:
            hi = zipf_pick(rng, pool)
        rel = rng.choice(RELATIONS)
        key = (hi, rel, ti)
        if key in seen or hi == ti:
            continue
        seen.add(key)
        op = rng.choice(ops_pop)
        ops = {"d+e": ["d-triples", "e-triples"], "ee-kg+d": ["ee-kg-triples", "d-triples"]
               }.get(op, [op])
        labels = [pool[hi], rel, pool[ti]]
        triples.append({"triple": [f"Q{hi + 1}", f"P{RELATIONS.index(rel) + 1}", f"Q{ti + 1}"],
                        "triple_labels": labels, "tkgu_operations": ops, "llm_assessment": [],
                        "qualifier_info": {}})
        r = rng.random()
        operation = rng.choice(["add", "add", "infer", "deprecate", None])
        if r < 0.25:
            preds.append({"triple": None, "triple_labels": labels, "operation": operation})
        elif r < 0.40:
            preds.append({"triple": None, "triple_labels": [f" {labels[0].upper()}", labels[1],
                                                            labels[2].lower() + "  "],
                          "operation": operation})
        elif r < 0.55:
            preds.append({"triple": None, "triple_labels": [labels[0], PARAPHRASE.get(rel, rel),
                                                            labels[2]], "operation": operation})
    for _ in range(rng.randint(1, 6)):  # unrelated extractions
        preds.append({"triple": None, "triple_labels": [pool[zipf_pick(rng, pool)],
                                                        rng.choice(RELATIONS),
                                                        pool[zipf_pick(rng, pool)]],
                      "operation": rng.choice(["add", "infer", None])})
    text = "Excerpt from the Wikipedia page describing " + pool[subject]
    return text, triples, preds


def naive(instances, preds, embedder: Embedder, threshold: float) -> dict:
    """Encode every gold and predicted text of each instance separately (no sharing)."""
    out = {}
    for inst in instances:
        gold = {op: g for op in OPS if (g := inst.gold(op))}
        ps = [p for p in preds.get(inst.hash_id, []) if p.labels is not None]
        if not gold:
            continue
        gtexts = [triple_text(t.labels) for g in gold.values() for t in g]
        gvec = embedder.encode(gtexts)
        pvec = embedder.encode([triple_text(p.labels) for p in ps]) if ps else None
        row = 0
        for op, g in gold.items():
            cols = [j for j, p in enumerate(ps) if op in p.ops]
            block = gvec[row:row + len(g)]
            row += len(g)
            if not cols:
                out[(inst.hash_id, op)] = 0
                continue
            sims = block @ pvec[cols].T
            out[(inst.hash_id, op)] = int((sims.max(axis=1) >= threshold).sum())
    return out


TARGET = 5.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passages-per-delta", type=int, default=1000)
    ap.add_argument("--naive-sample", type=int, default=2000,
                    help="instances the naive scorer runs on (0: all of them)")
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    from emerge_lib.cli import main as emerge
    from emerge_lib.evaluation.data import read_predictions

    with tempfile.TemporaryDirectory(prefix="emerge-bench-eval-") as tmp:
        t = time.monotonic()
        folder, preds_file, n_triples = synthesize(Path(tmp) / "release",
                                                   args.passages_per_delta, args.seed)
        print(f"synthesized release: {time.monotonic() - t:.1f}s")

        ref = ensure(args.model)
        out = Path(tmp) / "out"
        t = time.monotonic()
        with contextlib.redirect_stdout(io.StringIO()):  # the tables it prints
            rc = emerge(["evaluate", "--gold", str(folder), "--predictions", str(preds_file),
                         "--embedding-model", args.model, "--out", str(out)])  # else defaults
        t_ours = time.monotonic() - t
        if rc:
            print(f"emerge evaluate failed (rc {rc})")
            return 1
        run = json.loads((out / "run.json").read_text())
        texts = run["texts_encoded"]
        ours_hits = {}
        with (out / "instances.jsonl").open() as fh:
            for line in fh:
                r = json.loads(line)
                ours_hits[(r["hash_id"], r["operation"])] = r["completeness_hits"]
        print(f"ours (emerge evaluate, end to end: read, model load, score, write): "
              f"{t_ours:.1f}s, {texts} distinct texts encoded ({texts / t_ours:.0f} texts/s "
              "overall)")

        instances = read_gold(folder)
        preds = model_predictions(instances, read_predictions(preds_file))
        n_gold = sum(len(i.gold(op)) for i in instances for op in OPS)
        n_pred = sum(len(v) for v in preds["bench"].values())
        print(f"gold: {len(instances)} instances, {n_triples} triples ({n_gold} gold "
              f"(triple, operation) pairs), {n_pred} predicted triples")

        naive_emb = Embedder(ref)
        naive_emb.encode(["warm up"])  # the naive scorer's model load is not timed
        rng = random.Random(args.seed)
        everything = not args.naive_sample or args.naive_sample >= len(instances)
        sample = instances if everything else rng.sample(instances, args.naive_sample)
        t = time.monotonic()
        got_naive = naive(sample, preds["bench"], naive_emb, Settings().threshold)
        t_naive = time.monotonic() - t
        t_naive_full = t_naive * len(instances) / len(sample)
        differing = [k for k, v in got_naive.items() if ours_hits.get(k) != v]
        sample_gold = sum(len(i.gold(op)) for i in sample for op in OPS)
        if everything:
            print(f"naive: {t_naive:.1f}s on all {len(instances)} instances")
            print(f"equal scores: {'yes' if not differing else 'NO'} — all {len(got_naive)} "
                  f"(instance, operation) completeness counts compared, {len(differing)} differ")
        else:
            print(f"naive: {t_naive:.1f}s on a random sample of {len(sample)} of the "
                  f"{len(instances)} instances ({sample_gold} gold pairs); projected to all "
                  f"(linear in instances): {t_naive_full:.0f}s")
            print(f"equal scores on the sample only: {'yes' if not differing else 'NO'} — "
                  f"{len(got_naive)} (instance, operation) completeness counts of those "
                  f"{len(sample)} instances compared, {len(differing)} differ; the other "
                  f"{len(instances) - len(sample)} instances are not compared "
                  "(--naive-sample 0 compares all)")
        hits = sum(ours_hits.values())
        print(f"completeness (all operations): {hits / n_gold:.4f}")
        speedup = t_naive_full / t_ours
        verdict = "met" if speedup >= TARGET else "NOT MET"
        print(f"speedup: {speedup:.1f}x (target >= {TARGET:.0f}x: {verdict})")

        per_gold_ours, per_gold_naive = t_ours / n_gold, t_naive / sample_gold
        mpnet_ratio = 1.0
        if ref.name != "all-mpnet-base-v2":
            probe = list(dict.fromkeys(triple_text(t.labels) for i in instances[:200]
                                       for t in i.triples))[:400]
            mp = Embedder(ensure("all-mpnet-base-v2"))
            mp.encode(["warm up"])
            t = time.monotonic()
            mp.encode(probe)
            t_mp = time.monotonic() - t
            t = time.monotonic()
            naive_emb.encode(probe)
            t_mini = time.monotonic() - t
            mpnet_ratio = t_mp / t_mini
            print(f"all-mpnet-base-v2 / {ref.name} encode cost: {mpnet_ratio:.1f}x "
                  f"({len(probe)} texts)")
        projections = [(ref.name, 1.0)]
        if ref.name != "all-mpnet-base-v2":
            projections.append(("all-mpnet-base-v2", mpnet_ratio))
        for name, ratio in projections:
            o = per_gold_ours * ratio * AUTHORS_TRIPLES
            nv = per_gold_naive * ratio * AUTHORS_TRIPLES
            print(f"projection for the authors' full corpus ({AUTHORS_TRIPLES:,} triples), "
                  f"{name}, one thread: ours {o / 60:.0f} min, naive {nv / 60:.0f} min "
                  "(linear in gold triples; more repetition than here would favour ours)")
        if not np.isfinite(speedup) or speedup < TARGET or differing:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
