"""s07's selection as emerge does it (emerge_lib.transform.select), pure functions on
hand-made lines: the guards, the support rule, the two dedup passes with their edges, the
two-stage test draw."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import replace

from emerge_lib.core.config import Config, load_config
from emerge_lib.formats.format import TITLE_PREFIX
from emerge_lib.transform.select import (
    Fate,
    Line,
    draw_test_split,
    edit_distance,
    guard,
    pass_one,
    pass_two,
    select_lines,
    tokens,
)

WORDS = ["harbour", "lighthouse", "keeper", "storm", "ledger", "survey", "coast", "tide", "chart", "vessel", "mast", "crew", "anchor", "pier", "beacon", "channel", "reef", "gull", "rope", "sail"]


def prose(n: int, seed: int = 0) -> str:
    """``n`` words drawn deterministically from a small vocabulary."""
    return " ".join(WORDS[(i * 7 + seed * 3 + i * i * seed) % len(WORDS)] for i in range(n))


def line(pid: str, text: str, page: int = 1, ops: dict[str, int] | None = None,
         sig: str = "s", tiers: tuple[int, int, int, int] = (0, 1, 0, 0),
         total: int | None = None) -> Line:
    ops = ops or {"E": 1}
    return Line(pid, f"h{pid}", page, text, frozenset({(op, (sig, "P1", "Q1")) for op in ops}),
                Counter(ops), sum(ops.values()), tokens(text), released=text, title="T",
                ops_total=total if total is not None else sum(ops.values()), tiers=tiers,
                order=hashlib.sha256(pid.encode()).digest(), released_tokens=tokens(text))


def test_pass_one_same_article_short_and_long_and_other_articles() -> None:
    base = prose(60)
    # same article, short: a common prefix within 5 % distance is a duplicate whatever the
    # lengths (no ratio condition), as S07:700-705
    a, b = line("a", base), line("b", base + " " + prose(60, 1), ops={"E": 2})
    survivors, lost = pass_one([a, b])
    assert [x.passage_id for x in survivors] == ["b"] and lost["a"][0] == "b"  # more E wins
    # other articles: only near-identical lengths (ratio > 0.98) and texts (≤ 0.05)
    c = line("c", base, page=2)
    d = line("d", base + " tide", page=3)  # 5 characters more: ratio 0.987
    e = line("e", base + " lighthouse keeper", page=4)  # ratio 0.95: never compared
    survivors, lost = pass_one([c, d, e])
    assert {x.passage_id for x in survivors} == {"d", "e"} and lost["c"][0] == "d"
    # same article, long (≥ 2,500 characters): ratio ≥ 0.70 and distance ≤ 0.25
    long_ = prose(420)
    assert len(long_) >= 2500
    f, g = line("f", long_), line("g", long_[: int(len(long_) * 0.75)].rsplit(" ", 1)[0])
    h = line("h", long_[: int(len(long_) * 0.6)].rsplit(" ", 1)[0])
    survivors, lost = pass_one([f, g])
    assert [x.passage_id for x in survivors] == ["f"]  # the longer passage wins the tie
    survivors, _ = pass_one([f, h])  # ratio 0.6 < 0.70, prefixes identical but long
    assert {x.passage_id for x in survivors} == {"f", "h"}


def test_the_survivor_is_s07s() -> None:
    text = prose(40)
    d = line("d", text, ops={"D": 1})
    e = line("e", text + " gull", ops={"E": 3})
    assert [x.passage_id for x in pass_one([d, e])[0]] == ["d"]  # a supported D first
    more = line("m", text, ops={"E": 1}, total=3)
    fewer = line("f", text + " reef", ops={"E": 1}, total=1)
    assert [x.passage_id for x in pass_one([more, fewer])[0]] == ["m"]  # more triples


def test_pass_two_compares_within_the_same_triples_in_tiers() -> None:
    text = prose(50)
    removal = line("r", text, tiers=(1, 0, 0, 0))
    addition = line("a", text + " storm ledger", tiers=(0, 2, 0, 0))
    other = line("o", text, sig="other")  # the same words, other triples: not compared
    distinct = line("x", "Mill wheels turned beside the weir while carters loaded "
                    "barley sacks onto barges bound for inland markets every autumn.")
    # ^ the same triples, other words: kept
    close = pass_two([addition, removal, other, distinct], 0.5, 0.2)
    # the supported removal's tier comes first, so the addition is the duplicate
    assert set(close) == {"a"} and close["a"][0] == "r"
    jac, ned = close["a"][1:]
    assert jac >= 0.5 or ned <= 0.2
    assert edit_distance(distinct.released, removal.released) > 0.2


def test_guards_and_the_support_rule_say_why() -> None:
    table = line("t", "| a | b | c | d |")
    stars = line("s", "*a*b*c*d*e list")  # more star groups than words
    braces = line("b", "{{cite}} " + prose(30))
    fine = line("f", prose(30, 3), page=2)
    unsupported = line("u", prose(30, 4), page=3, ops={"X": 1})
    assert [guard(x, True) for x in (table, stars, braces, fine)] == [
        "guard:table-markup", "guard:list-markup", "guard:template", None]
    settings = Config().selection  # the authors' rules: the defaults
    fates = select_lines([table, stars, braces, fine, unsupported], settings, curated=True)
    assert {p: f.reason for p, f in fates.items()} == {
        "t": "guard:table-markup", "s": "guard:list-markup", "b": "guard:template",
        "f": None, "u": "unsupported"}
    assert not select_lines([unsupported], settings, curated=False)["u"].reason  # uncurated
    none = load_config("no-selection-rules", environ={}).selection
    assert all(f.kept for f in select_lines([table, unsupported], none, curated=True).values())


def titled(pid: str, title: str, text: str) -> Line:
    """A line released with the title prefix, as the authors' passages are."""
    released = TITLE_PREFIX.format(title=title) + text
    return replace(line(pid, text), released=released, title=title)


