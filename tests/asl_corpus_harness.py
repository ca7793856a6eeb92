"""Compile (and, where they call only Lambda, run) the public state machines of
tests/asl_corpus/ (see its README.md for each one's source)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from runtime.asl import paths
from runtime.asl.errors import AslError
from runtime.asl.machine import LAMBDA_INVOKE, Machine
from runtime.asl.wrapper import lambda_name
from runtime.errors import IRError
from unumctl.asl import compile_definition, resolver

CORPUS = Path(__file__).parent / "asl_corpus"
PLACEHOLDER_ARN = "arn:aws:lambda:us-east-1:123456789012:function:"
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


def substitute(text: str) -> str:
    """Replace each SAM DefinitionSubstitution / Terraform template placeholder `${X}` with the
    Lambda ARN of a function named after X (what the template renders on deploy); one outside
    a JSON string becomes a quoted string."""
    def repl(m: re.Match) -> str:
        name = re.sub(r"[^A-Za-z0-9_-]", "_", m.group(1))
        inside = text.count('"', 0, m.start()) % 2 == 1
        return PLACEHOLDER_ARN + name if inside else json.dumps(PLACEHOLDER_ARN + name)
    return _PLACEHOLDER.sub(repl, text)


def lambda_refs(doc: Any) -> list[str]:
    """Every Lambda function a definition names: Lambda ARN Resources and the static
    FunctionName of lambda:invoke Tasks (Parameters or Arguments), nested states included."""
    out: list[str] = []
    todo = [doc]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            res = node.get("Resource")
            if node.get("Type") == "Task" and isinstance(res, str):
                if res.startswith("arn:aws:lambda:"):
                    out.append(res)
                elif res.startswith(LAMBDA_INVOKE):
                    for f in ("Parameters", "Arguments"):
                        fn = (node.get(f) or {}).get("FunctionName") if isinstance(node.get(f), dict) else None
                        if isinstance(fn, str):
                            out.append(fn)
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return out


def all_paths(doc: Any) -> list[str]:
    """Every JSONPath string value of the definition (`.$` fields and *Path fields)."""
    out: list[str] = []
    todo = [doc]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(v, str) and (k.endswith(".$") or k.endswith("Path") or k == "Variable") \
                        and paths.is_path(v):
                    out.append(v)
                else:
                    todo.append(v)
        elif isinstance(node, list):
            todo.extend(node)
    return out


def entries() -> list[dict[str, Any]]:
    """The corpus index (asl_corpus/corpus.json): file, source, forms, the Lambda functions
    the machine calls (the manifest's functions), and either `refused` (the expected error)
    or `run` (input, each function's result, expected output)."""
    return json.loads((CORPUS / "corpus.json").read_text())


def compile_entry(file: str, functions: list[str]) -> tuple[Any, str | None]:
    """(definition or None, None when it compiles against a manifest of `functions` / the
    one-line error why not)."""
    text = (CORPUS / file).read_text()
    try:
        definition = json.loads(substitute(text))
    except ValueError as exc:
        return None, f"{file}: not valid JSON: {str(exc).splitlines()[0]}"
    functions = {n: {} for n in functions}
    try:
        compile_definition(definition, resolver(functions), sorted(functions), source=file)
    except IRError as exc:
        return definition, str(exc)
    return definition, None


def run_entry(definition: Any, value: Any, returns: dict[str, Any]) -> Any:
    """Run a compiled definition in the ASL interpreter; Lambda function `f` returns
    `returns[f]` (a JSON value)."""
    def invoke(ref: str, event: Any) -> Any:
        return json.loads(json.dumps(returns[lambda_name(ref)]))
    m = Machine(definition, {"Id": "x", "Name": "x", "StartTime": "x", "Input": value},
                clock=lambda: 0.0, sleep=lambda s: None, start_time=0.0)
    return m.run_inline("", definition["StartAt"], value, invoke)
