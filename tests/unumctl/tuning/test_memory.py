"""Issue 25 item 2: the memory planner (unumctl/tuning/memory.py) keeps the predicted
critical path within the latency bound, and the plan file (unumctl/tuning/planfile.py)
refuses bad input with one line naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from unumctl.cost.prices import load_prices
from unumctl.tuning import memory, planfile
from unumctl.tuning.metrics import from_events, billing_increment_ms


def _events(durations: dict[str, float], sessions: int = 3) -> dict[str, list[dict]]:
    """Synthetic history: each function ran once per session taking its duration, all of it
    CPU (user code), peak 50 MB."""
    return {f"s{i}": [{"kind": "ran", "function": fn, "user_ms": ms, "datastore_ms": 0.0, "invoke_ms": 0.0,
                       "runtime_ms": 0.0, "peak_memory_mb": 50.0, "payload_bytes": 10, "checkpoint_bytes": 20}
                      for fn, ms in durations.items()]
            for i in range(sessions)}


def test_cheapest_size_that_breaks_the_bound_is_not_chosen():
    """gcp (100 ms billing): B is on the critical path (A -> B) and its cheapest size (128 MB,
    0.083 vCPU) is 7x slower, over the 1.10 bound: B is not downgraded (it goes UP to
    2048 MB, 1 vCPU: 87 ms billed as 100 ms instead of 150 ms as 200 ms, faster and
    cheaper, which objective `cost` takes). C, off the critical
    path, goes down to 512 MB (cheaper, and A -> C stays shorter than the bound) and stops
    there (256 MB would make A -> C the longest path, over the bound)."""
    prices = load_prices()
    graph = {"A": ["B", "C"], "B": [], "C": []}
    m = from_events(_events({"A": 10.0, "B": 150.0, "C": 50.0}), "gcp", billing_increment_ms("gcp", prices))
    plan = memory.plan_memory(graph, m, {"A": 1024, "B": 1024, "C": 1024}, prices, latency_bound=1.10)
    assert plan.critical_path == ["A", "B"] and plan.measured_cp_ms == pytest.approx(160.0)
    b = plan.functions["B"]
    cheapest = min(b.candidates, key=lambda c: c.usd)
    assert cheapest.memory_mb == 128 and cheapest.usd < b.candidate(1024).usd  # the trap is there
    assert b.chosen_mb == 2048 and b.candidate(2048).usd < b.candidate(1024).usd
    assert plan.functions["C"].chosen_mb == 512
    assert plan.predicted_cp_ms <= 1.10 * plan.measured_cp_ms
    assert plan.usd_after < plan.usd_before
    # a looser bound lets B go down too: the bound, not the cost, kept it
    loose = memory.plan_memory(graph, m, {"A": 1024, "B": 1024, "C": 1024}, prices, latency_bound=4.0)
    assert loose.functions["B"].chosen_mb < 1024
    assert loose.predicted_cp_ms <= 4.0 * loose.measured_cp_ms
    lines = memory.table(plan)
    assert any(ln.strip().startswith("* ") and "2048 MB" in ln for ln in lines)


def test_lambda_above_one_vcpu_is_not_faster():
    """aws: a function at 3008 MB runs no faster than at 1769 MB (one vCPU, one Python thread),
    so 1769 MB is chosen, cheaper at the same predicted duration."""
    prices = load_prices()
    m = from_events(_events({"A": 400.0}), "aws", billing_increment_ms("aws", prices))
    plan = memory.plan_memory({"A": []}, m, {"A": 3008}, prices)
    a = plan.functions["A"]
    assert a.chosen_mb == 1769 and a.candidate(1769).duration_ms == pytest.approx(400.0)
    assert plan.predicted_cp_ms == pytest.approx(plan.measured_cp_ms)


def test_bad_bound_and_objective():
    prices = load_prices()
    m = from_events(_events({"A": 1.0}), "aws", 1.0)
    with pytest.raises(ValueError, match="--latency-bound"):
        memory.plan_memory({"A": []}, m, {"A": 128}, prices, latency_bound=0.9)
    with pytest.raises(ValueError, match="--objective"):
        memory.plan_memory({"A": []}, m, {"A": 128}, prices, objective="fast")


FNS = {"Split", "Mapper", "Reducer"}


@pytest.mark.parametrize("body, field", [
    ("memory: {Nope: 256}", "memory.Nope"),
    ("memory: {Split: 64}", "memory.Split"),
    ("memory: {Split: 20000}", "memory.Split"),
    ("memory: {Split: big}", "memory.Split"),
    ("fuse: [[Split]]", "fuse[0]"),
    ("fuse: [[Split, Mapper], [Mapper, Reducer]]", "fuse[1]"),
    ("batch: {Reducer: 0}", "batch.Reducer"),
    ("colour: blue", "colour"),
    ("memory: [1", "not valid YAML"),
])
def test_bad_plan_file_is_one_line_naming_file_and_field(tmp_path, body, field):
    path = tmp_path / planfile.PLAN_FILE
    path.write_text("version: 1\nderived: {cloud: aws}\n" + body + "\n")
    with pytest.raises(planfile.PlanFileError) as err:
        planfile.load(tmp_path, functions=FNS)
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg and field in msg


def test_plan_file_round_trip_and_hand_edit(tmp_path):
    assert planfile.load(tmp_path, functions=FNS) is None
    plan = planfile.TunePlan(derived={"cloud": "gcp", "sessions": 2, "latency_bound": 1.1},
                             memory={"Split": 20000, "Mapper": 256}, fuse=[["Mapper", "Reducer"]],
                             batch={"Reducer": 8}, reasons={"Split": "why"})
    path = planfile.plan_path(tmp_path)
    planfile.dump(plan, path)
    assert planfile.load(tmp_path, functions=FNS) == plan  # 20000 MB is within gcp's range
    assert not planfile.hand_edited(path)
    path.write_text(path.read_text().replace("256", "512"))
    assert planfile.hand_edited(path) and planfile.load(tmp_path, functions=FNS).memory["Mapper"] == 512
    with pytest.raises(planfile.PlanFileError, match="memory.Split"):
        planfile.load(tmp_path, functions=FNS, cloud="aws")  # over Lambda's 10,240 MB


def test_objective_speed_takes_the_fastest_on_the_critical_path():
    """aws, one function measured at 128 MB: `cost` keeps it (larger sizes are predicted faster
    but not cheaper at 1 ms billing); `speed` takes the fastest (1769 MB: one vCPU; larger
    sizes are no faster, so the cheaper wins the tie); `balanced` lies in between."""
    prices = load_prices()
    m = from_events(_events({"A": 300.0}), "aws", billing_increment_ms("aws", prices))
    sizes = {"A": 128}
    assert memory.plan_memory({"A": []}, m, sizes, prices, objective="cost").memory == {"A": 128}
    fast = memory.plan_memory({"A": []}, m, sizes, prices, objective="speed")
    assert fast.memory == {"A": 1769} and fast.predicted_cp_ms < fast.measured_cp_ms
    mid = memory.plan_memory({"A": []}, m, sizes, prices, objective="balanced").memory["A"]
    assert 128 <= mid <= 1769


def test_tune_prices_fusion_with_the_targets_prices(tmp_path):
    """`tune --cloud gcp` chooses and explains fusion with gcp's prices (it used AWS's for
    every target): the reasons equal colocate.choose's on gcp, not on aws; local's are aws's."""
    from unumctl.pipeline import load as load_app
    from unumctl.tuning import colocate
    from unumctl.tuning.command import tune
    app = load_app(Path(__file__).resolve().parents[3] / "examples" / "iot-pipeline")
    prices = load_prices()
    hist = _events({"Aggregate": 5.0, "HvacDecide": 5.0}, sessions=3)
    plan, _ = tune(app, "gcp", reader=None, prices=prices, session_ids=None, limit=None, latency_bound=1.1,
                   objective="cost", command="test", histories=hist)
    m = from_events(hist, "gcp", billing_increment_ms("gcp", prices))
    on = {c: colocate.choose(app, m, cloud=c, prices=prices)[2] for c in ("gcp", "aws")}
    group = "Aggregate+HvacDecide"
    assert plan.fuse == [["Aggregate", "HvacDecide"]]
    assert on["gcp"][group] != on["aws"][group]
    assert plan.reasons[group] == on["gcp"][group]
    # local stands for Lambda (unumctl/local/stands_for.py): priced as aws, not as free
    assert colocate.choose(app, m, cloud="local", prices=prices)[2] == on["aws"]