def test_the_guards_read_the_title_prefix_split_at_its_first_colon() -> None:
    """Their quirk (S07:372-373): the text after the passage's first ':'. A title with a
    colon gives the table-markup test one more ':' and the title's rest as words."""
    timeline = "Seasons: one: two: three four five six seven eight nine"  # 3 ':', 10 words
    assert timeline.count(":") == 3 and len(timeline.split(" ")) == 10
    plain = titled("p", "Harbour Lights", timeline)
    colon = titled("c", "Harbour Lights: Chronicle", timeline)
    assert guard(plain, True) is guard(plain, False) is None  # 10 / 3 words a mark
    assert guard(colon, False) is None
    assert guard(colon, True) == "guard:table-markup"  # "Chronicle: Seasons: …": 11 / 4
    # the near miss: a colon title over prose stays under both readings
    prose_line = titled("n", "Harbour Lights: Chronicle", prose(30))
    assert guard(prose_line, True) is guard(prose_line, False) is None
    # "list of" is looked for in the title's part before its colon
    stars = "*a*b*c*d*e*f*g"  # one word, seven star groups
    assert guard(titled("m", "Lights: list of the north", stars), True) == "guard:list-markup"
    assert guard(titled("m", "Lights: list of the north", stars), False) is None
    settings = Config().selection
    assert settings.guard_split_at_colon  # the authors' reading by default
    fates = select_lines([colon, prose_line], settings, curated=False)
    assert {p: f.reason for p, f in fates.items()} == {"c": "guard:table-markup", "n": None}
    off = settings.model_copy(update={"guard_split_at_colon": False})
    assert all(f.kept for f in select_lines([colon, prose_line], off, curated=False).values())


def test_the_test_split_is_drawn_twice_as_s07b() -> None:
    lines = [line(f"l{i}", prose(30, i), page=i, ops={op: 1})
             for i, op in enumerate(["D"] * 6 + ["EE"] * 20 + ["E"] * 24)]
    fates = {x.passage_id: Fate(True, i) for i, x in enumerate(lines)}
    settings = Config(selection={"evaluation_pre_draw": [20, 8], "evaluation_per_delta": 10,
                                 "evaluation_min_per_op": 4}).selection
    drawn = draw_test_split(lines, fates, settings, "0:t:1")
    assert len(drawn) == 10 and drawn == draw_test_split(lines, fates, settings, "0:t:1")
    ops = Counter(next(iter(x.supported)) for x in lines if x.passage_id in drawn)
    assert ops["D"] >= 4 and ops["EE"] >= 4  # the minimums first, D then EE
    assert drawn != draw_test_split(lines, fates, settings, "1:t:1")
    # the final draw comes from the first one's 20
    settings_one = Config(selection={"evaluation_pre_draw": [], "evaluation_per_delta": 20,
                                     "evaluation_min_per_op": 8}).selection
    pre = draw_test_split(lines, fates, settings_one, "0:t:1:pre")
    assert drawn <= pre


