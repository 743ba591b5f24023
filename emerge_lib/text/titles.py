"""English Wikipedia title rules: namespaces, interwiki prefixes, normalization, redirects.

Kept apart from the paragraph cleaner so link resolution (page/redirect timelines) can use
the same rules without importing the cleaner. The rules follow MediaWiki's `Title` parsing
for enwiki (`$wgCapitalLinks = true`, English namespace names and aliases).
"""

from __future__ import annotations

import contextlib
import html
import re
from functools import lru_cache
from urllib.parse import unquote


def name_set(text: str) -> frozenset[str]:
    """A set from whitespace-separated names (keeps long name tables readable)."""
    return frozenset(text.split())


# enwiki namespaces (canonical and localized names, plus MediaWiki's aliases), lower-cased.
# Links into any of them are not article mentions.
NAMESPACES: frozenset[str] = frozenset(
    {
        "media", "special", "talk", "user", "user talk", "wikipedia", "wikipedia talk",
        "project", "project talk", "wp", "wt", "file", "file talk", "image", "image talk",
        "mediawiki", "mediawiki talk", "template", "template talk", "tm", "help",
        "help talk", "category", "category talk", "portal", "portal talk", "draft",
        "draft talk", "timedtext", "timedtext talk", "module", "module talk", "book",
        "book talk", "education program", "education program talk", "gadget",
        "gadget talk", "gadget definition", "gadget definition talk", "topic",
        "mos", "mos talk",
    }
)  # fmt: skip

# Namespaces whose plain links are not rendered inline but attach the page to something:
# an embedded image, or a category. Their whole link (caption included) is removed.
FILE_NAMESPACES: frozenset[str] = frozenset({"file", "image"})
CATEGORY_NAMESPACES: frozenset[str] = frozenset({"category"})

# Wikipedia language editions (interlanguage prefixes): a plain `[[fr:Paris]]` link is moved
# to the sidebar, `[[:fr:Paris]]` is an inline interwiki link. Open editions as of 2023,
# closed ones and the usual code aliases.
LANGUAGE_PREFIXES: frozenset[str] = name_set(
    """
    aa ab ace ady af ak als alt am ami an ang anp ar arc ary arz as ast atj av avk awa ay
    az azb ba ban bar bat-smg bcl be be-tarask be-x-old bg bh bi bjn blk bm bn bo bpy br
    bs bug bxr ca cbk-zam cdo ce ceb ch cho chr chy ckb co cr crh cs csb cu cv cy da dag de
    din diq dsb dty dv dz ee el eml en eo es et eu ext fa fat ff fi fiu-vro fj fo fon fr
    frp frr fur fy ga gag gan gcr gd gl glk gn gom gor got gpe gu guc gur guw gv ha hak haw
    he hi hif ho hr hsb ht hu hy hyw hz ia id ie ig ii ik ilo inh io is it iu ja jam jbo jv
    ka kaa kab kbd kbp kcg kg ki kj kk kl km kn ko koi kr krc ks ksh ku kv kw ky la lad lb
    lbe lez lfn lg li lij lld lmo ln lo lrc lt ltg lv mad mai map-bms mdf mg mh mhr mi min
    mk ml mn mni mnw mo mr mrj ms mt mus mwl my myv mzn na nah nap nb nds nds-nl ne new ng
    nia nl nn no nov nqo nrm nso nv ny oc olo om or os pa pag pam pap pcd pcm pdc pfl pi
    pih pl pms pnb pnt ps pt pwn qu rm rmy rn ro roa-rup roa-tara ru rue rw sa sah sat sc
    scn sco sd se sg sh shi shn si simple sk skr sl sm smn sn so sq sr srn ss st stq su sv
    sw szl szy ta tay tcy te tet tg th ti tk tl tly tn to tpi tr trv ts tt tum tw ty tyv
    udm ug uk ur uz ve vec vep vi vls vo wa war wo wuu xal xh xmf yi yo yue za zea zh
    zh-classical zh-cn zh-min-nan zh-tw zh-yue zu
    """
)

# Interwiki prefixes of the Wikimedia family used in enwiki articles (inline links to
# another project: never an article mention).
INTERWIKI_PREFIXES: frozenset[str] = name_set(
    """
    w wikipedia wikt wiktionary commons c m meta metawikimedia metawikipedia mw
    mediawikiwiki s wikisource q wikiquote b wikibooks n wikinews v wikiversity voy
    wikivoyage d wikidata species wikispecies wikimedia foundation wmf wmfblog phab
    phabricator gerrit bugzilla mediazilla incubator outreach outreachwiki oldwikisource
    sources strategy testwiki ticket toollabs wikitech f wikifunctions wikimania wmania
    betawikiversity labsconsole mail mailarchive irc rev sulutil otrs otrswiki
    """
)

# The local interwiki of enwiki: `[[en:Foo]]` is a plain link to Foo.
LOCAL_INTERWIKI: frozenset[str] = frozenset({"en"})

