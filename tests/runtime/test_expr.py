"""Safe expressions: runtime variables, field access, no code execution."""

import time

import pytest

from runtime.errors import IRError
from runtime.expr import Assignment, Env, Expr


def ev(src, **env):
    return Expr.compile(src).evaluate(Env(**env))


def test_variables_and_arithmetic():
    env = dict(out={"temp": 61, "tags": ["a", "b"]}, indexes=(4, 2), sizes=(5, 3), iteration=7)
    assert ev("$out.temp > 50", **env) is True
    assert ev("$out['tags'][1]", **env) == "b"
    assert ev("$0", **env) == 2 and ev("$1", **env) == 4
    assert ev("$0 < $size-1", **env) is False and ev("$1 < $size", **env) is False
    assert ev("$0 == $size-1", **env) is True
    assert ev("($0+1) * 10", **env) == 30
    assert ev("$iter", **env) == 7
    assert ev("len($out.tags) == 2 and not $out.temp < 0", **env) is True


@pytest.mark.parametrize("src", [
    "__import__('os').system('true')",
    "().__class__.__bases__[0].__subclasses__()",
    "open('/etc/passwd').read()",
    "exec('x=1')",
])
def test_no_code_execution(src):
    with pytest.raises(IRError):
        ev(src, out={})


def test_syntax_errors_are_ir_errors():
    with pytest.raises(IRError, match="bad expression"):
        Expr.compile("$out >")


def test_assignment_parsing():
    a = Assignment.parse("$0=$0+1")
    assert a.target == "0" and a.expr.evaluate(Env(indexes=(3,), sizes=(5,))) == 4
    assert Assignment.parse("$size = $size - 1").target == "size"
    assert Assignment.parse("$0 == 1") is None
    assert Assignment.parse("Pop") is None


@pytest.mark.parametrize("src,why", [
    ("10**5000", "the result cannot be a JSON number"),
    ("4000000**4000000", "the result cannot be a JSON number"),  # simpleeval's own limits allow it
    ("(2**7000) * (2**7001)", "the result cannot be a JSON number"),
    ("1 << 14001", "the result cannot be a JSON number"),
    ("1e308 * 10", "inf is not a JSON number"),
])
def test_results_that_cannot_be_encoded_or_are_past_the_bound_are_ir_errors(src, why):
    """An integer past MAX_INT_BITS (the json encoder refuses ints of more than 4,300 digits)
    or a non-finite float is an IRError naming the expression, raised before the big value
    is computed (4000000**4000000 answers at once)."""
    t0 = time.monotonic()
    with pytest.raises(IRError) as exc:
        ev(src, out={})
    assert time.monotonic() - t0 < 1
    msg = str(exc.value)
    assert msg.startswith(f"expression {src!r} failed: ") and why in msg and "\n" not in msg
    assert ev("10**4000", out={}) == 10 ** 4000 and ev("2**13999", out={}) == 2 ** 13999


def test_a_modifier_past_the_bound_fails_the_session_cleanly(tmp_path):
    """On local, a payload modifier giving 10**5000 fails the session with IRError naming
    the expression (before: a ValueError traceback in the payload encoder)."""
    from unumctl_testing.apps import make_app
    from unumctl.local import LocalRunner
    from unumctl.pipeline import load as load_app
    code = "def handler(event, context):\n    return event\n"
    app = make_app(tmp_path / "app", "big-mod", {
        "A": ({"Start": True, "Next": {"Name": "B", "Type": "Scalar", "Payload Modifiers": ["$out=10**5000"]}},
              code),
        "B": ({}, code)})
    with LocalRunner(load_app(app), state=tmp_path / "state", quiet=True) as r:
        item = r.run(1, timeout=60)
    assert item["status"] == "FAILED", item
    assert item["error"] == "IRError" and "expression '10**5000' failed: the result cannot be a JSON number" in \
        item["cause"], item
