"""vLLM's own side of curation's request contract, run in vLLM's environment
(``make vllm-env``: .venv-vllm, requirements-vllm.txt; vLLM's pins are not emerge's), on
the CPU: no GPU, no model. It imports nothing of emerge; emerge's side hands it the bodies
and answers as JSON (``emerge_lib.curation.contract``).

  .venv-vllm/bin/python scripts/vllm_contract.py schema OUT.json
      vLLM's ChatCompletionRequest as JSON Schema, with the vLLM and xgrammar versions:
      tests/kits/vllm/ChatCompletionRequest.schema.json, which `make test` checks our
      bodies against in emerge's own environment
  .venv-vllm/bin/python scripts/vllm_contract.py check IN.json OUT.json
      IN: {"bodies": [{"label", "body"}], "accepted": [[n, text]], "garbage": [[n, fault,
      text]]}. Each body through vLLM's own code, as its OpenAI server takes it:
      ChatCompletionRequest.model_validate (no field of ours ignored as an extra),
      to_sampling_params (our temperature, max_tokens and constraint arrive), and the
      structured-output backend vLLM's "auto" picks (validate_xgrammar_grammar: xgrammar);
      then the constraint as vLLM holds it, compiled with its xgrammar: every accepted
      answer of the body's count matches, no garbage answer does. OUT: a report.
"""

from __future__ import annotations

import json
import sys
import time
from importlib.metadata import version
from typing import Any


def _request_model() -> Any:
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    return ChatCompletionRequest


def schema(out: str) -> None:
    model = _request_model()
    doc = {"vllm": version("vllm"), "xgrammar": version("xgrammar"),
           "exported_by": "scripts/vllm_contract.py schema",
           "ChatCompletionRequest": model.model_json_schema()}
    with open(out, "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True)
        fh.write("\n")


def _accepts(compiled: Any, text: str) -> bool:
    import xgrammar as xgr

    matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
    return matcher.accept_string(text) and matcher.is_terminated()


def check(src: str, out: str) -> int:
    import xgrammar as xgr
    from vllm.v1.structured_output.backend_xgrammar import validate_xgrammar_grammar
    from vllm.v1.structured_output.utils import grammar_is_likely_lark

    model = _request_model()
    data = json.load(open(src))
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)
    compiled: dict[tuple[str, str], Any] = {}
    report: dict[str, Any] = {"vllm": version("vllm"), "xgrammar": version("xgrammar"),
                              "bodies": 0, "taken": 0, "answers_checked": 0,
                              "failures": []}
    started = time.monotonic()
    for item in data["bodies"]:
        label, body = item["label"], item["body"]
        report["bodies"] += 1
        try:
            req = model.model_validate(body)
        except Exception as exc:  # vLLM's server answers 400 with this
            report["failures"].append(f"{label}: refused: {exc}")
            continue
        ignored = sorted(set(body) - set(type(req).model_fields))
        if ignored or req.model_extra:
            report["failures"].append(f"{label}: fields vLLM ignores: "
                                      f"{ignored or sorted(req.model_extra)}")
            continue
        sp = req.to_sampling_params(max_tokens=body["max_tokens"], default_sampling_params={})
        so = sp.structured_outputs
        sent = body["structured_outputs"]
        held = {k: getattr(so, k) for k in ("regex", "grammar", "choice", "json")
                if so is not None and getattr(so, k) is not None}
        if held != sent:
            report["failures"].append(f"{label}: the constraint arrived as {held}, sent {sent}")
            continue
        if sp.temperature != body["temperature"] or sp.max_tokens != body["max_tokens"]:
            report["failures"].append(f"{label}: temperature {sp.temperature} / max_tokens "
                                      f"{sp.max_tokens}, sent {body['temperature']} / "
                                      f"{body['max_tokens']}")
            continue
        try:
            validate_xgrammar_grammar(sp)  # what "auto" tries first: xgrammar when it passes
        except Exception as exc:
            report["failures"].append(f"{label}: not for xgrammar (auto would fall back to "
                                      f"guidance): {exc}")
            continue
        (field, spec), = held.items()
        if field == "grammar" and grammar_is_likely_lark(spec):
            report["failures"].append(f"{label}: vLLM would read the GBNF grammar as Lark")
            continue
        key = (field, spec)
        if key not in compiled:
            grammar = (xgr.Grammar.from_regex(spec) if field == "regex"
                       else xgr.Grammar.from_ebnf(spec))
            compiled[key] = compiler.compile_grammar(grammar)
        n = item["n"]
        for m, text in data["accepted"]:
            if m == n:
                report["answers_checked"] += 1
                if not _accepts(compiled[key], text):
                    report["failures"].append(f"{label}: refuses an answer we read: {text!r}")
        for m, fault, text in data["garbage"]:
            if m == n:
                report["answers_checked"] += 1
                if _accepts(compiled[key], text):
                    report["failures"].append(f"{label}: accepts the {fault} fault's "
                                              f"garbage: {text!r}")
        report["taken"] += 1
    report["seconds"] = round(time.monotonic() - started, 1)
    with open(out, "w") as fh:
        json.dump(report, fh, indent=1)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "schema":
        schema(argv[1])
        return 0
    if len(argv) == 3 and argv[0] == "check":
        return check(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
