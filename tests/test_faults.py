"""runtime.local.faults: seeded decisions, and independent delivery draws for re-sends."""

from runtime.local.faults import FaultSpec


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