def _pass_one_pairwise(lines: list[Line]) -> tuple[list[Line], dict[str, tuple[str, float]]]:
    """Pass 1 read literally: every later line within 2 % of the current line's length
    (and every later line of its article) visited in order, one pair test each. The
    pass's band index must give exactly this."""
    import bisect
    from collections import defaultdict

    from emerge_lib.transform.select import _near_identical, _survivor

    ordered = sorted(lines, key=lambda x: (len(x.released), x.order))
    lengths = [len(x.released) for x in ordered]
    by_anchor: dict[int, list[int]] = defaultdict(list)
    for i, x in enumerate(ordered):
        by_anchor[x.page_id].append(i)
    consumed: set[int] = set()
    survivors, lost = [], {}
    for i, first in enumerate(ordered):
        if i in consumed:
            continue
        consumed.add(i)
        current, anchor, same, j = first, first.page_id, by_anchor[first.page_id], i + 1
        while True:
            k = bisect.bisect_left(same, j)
            next_same = same[k] if k < len(same) else None
            size = len(current.released)
            lo = bisect.bisect_right(lengths, 0.98 * size, lo=j)
            next_other = lo if lo < len(ordered) and lengths[lo] * 0.98 < size else None
            candidates = [x for x in (next_same, next_other) if x is not None]
            if not candidates:
                break
            j = min(candidates)
            other = ordered[j]
            j += 1
            if (j - 1) in consumed or not _near_identical(
                    current.released, other.released, other.page_id == anchor):
                continue
            winner = _survivor(current, other)
            loser = other if winner is current else current
            lost[loser.passage_id] = (winner.passage_id,
                                      edit_distance(loser.released, winner.released))
            consumed.add(j - 1)
            current = winner
        survivors.append(current)
    return survivors, lost


def test_pass_one_equals_the_pairwise_reading_on_templated_lines() -> None:
    """Templated lines of near-equal lengths (most pairs inside the 2 % band, a few
    edits apart: the band index's worst case), planted near-copies across and within
    articles, non-ASCII names, empty and tiny texts: the same survivors and losers as
    the pair-by-pair pass, for several seeds."""
    import random

    names = ["Halbarnes", "Karmalgil", "Østvenbarwick", "Fenmermal", "Clara Monpelmal",
             "Bram Dalfendal", "Ranlormalstad", "Malneshel Press", "Zoë Lunnesvarton"]
    for seed in range(6):
        rng = random.Random(seed)
        lines = []
        for n in range(160):
            a, b, c = rng.sample(names, 3)
            text = (f"In {1890 + rng.randrange(60)}, {a} was linked with {b} in the survey "
                    f"record {rng.randrange(50000)}.{rng.randrange(3)}, which also names {c} "
                    "among its principal partners.")
            if n % 9 == 0 and lines:  # a near-copy of an earlier line: a few edits
                text = rng.choice(lines).released
                for _ in range(rng.randrange(4)):
                    at = rng.randrange(len(text))
                    text = text[:at] + rng.choice("xyzé ") + text[at + 1:]
            if n % 31 == 0:
                text = rng.choice(["", "a", "ab c"])
            lines.append(line(f"{seed}-{n}", text, page=rng.randrange(40),
                              ops={rng.choice(["E", "D", "EE"]): 1 + rng.randrange(2)}))
        got_survivors, got_lost = pass_one(lines)
        want_survivors, want_lost = _pass_one_pairwise(lines)
        assert [x.passage_id for x in got_survivors] == [x.passage_id for x in want_survivors]
        assert got_lost == want_lost
        assert len(want_lost) >= 10  # the planted copies were found
