"""Names, languages and multilingual labels for the sample world.

Why many languages: in real entity JSON, labels, descriptions and aliases in hundreds of
languages are most of the bytes, and a fast parser must skip them; a sample without them
would flatter the pipeline's speed. Non-Latin labels are cheap transliterations (one
``str.translate`` each) so they exercise ``\\uXXXX`` escapes without costing time.
"""

from __future__ import annotations

import hashlib

LATIN_LANGS = (
    "en", "de", "fr", "es", "it", "nl", "pt", "sv", "da", "nb", "nn", "fi", "pl", "cs", "sk",
    "sl", "hr", "bs", "ro", "hu", "et", "lv", "lt", "ga", "cy", "eu", "ca", "gl", "oc", "br",
    "is", "fo", "lb", "af", "sq", "tr", "az", "uz", "id", "ms", "vi", "tl", "sw", "eo", "ia",
    "la", "en-gb", "en-ca", "de-ch", "pt-br", "sco", "fy", "wa", "co", "rm", "mt", "ku", "ha",
    "yo", "zu", "xh", "so", "ast", "an", "lmo", "vec", "nap", "scn", "pms", "frp", "nds",
)
SCRIPT_LANGS = (
    "ru", "uk", "be", "bg", "sr", "mk", "kk", "el", "ar", "fa", "arz", "he", "ja", "zh",
    "zh-hans", "zh-hant", "ko", "hi", "mr", "bn", "ka", "hy", "th", "ta",
)
ALL_LANGS = LATIN_LANGS + SCRIPT_LANGS

_LOWER = "abcdefghijklmnopqrstuvwxyz"


def _table(alphabet: str) -> dict[int, str]:
    """Map a-z/A-Z onto an alphabet (repeated as needed)."""
    letters = (alphabet * 3)[:26]
    table = {ord(c): letters[i] for i, c in enumerate(_LOWER)}
    table.update({ord(c.upper()): letters[i] for i, c in enumerate(_LOWER)})
    return table


_SCRIPTS = {
    "cyrillic": _table("абвгдежзийклмнопрстуфхцчшщ"),
    "greek": _table("αβγδεζηθικλμνξοπρστυφχψωάέ"),
    "arabic": _table("ابتثجحخدذرزسشصضطظعغفقكلمنه"),
    "hebrew": _table("אבגדהוזחטיכלמנסעפצקרשתךםןף"),
    "kana": _table("アイウエオカキクケコサシスセソタチツテトナニヌネノハ"),
    "han": _table("阿贝德尔夫格赫伊杰克莱姆恩奥普库里斯特乌维瓦克西亚泽"),
    "hangul": _table("가나다라마바사아자차카타파하거너더러머버서어저처커터"),
    "devanagari": _table("अआइईउऊएऐओऔकखगघचछजझटठडढणतथद"),
    "georgian": _table("აბგდევზთიკლმნოპჟრსტუფქღყშჩ"),
    "armenian": _table("աբգդեզէըթժիլխծկհձղճմյնշոչպ"),
    "thai": _table("กขคงจฉชซญดตถทนบปผพฟภมยรลวศ"),
    "tamil": _table("அஆஇஈஉஊஎஏஐஒஓகஙசஞடணதநபமயரலவழ"),
}
_LANG_SCRIPT = {
    "ru": "cyrillic", "uk": "cyrillic", "be": "cyrillic", "bg": "cyrillic", "sr": "cyrillic",
    "mk": "cyrillic", "kk": "cyrillic", "el": "greek", "ar": "arabic", "fa": "arabic",
    "arz": "arabic", "he": "hebrew", "ja": "kana", "zh": "han", "zh-hans": "han",
    "zh-hant": "han", "ko": "hangul", "hi": "devanagari", "mr": "devanagari",
    "bn": "devanagari", "ka": "georgian", "hy": "armenian", "th": "thai", "ta": "tamil",
}


def transliterate(name: str, lang: str) -> str:
    script = _LANG_SCRIPT.get(lang)
    return name.translate(_SCRIPTS[script]) if script else name


