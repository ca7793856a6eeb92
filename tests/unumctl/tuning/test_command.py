"""Issue 25 item 2 through the command line: `unumctl tune` on local writes a valid plan
whose memory keeps the predicted critical path within the bound; `build`/`plan`/`apply`
honour the plan's memory (the deployment model and the rendered Terraform) and `--no-plan`
ignores it; a bad plan file is one line naming the file and field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from unumctl.deploy.appgraph import build
from unumctl.pipeline import load as load_app
from unumctl.aws.render import render_main
from unumctl.tuning import memory, planfile

from tests.unumctl.test_cli import cli, one_error

ROOT = Path(__file__).resolve().parents[3]


def _example(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(ROOT / "examples" / name, dst, ignore=shutil.ignore_patterns(".unum"))
    return dst


@pytest.mark.parametrize("example", ["iot-pipeline", "wordcount"])
def test_tune_on_local_writes_a_plan_within_the_bound(tmp_path, example):
    app_dir = _example(tmp_path, example)
    code, out, err = cli("tune", str(app_dir), "--sessions", "2", "--latency-bound", "1.1")
    assert code == 0, err
    plan = planfile.load(app_dir, load_app(app_dir).workflow.functions)
    assert plan is not None and not planfile.hand_edited(planfile.plan_path(app_dir))
    fns = set(load_app(app_dir).workflow.functions)
    assert set(plan.memory) == fns and set(plan.reasons) == fns | {"+".join(g) for g in plan.fuse}
    for group in plan.fuse:  # a fused group runs at its first member's size: the members' largest
        assert plan.memory[group[0]] == max(plan.memory[fn] for fn in group)
    assert all(mb in memory.candidates_for("local") for mb in plan.memory.values())
    d = plan.derived
    assert d["cloud"] == "local" and d["sessions"] == 2 and d["latency_bound"] == 1.1
    assert d["predicted_critical_path_ms"] <= 1.1 * d["critical_path_ms"] + 0.1
    # the table: every function with its candidates, one chosen (*) each
    chosen = [ln for ln in out.splitlines() if ln.startswith("  * ")]
    assert len(chosen) == len(fns) and "critical path" in out
    assert sum(1 for ln in err if ln.startswith("tune: session")) == 2
    if example != "iot-pipeline":
        return
    # a hand edit is kept unless --force; --dry-run writes nothing
    path = planfile.plan_path(app_dir)
    path.write_text(path.read_text() + "# mine\n")
    code, _, err = cli("tune", str(app_dir), "--from-history", "--dry-run")
    assert code == 0, err
    assert path.read_text().endswith("# mine\n")
    code, _, err = cli("tune", str(app_dir), "--from-history")
    assert code == 2 and "edited by hand" in one_error(err) and str(path) in one_error(err)
    code, _, err = cli("tune", str(app_dir), "--from-history", "--force")
    assert code == 0 and not planfile.hand_edited(path), err


def _table_sizes(out: str) -> dict[str, int]:
    """function -> the MB marked `*` in tune's table (a block `FN[ [critical path]]: reason`
    then its `  * MB` / `    MB` candidate lines)."""
    sizes, fn = {}, None
    for ln in out.splitlines():
        if ln and not ln.startswith(" ") and ":" in ln:
            fn = ln.split(":", 1)[0].removesuffix(" [critical path]")
        elif ln.startswith("  * ") and fn is not None:
            sizes[fn] = int(ln.split()[1])
    return sizes


def test_tune_leaves_the_maps_parallelism_unless_the_user_accepts_the_fusion(tmp_path):
    """wordcount's two Map regions, fused, would run their branches one after another: by
    default tune writes neither the fusion nor a batch, and prints each with its latency at
    the measured input and at the manifest's expected_width; --allow-serialising writes it.
    The table's chosen size of every function is the plan file's. (A latency bound no
    duration under load can break: only the shape keeps the fusion out.)"""
    app_dir = _example(tmp_path, "wordcount")
    code, out, err = cli("tune", str(app_dir), "--sessions", "2", "--no-plan", "--latency-bound", "100")
    assert code == 0, err
    plan = planfile.load(app_dir, load_app(app_dir).workflow.functions)
    assert plan.fuse == [] and plan.batch == {}, (plan.fuse, plan.batch)
    held = [ln for ln in out.splitlines() if ln.startswith("Split: not fused ['Split', 'Mapper', 'Partition']")]
    assert len(held) == 1 and "--allow-serialising" in held[0], out
    assert "at the measured input (8 branches" in held[0]
    assert "at the declared scale (64 branches, functions.Split.expected_width)" in held[0]
    assert _table_sizes(out) == plan.memory
    code, out, err = cli("tune", str(app_dir), "--from-history", "--allow-serialising", "--latency-bound", "100")
    assert code == 0, err
    plan = planfile.load(app_dir, load_app(app_dir).workflow.functions)
    assert any("Mapper" in g for g in plan.fuse) or "Mapper" in plan.batch, (plan.fuse, plan.batch)
    assert "--allow-serialising" in plan.derived["command"]
    assert _table_sizes(out) == plan.memory  # a fused group's head at the group's size, as in the file
    assert "at the declared scale" in plan.reasons["+".join(next(g for g in plan.fuse if "Mapper" in g))]


def _tf_memory(app, tmp_path: Path) -> dict[str, int]:
    dep = build(app, "aws")
    for f in dep.all_functions:
        f.archive.path, f.archive.sha256 = tmp_path / f"{f.unum_name}.zip", "0" * 64
    text = render_main(dep, tmp_path / "tf")
    return {f.unum_name: f.memory for f in dep.functions}, text


def test_build_honours_the_plans_memory_and_no_plan_ignores_it(tmp_path):
    app_dir = _example(tmp_path, "wordcount")
    manifest = yaml.safe_load((app_dir / "unumctl.yaml").read_text())
    assert manifest["functions"]["Reducer"]["memory"] != 1536
    planfile.dump(planfile.TunePlan(derived={"cloud": "aws"}, memory={"Reducer": 1536}), planfile.plan_path(app_dir))
    app = load_app(app_dir)
    plan = planfile.load(app_dir, app.workflow.functions, cloud="aws")
    mem, text = _tf_memory(planfile.applied(app, plan), tmp_path)
    assert mem["Reducer"] == 1536 and "memory_size            = 1536" in text
    assert mem["Split"] == manifest["functions"]["Split"]["memory"]  # not in the plan: the manifest's
    mem, text = _tf_memory(app, tmp_path)  # what --no-plan builds from
    assert mem["Reducer"] == manifest["functions"]["Reducer"]["memory"] and "= 1536" not in text
    # the commands: build says the plan is in force, --no-plan does not read it
    code, _, err = cli("build", str(app_dir), "--cloud", "local", "--list")
    assert code == 0 and any("plan file in force" in ln and "Reducer 1536 MB" in ln for ln in err), err
    code, _, err = cli("build", str(app_dir), "--cloud", "local", "--list", "--no-plan")
    assert code == 0 and not any("plan file" in ln for ln in err), err


def test_local_platform_takes_the_plans_memory_limit(tmp_path):
    """The local target's FunctionLimits (its memory limit per function) come from the same
    model, so the plan's memory is the local platform's limit."""
    app_dir = _example(tmp_path, "iot-pipeline")
    planfile.dump(planfile.TunePlan(derived={"cloud": "local"}, memory={"Aggregate": 512}), planfile.plan_path(app_dir))
    app = planfile.applied(load_app(app_dir), planfile.load(app_dir, load_app(app_dir).workflow.functions))
    assert {f.unum_name: f.memory for f in build(app, "local").functions}["Aggregate"] == 512


def test_cost_harness_loads_the_app_with_or_without_the_plan(tmp_path):
    """unumctl.cost.measure builds its deployment from unumctl.pipeline.load_planned (the
    plan's memory unless --no-plan)."""
    app_dir = _example(tmp_path, "wordcount")
    planfile.dump(planfile.TunePlan(derived={"cloud": "aws"}, memory={"Summary": 3008}), planfile.plan_path(app_dir))
    from unumctl import pipeline
    with_plan = pipeline.load_planned(app_dir, "aws").app
    without = pipeline.load_planned(app_dir, "aws", use_plan=False).app
    assert with_plan.manifest.functions["Summary"].memory == 3008
    assert without.manifest.functions["Summary"].memory != 3008
    from unumctl.cost import measure
    assert "--no-plan" in measure.__doc__ and "load_planned" in Path(measure.__file__).read_text()


def test_bad_plan_file_stops_build_with_one_line(tmp_path):
    app_dir = _example(tmp_path, "wordcount")
    path = planfile.plan_path(app_dir)
    path.write_text("version: 1\nmemory:\n  Reducer: 64\n")
    code, _, err = cli("build", str(app_dir), "--cloud", "local", "--list")
    line = one_error(err)
    assert code == 2 and str(path) in line and "memory.Reducer" in line
    code, _, err = cli("build", str(app_dir), "--cloud", "local", "--list", "--no-plan")
    assert code == 0, err


def test_plan_renders_the_plans_memory_into_terraform(tmp_path, monkeypatch):
    """The target `unumctl plan`/`apply` use (cli._planned_target) renders the root module
    with the plan's memory (main.tf `memory_size`); with --no-plan, the manifest's."""
    from unumctl import cli as cli_mod
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    app_dir = _example(tmp_path, "iot-pipeline")
    planfile.dump(planfile.TunePlan(derived={"cloud": "aws"}, memory={"Aggregate": 1536}), planfile.plan_path(app_dir))
    for no_plan, want in ((False, 1536), (True, 128)):
        tgt, _, plan = cli_mod._planned_target(app_dir, "aws", "plan", no_plan)
        assert (plan is None) == no_plan
        tgt.render()
        text = (tgt.workdir / "main.tf").read_text()
        block = text[text.index('module "fn_Aggregate" {'):]  # the function's module block
        assert f"memory_size            = {want}" in block.split("}", 1)[0], block[:400]


def test_destroy_outputs_status_do_not_read_the_plan_file(tmp_path):
    """A bad plan file does not block `outputs` (nor destroy/status: the same helper)."""
    app_dir = _example(tmp_path, "iot-pipeline")
    planfile.plan_path(app_dir).write_text("version: 1\nmemory: {Aggregate: 1}\n")
    code, _, err = cli("outputs", str(app_dir), "--cloud", "aws")
    assert code == 2 and "unumctl.plan.yaml" not in one_error(err), err


def test_local_invoke_runs_with_the_plans_memory_limit(tmp_path):
    """`unumctl invoke` on local: a 300 MB allocation that fits the manifest's 512 MB runs out
    of memory under the plan's 128 MB (Runtime.OutOfMemory), and fits again with --no-plan."""
    from tests.unumctl.local.test_platform import HOG, limited_app
    app = limited_app(tmp_path, HOG, memory=512, attempts=1)
    planfile.dump(planfile.TunePlan(derived={"cloud": "local"}, memory={"Work": 128}), planfile.plan_path(app.root))
    (tmp_path / "in.json").write_text('{"mb": 300}')
    code, out, err = cli("invoke", str(app.root), "--data", str(tmp_path / "in.json"), "--session", "p-1")
    assert code == 1 and any("Runtime.OutOfMemory" in ln and "128 MB" in ln for ln in err), err
    code, out, err = cli("invoke", str(app.root), "--data", str(tmp_path / "in.json"), "--session", "p-2",
                         "--no-plan")
    assert code == 0 and int(out) == 300 * 1024 * 1024, err


def test_tune_prints_the_measured_run_as_cost_bills_it(tmp_path):
    """With the emulated run's measurement (`tune --emulated`), tune's bill line is `unumctl
    cost`'s figure for the same measurement: the total per million sessions and each group."""
    from unumctl.cost import report
    from unumctl.cost.prices import load_prices
    from unumctl.tuning import command as tuning
    from tests.unumctl.cost.test_billing import aws_measurement
    app = load_app(_example(tmp_path, "iot-pipeline"))
    event = {"kind": "ran", "user_ms": 3.0, "datastore_ms": 2.0, "invoke_ms": 1.0, "runtime_ms": 1.0,
             "checkpoint_bytes": 300, "peak_memory_mb": 40.0}
    histories = {"s1": [{**event, "function": f} for f in app.workflow.functions]}
    m = aws_measurement(functions=list(app.workflow.functions),
                        executions=[[f, 7.0] for f in app.workflow.functions] * 2,
                        memory_mb={f: 128 for f in app.workflow.functions})
    table = load_prices()
    args = dict(reader=None, prices=table, session_ids=None, limit=None, latency_bound=1.1, objective="cost",
                command="unumctl tune", histories=histories)
    _, lines = tuning.tune(app, "aws", **args, measurement=m)
    (bill,) = [ln for ln in lines if ln.startswith("measured, as unumctl cost bills it")]
    r = report.build(m, table, None)
    assert f"${r['unum']['per_million']:.2f} per million sessions" in bill, (bill, r["unum"]["per_million"])
    for group in {ln["group"] for ln in r["unum"]["lines"]}:
        usd = sum(ln["usd"] for ln in r["unum"]["lines"] if ln["group"] == group)
        assert f"{group} ${usd * 1e6:.2f}" in bill, (group, bill)
    _, lines = tuning.tune(app, "aws", **args)
    assert not any(ln.startswith("measured,") for ln in lines)


def test_fusion_prices_cold_starts_at_the_measured_runs_rate(tmp_path):
    """With a measurement, a removed invocation's cold start is priced at that run's rate
    (cost bills the run's steady state: no cold start, no cold-start saving); without one, at
    one per invocation. iot-pipeline's chain link is fused either way; its saving is smaller
    at the measured rate 0."""
    import re

    from unumctl.cost.prices import load_prices
    from unumctl.tuning import command as tuning
    from tests.unumctl.cost.test_billing import aws_measurement
    app = load_app(_example(tmp_path, "iot-pipeline"))
    fns = list(app.workflow.functions)
    event = {"kind": "ran", "user_ms": 3.0, "datastore_ms": 2.0, "invoke_ms": 1.0, "runtime_ms": 1.0,
             "checkpoint_bytes": 300, "peak_memory_mb": 40.0}
    args = dict(reader=None, prices=load_prices(), session_ids=None, limit=None, latency_bound=1.1,
                objective="cost", command="unumctl tune",
                histories={"s1": [{**event, "function": f} for f in fns]})
    m = aws_measurement(functions=fns, executions=[[f, 7.0] for f in fns], memory_mb={f: 128 for f in fns},
                        cold_starts=0, warmup_sessions=2)
    assert tuning.cold_start_rate(m) == 0.0 and tuning.cold_start_rate(None) is None

    def saving(lines: list[str]) -> float:
        (ln,) = [x for x in lines if x.startswith("fuse ")]
        return float(re.search(r"saves \$([\d.]+) per million sessions", ln).group(1))

    warm = saving(tuning.tune(app, "aws", **args, measurement=m)[1])
    cold = saving(tuning.tune(app, "aws", **args)[1])
    assert 0 < warm < cold, (warm, cold)
