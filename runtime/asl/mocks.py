"""Mocked Task responses from a Step Functions Local mock configuration file.

Source: AWS Step Functions developer guide "Configuration file for mocked service
integrations in Step Functions" (https://docs.aws.amazon.com/step-functions/latest/dg/sfn-local-mock-cfg-file.html)
and "Using mocked service integrations for testing in Step Functions Local"
(https://docs.aws.amazon.com/step-functions/latest/dg/sfn-local-test-sm-exec.html).

The file is {"StateMachines": {<machine>: {"TestCases": {<case>: {<state>: <response name>}}}},
"MockedResponses": {<response name>: {"<n>" | "<n>-<m>": {"Return": <value>} |
{"Throw": {"Error", "Cause"}}}}}; the keys count the attempts of the state (0 is the first,
"1-2" the second and third). A mocked Task never calls its service or function; a state
the test case does not name runs for real.

Selected by `UNUM_SFN_MOCK_CONFIG` (or Step Functions Local's `SFN_MOCK_CONFIG`: a path)
and `UNUM_SFN_TEST_CASE` (Step Functions Local takes it as `<stateMachineArn>#<case>`).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from .errors import AslError

__all__ = ["answer", "load", "response"]

ENV_CONFIG = "UNUM_SFN_MOCK_CONFIG"
ENV_CONFIG_SFN_LOCAL = "SFN_MOCK_CONFIG"
ENV_TEST_CASE = "UNUM_SFN_TEST_CASE"
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_CACHE: dict[tuple[str, float], dict[str, Any]] = {}


class MockConfigError(ValueError):
    """A malformed mock configuration file (the message names the file and the field)."""


def load(path: str) -> dict[str, Any]:
    """The parsed, checked mock configuration at `path` (cached by modification time).
    Raises MockConfigError naming the file and the field."""
    try:
        key = (path, os.stat(path).st_mtime)
    except OSError as err:
        raise MockConfigError(f"{path}: cannot read the mock configuration ({err.strerror})") from None
    if key not in _CACHE:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except ValueError as err:
            raise MockConfigError(f"{path}: not JSON ({err})") from None
        check(doc, path)
        _CACHE[key] = doc
    return _CACHE[key]


def check(doc: Any, path: str = "mock configuration") -> None:
    """Raise MockConfigError (one line naming the field) unless `doc` has the documented shape."""
    if not isinstance(doc, dict) or not isinstance(doc.get("StateMachines", {}), dict) \
            or not isinstance(doc.get("MockedResponses", {}), dict):
        raise MockConfigError(f"{path}: needs objects StateMachines and MockedResponses")
    responses = doc.get("MockedResponses", {})
    for sm, body in doc.get("StateMachines", {}).items():
        cases = body.get("TestCases") if isinstance(body, dict) else None
        if not isinstance(cases, dict):
            raise MockConfigError(f"{path}: StateMachines.{sm}.TestCases must be an object")
        for case, states in cases.items():
            if not isinstance(states, dict):
                raise MockConfigError(f"{path}: StateMachines.{sm}.TestCases.{case} must be an object")
            for state, ref in states.items():
                if ref not in responses:
                    raise MockConfigError(f"{path}: StateMachines.{sm}.TestCases.{case}.{state}: "
                                          f"{ref!r} is not in MockedResponses")
    for name, steps in responses.items():
        if not isinstance(steps, dict) or not steps:
            raise MockConfigError(f"{path}: MockedResponses.{name} must be a non-empty object")
        for k, v in steps.items():
            if not _RANGE.match(k):
                raise MockConfigError(f"{path}: MockedResponses.{name}.{k}: keys are attempt numbers "
                                      "or ranges (\"0\", \"1-2\")")
            if not isinstance(v, dict) or len(set(v) & {"Return", "Throw"}) != 1:
                raise MockConfigError(f"{path}: MockedResponses.{name}.{k}: needs exactly one of "
                                      "Return or Throw")
            if "Throw" in v and (not isinstance(v["Throw"], dict) or not isinstance(v["Throw"].get("Error"), str)):
                raise MockConfigError(f"{path}: MockedResponses.{name}.{k}.Throw needs an Error string")


def selected() -> tuple[str, str] | None:
    """(config path, test case) from the environment, or None when mocking is off."""
    path = os.environ.get(ENV_CONFIG) or os.environ.get(ENV_CONFIG_SFN_LOCAL)
    case = os.environ.get(ENV_TEST_CASE)
    if not path or not case:
        return None
    return path, case


def response(machine: str, state: str) -> dict[str, Any] | None:
    """The MockedResponses entry for `state` of `machine` in the selected test case, or None."""
    sel = selected()
    if sel is None:
        return None
    doc = load(sel[0])
    case = doc.get("StateMachines", {}).get(machine, {}).get("TestCases", {}).get(sel[1])
    if case is None or state not in case:
        return None
    return doc["MockedResponses"][case[state]]


def answer(steps: dict[str, Any], attempt: int, state: str) -> Any:
    """The mocked outcome of attempt `attempt` (0-based): the Return value, or raises the
    Throw as AslError. An attempt beyond the listed ones raises States.Runtime."""
    for k, v in steps.items():
        m = _RANGE.match(k)
        assert m is not None  # keys checked when the mock file is loaded
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if lo <= attempt <= hi:
            if "Throw" in v:
                raise AslError(v["Throw"]["Error"], v["Throw"].get("Cause", ""))
            return v["Return"]
    raise AslError("States.Runtime", f"state {state!r}: the mock configuration has no response "
                   f"for attempt {attempt}")