def stable_int(*parts: object) -> int:
    """A process-independent hash (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest(), "big")


def label_languages(count: int, salt: int) -> list[str]:
    """``count`` languages, English first, then a salt-dependent but stable selection."""
    count = max(1, min(count, len(ALL_LANGS)))
    rest = list(ALL_LANGS[1:])
    start = salt % len(rest)
    step = 7  # coprime with len(rest), so the walk visits every language once
    picked = [rest[(start + i * step) % len(rest)] for i in range(count - 1)]
    return ["en", *picked]


# Descriptions by kind; a few languages only (as in reality, most items lack most).
DESCRIPTIONS: dict[str, dict[str, str]] = {
    "person": {
        "en": "Velorian public figure", "de": "velorische Persönlichkeit",
        "fr": "personnalité vélorienne", "es": "personalidad veloriana",
        "nl": "Veloriaans persoon", "it": "personalità veloriana",
    },
    "place": {
        "en": "human settlement", "de": "Ortschaft", "fr": "localité",
        "es": "localidad", "nl": "plaats", "pl": "miejscowość", "sv": "ort",
    },
    "org": {
        "en": "organization", "de": "Organisation", "fr": "organisation",
        "es": "organización", "it": "organizzazione",
    },
    "work": {
        "en": "literary work", "de": "literarisches Werk", "fr": "œuvre littéraire",
        "es": "obra literaria",
    },
}

GIVEN = (
    "Anna", "Bram", "Clara", "Dario", "Elin", "Felix", "Greta", "Hanno", "Ida", "Jonah",
    "Karin", "Lukas", "Maren", "Niko", "Oda", "Pavel", "Rhea", "Soren", "Tilde", "Ulric",
    "Vera", "Wim", "Yara", "Zeno", "Alma", "Bodil", "Caspar", "Dagny", "Emil", "Frida",
    "Gustav", "Hedda", "Ivo", "Jutta", "Kasimir", "Linnea", "Magnus", "Nora", "Otto", "Petra",
)
_SYL = (
    "bar", "ven", "kol", "mer", "dal", "ros", "tin", "gar", "hel", "mon", "sar", "vik",
    "lun", "dor", "bel", "fen", "kar", "lis", "nor", "pel", "ran", "sel", "tor", "var",
    "wen", "zan", "gil", "hal", "jor", "kes", "lor", "mal", "nes", "ost", "quin", "rel",
)
_PLACE_SUFFIX = ("ville", "burg", "stad", "holm", "ford", "wick", "mouth", "by", "ton", "hamn")
_ORG_FORM = (
    "{} Institute", "{} Group", "{} Records", "{} Foundation", "{} Works", "{} Society",
    "{} Football Club", "{} Press",
)
_WORK_FORM = ("The {} Letters", "{} (novel)", "Songs of {}", "The {} Affair", "{} (film)")


def syllable_word(n: int) -> str:
    """A bijective word for n >= 0: at least two syllables, more as n grows."""
    base = len(_SYL)
    parts = [_SYL[n % base]]
    n //= base
    parts.append(_SYL[n % base])
    n //= base
    while n:
        n -= 1
        parts.append(_SYL[n % base])
        n //= base
    return "".join(parts).capitalize()


KINDS = ("person", "person", "place", "org", "work")


def filler_kind(index: int) -> str:
    return KINDS[stable_int("kind", index) % len(KINDS)]


def filler_name(index: int, kind: str) -> str:
    """A unique English title for filler entity ``index`` (unique across kinds too)."""
    word = syllable_word(index)
    if kind == "person":
        return f"{GIVEN[stable_int('given', index) % len(GIVEN)]} {word}"
    if kind == "place":
        return word + _PLACE_SUFFIX[index % len(_PLACE_SUFFIX)]
    if kind == "org":
        return _ORG_FORM[index % len(_ORG_FORM)].format(word)
    return _WORK_FORM[index % len(_WORK_FORM)].format(word)