# MediaWiki collapses these to one space (Title::secureAndSplit) and drops bidi marks.
_TITLE_SPACES = re.compile(
    "[ _\u00a0\u1680\u180e\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\t\r\n]+"
)
_BIDI_MARKS = re.compile("[\u200e\u200f\u202a-\u202e]")
# Characters never allowed in a title (MediaWiki's $wgLegalTitleChars complement).
_ILLEGAL_TITLE = re.compile("[\\[\\]{}|<>\x00-\x1f\x7f\ufffd]")

_REDIRECT = re.compile(
    r"\s*#REDIRECT\s*:?\s*\[\[([^\]\n|]*)(?:\|[^\n]*?)?\]\]",
    re.IGNORECASE,
)


def _prefix_of(title: str) -> tuple[str, str] | None:
    """Split `Prefix:Rest` when a colon is present; the prefix is lower-cased and trimmed."""
    colon = title.find(":")
    if colon < 0:
        return None
    return title[:colon].strip().lower(), title[colon + 1 :].strip()


def _clean_title_text(raw: str) -> str:
    """Entity/percent decoding and whitespace folding as MediaWiki does for link targets."""
    title = raw
    if "&" in title:
        title = html.unescape(title)
    if "%" in title:
        # Parser::handleInternalLinks2 rawurldecode()s targets that contain '%'.
        with contextlib.suppress(UnicodeDecodeError):  # invalid escapes stay as written
            title = unquote(title, errors="strict")
    title = _BIDI_MARKS.sub("", title)
    return _TITLE_SPACES.sub(" ", title).strip()


def _upper_first(title: str) -> str:
    """$wgCapitalLinks: upper-case the first character when it maps to one character."""
    first = title[0]
    upper = first.upper()
    if len(upper) != 1:  # e.g. 'ß' -> 'SS': MediaWiki keeps these as they are
        return title
    return upper + title[1:]


@lru_cache(maxsize=1 << 16)
def link_namespace(raw: str) -> str | None:
    """Namespace kind of a link target as written: 'file', 'category', 'interlanguage',
    'other' (another namespace or wiki) or None for the article namespace.

    A leading colon (`[[:Category:X]]`) makes file, category and language links inline,
    which is reported as 'other'. Used by the cleaner to decide what a link renders as.
    """
    title = _clean_title_text(raw)
    escaped = title.startswith(":")
    if escaped:
        title = title[1:].strip()
    for _ in range(3):  # `en:` may prefix another prefix; a bounded loop, never a hang
        split = _prefix_of(title)
        if split is None:
            return None
        prefix, rest = split
        if prefix in LOCAL_INTERWIKI:
            title = rest
            escaped = True  # `[[en:Category:X]]` is an inline link on enwiki
            continue
        if prefix in FILE_NAMESPACES:
            return "other" if escaped else "file"
        if prefix in CATEGORY_NAMESPACES:
            return "other" if escaped else "category"
        if prefix in LANGUAGE_PREFIXES:
            return "other" if escaped else "interlanguage"
        if prefix in NAMESPACES or prefix in INTERWIKI_PREFIXES:
            return "other"
        return None
    return "other"


@lru_cache(maxsize=1 << 16)
def normalize_title(raw: str) -> str | None:
    """Normalize a link target to an enwiki article title, or None if it is not one.

    Underscores and whitespace runs become one space; HTML entities and percent-escapes
    are decoded; one leading ':' and the local `en:` prefix are dropped; the `#fragment`
    is dropped; the first letter is upper-cased. None for other namespaces, interwiki
    and interlanguage prefixes, illegal titles, and fragment-only targets (`[[#History]]`
    is a link to the page itself, which is always counted as mentioned anyway).
    """
    title = _clean_title_text(raw)
    if title.startswith(":"):
        title = title[1:].strip()
    hash_at = title.find("#")
    if hash_at >= 0:
        title = title[:hash_at].rstrip()
    for _ in range(3):
        split = _prefix_of(title)
        if split is None:
            break
        prefix, rest = split
        if prefix in LOCAL_INTERWIKI:
            title = rest
            continue
        if prefix in NAMESPACES or prefix in LANGUAGE_PREFIXES or prefix in INTERWIKI_PREFIXES:
            return None
        break
    else:
        return None
    if not title or title.startswith(":") or _ILLEGAL_TITLE.search(title):
        return None
    if title in (".", "..") or title.startswith(("./", "../")) or "/./" in title:
        return None
    if len(title.encode("utf-8")) > 255:
        return None
    return _upper_first(title)


def is_redirect(wikitext: str) -> bool:
    """True when the page is a redirect (`#REDIRECT [[...]]` at its start), whatever the
    target namespace; lets callers tell a non-article redirect from an article."""
    return _REDIRECT.match(wikitext) is not None


def redirect_target(wikitext: str) -> str | None:
    """The normalized article title a redirect page points to, else None.

    As MediaWiki's WikitextContent: leading whitespace, `#REDIRECT` in any case, an
    optional colon, whitespace, then the first `[[Target|label]]`; the fragment is dropped.
    Redirects out of the article namespace also give None (see `is_redirect`).
    """
    match = _REDIRECT.match(wikitext)
    if match is None:
        return None
    return normalize_title(match.group(1))
