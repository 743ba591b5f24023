"""LLM curation: the paper's two prompts (Appendix B), word for word, asked of
OpenAI-compatible endpoints (vLLM on GPU workers, llama.cpp with SmolLM2 locally).

``prompts`` renders them, ``answers`` reads the YES/NO back (and builds the constraint
that makes every answer parse), ``client`` talks to the servers (concurrency, retries,
budget), ``rules`` turns verdicts into asserted operations; the ``curate`` stage
(``emerge_lib.curation.verdicts``) plans the requests and commits the verdicts.
"""

from __future__ import annotations

from typing import Any


def endpoint_overrides(url: str, *, backend: str | None = None, model: str | None = None,
                       quantization: str | None = None, **settings: Any) -> dict:
    """``curation`` overrides that send every route to one server. With a ``model`` the
    routes are named after it too: a release records the model that judged, so a
    SmolLM2 answer is never filed under Llama 3.1; without one each route keeps its
    released name, which is also the model it asks the server for. ``quantization``: the
    served weights' precision, which the release's card states."""
    route: dict[str, Any] = {"url": url}
    if backend:
        route["backend"] = backend
    if model:
        route |= {"name": model, "model": model}
    if quantization:
        route["quantization"] = quantization
    return {"enabled": True, "additions": route, "deprecations": dict(route), **settings}
