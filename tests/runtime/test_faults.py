"""runtime.faults: seeded decisions, and independent delivery draws for re-sends."""

from runtime.faults import FaultSpec


def _spec(text):
    spec = FaultSpec.parse(text)
    assert spec is not None
    return spec


def test_resends_of_one_key_draw_independently():
    """A duplicate execution re-sends identical payloads (same key): the n-th send must not
    repeat the first send's decision."""
    spec = _spec("seed=3,duplicate=0.5,delay=0.5")
    for kind in ("duplicate", "delay"):
        decisions = [spec.hit(kind, "k1") for _ in range(64)]
        assert True in decisions and False in decisions, kind


def test_first_send_is_a_pure_function_of_seed_and_key():
    a, b = _spec("seed=7,duplicate=0.5"), _spec("seed=7,duplicate=0.5")
    keys = [f"key{i}" for i in range(50)]
    first = [a.hit("duplicate", k) for k in keys]
    # b asks in another order and re-asks some keys in between: first sends still agree
    got = {}
    for k in reversed(keys):
        got[k] = b.hit("duplicate", k)
        b.hit("duplicate", k)
    assert first == [got[k] for k in keys]
    # and the sequence of decisions per key is reproducible for the seed
    c, d = _spec("seed=7,duplicate=0.5"), _spec("seed=7,duplicate=0.5")
    assert [c.hit("duplicate", "x") for _ in range(20)] == [d.hit("duplicate", "x") for _ in range(20)]
    e = _spec("seed=8,duplicate=0.5")
    assert [e.hit("duplicate", k) for k in keys] != first


def test_delay_length_follows_the_occurrence():
    spec = _spec("seed=1,delay=1.0")
    lengths = []
    for _ in range(5):
        assert spec.hit("delay", "m:0")
        lengths.append(spec.draw("delay_ms", "m:0"))
    assert len(set(lengths)) == 5
    assert spec.draw("delay_ms", "m:0") == lengths[-1]  # same occurrence, same length


def test_crash_points_stay_pure():
    spec = _spec("seed=2,crash=0.5")
    draws = [spec.hit("mid_invoke", "s", "A", "k", 1) for _ in range(10)]
    assert len(set(draws)) == 1


def test_kill_is_part_of_the_one_spec():
    """The emulated Lambda's kill faults use the same spec: parsed, pure per (key, attempt),
    carried through encode(), and named in the error for an unknown key."""
    spec = _spec("seed=4,kill=0.5,max_kill_ms=60,duplicate=0.2")
    assert spec.rates["kill"] == 0.5 and spec.max_kill_ms == 60
    assert len({spec.hit("kill", "k", 1) for _ in range(10)}) == 1
    assert {spec.hit("kill", f"k{i}", 1) for i in range(40)} == {True, False}
    again = _spec(spec.encode())
    assert again.rates == spec.rates and again.max_kill_ms == 60 and again.seed == 4
    assert [again.hit("kill", f"k{i}", 2) for i in range(40)] == [spec.hit("kill", f"k{i}", 2) for i in range(40)]
    try:
        FaultSpec.parse("kil=0.1")
    except ValueError as exc:
        assert "unknown key 'kil'" in str(exc) and "kill" in str(exc)
    else:
        raise AssertionError("an unknown key was accepted")
    try:
        FaultSpec.parse("kill=2")
    except ValueError as exc:
        assert "not in [0, 1]" in str(exc)
    else:
        raise AssertionError("a probability above 1 was accepted")


def test_duplicating_invoker_sends_the_drawn_copies():
    from runtime.faults import DuplicatingInvoker
    from runtime.ports import Invoker

    class Recorder(Invoker):
        def __init__(self):
            self.sent = []

        def invoke_many(self, calls, delay=0.0):
            self.sent += list(calls)

    calls = [(f"F{i}", {"Session": "s", "i": i}) for i in range(30)]
    inner, told = Recorder(), []
    spec = _spec("seed=9,duplicate=0.5")
    DuplicatingInvoker(inner, spec, "m1/1", lambda fn, p: told.append(fn)).invoke_many(calls)
    extra = inner.sent[len(calls):]
    assert inner.sent[:len(calls)] == calls and 0 < len(extra) < len(calls)
    assert [fn for fn, _ in extra] == told
    inner0 = Recorder()
    DuplicatingInvoker(inner0, _spec("seed=9"), "m1/1").invoke_many(calls)
    assert inner0.sent == calls  # no duplicate rate: nothing extra
