"""LLM curation (not built yet; the [curation] issue builds it).

Will read ``instances`` and ``passages`` and write verdicts per (instance, prompt type,
model), asking OpenAI-compatible endpoints (vLLM on GPU workers, llama.cpp locally) with
the paper's two prompts word for word. It runs as the ``curate`` stage of
``emerge_lib.pipeline``.
"""
