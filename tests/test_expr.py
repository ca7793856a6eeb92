"""Safe expressions: runtime variables, field access, no code execution."""

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
