"""The one pipeline of a deployment: load -> compile -> apply the tune plan -> model ->
package -> render.

Every command that needs an app in some stage of it asks this module, in this order:

1. `load(path)`: the manifest and the workflow, the hand-written IR, a Step Functions
   definition compiled to IR in memory (unumctl/asl `compile_app`) or a Python `@workflow`
   traced to IR (unumctl/python.py `compile_workflow`), the code checks
   (unumctl/manifest.py `checked_app`). Loading reads and never writes: nothing in the app's
   directory is created or changed (tests/unumctl/test_pipeline_load.py); the stub handler
   of the compiler's synthesized functions is written into their bundles (step 4).
2. `planned(app, cloud, use_plan)`: the tune plan file `APP/unumctl.plan.yaml` applied
   (unumctl/tuning/planfile.py: memory, fused groups, batched Maps), unless `--no-plan`.
3. `model(app, cloud, **flags)`: the target's deployment model (unumctl/deploy/appgraph.py
   `build`, its TargetSpec `model`), archives as placeholders.
4. `package(app, dep)`: the archives built (unumctl/build.py) and filled into the model.
5. `rendered(app, dep, render)`: package, then the target's renderer over the packaged
   model (aws: unumctl/aws/render.py; gcp: unumctl/gcp/render.py); Terraform is the
   target's (unumctl/terraform.py).

This is AWS Chalice's one factory that wires builder -> packager -> planner -> executor
(chalice/deploy/deployer.py `create_default_deployer`): the CLI (unumctl/cli.py), the targets
(unumctl/<cloud>/target.py, unumctl/local/), `tune`, `cost` and the test harness
(unumctl_testing/) call these steps instead of assembling them; tests/unumctl/test_pipeline.py fails
when `compile_app(`, `build(` of appgraph, `package(`, `deployment(` or the plan's `applied(`
is called anywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from runtime.errors import IRError

from .deploy.models import Deployment
from .manifest import (MANIFEST, App, AppError, app_root, check_workflow_source, checked_app, load_ir_dir,
                       load_manifest, parse_python_spec, step_function_spec)
from .triggers import parse_triggers

R = TypeVar("R")


@dataclass(frozen=True)
class Planned:
    """An app with its tune plan applied: `app` (unumctl.manifest.App) and `plan` (the
    planfile.TunePlan in force, or None: no plan file, or `--no-plan`)."""

    app: App
    plan: Any = None


def load(path: str | Path) -> App:
    """Step 1: the app at `path` (its directory or its unumctl.yaml). A Step Functions app's
    definition is compiled in memory (unumctl.asl.compile_app returns the compiled functions;
    the manifest read from disk is not changed). Writes nothing.

    Raises AppError naming the file and field: unknown/missing functions, missing code
    directory or handler module, malformed IR or state machine."""
    root = app_root(path)
    manifest = load_manifest(root)
    mpath = root / MANIFEST
    check_workflow_source(manifest, mpath)
    triggers = parse_triggers({"triggers": manifest.triggers}, mpath)
    synthesized: frozenset[str] = frozenset()
    try:
        if manifest.workflow.ir is not None:
            workflow = load_ir_dir(root / manifest.workflow.ir, mpath)
        elif manifest.workflow.python is not None:
            from .python import compile_workflow  # the Python front end
            if manifest.functions:
                raise AppError(f"{mpath}: functions: a Python workflow's functions are its @step "
                               "functions; remove functions: and set memory, timeout and "
                               "requirements in @step(...)")
            file, name = parse_python_spec(manifest.workflow.python)
            workflow, fields = compile_workflow(root, file, name, mpath)
            manifest = manifest.model_copy(update={"functions": {
                n: step_function_spec(n, f, site) for n, (f, site) in fields.items()}})
        else:
            try:
                from .asl import compile_app, is_synthesized  # the Step Functions front end
            except ImportError:
                raise AppError(f"{mpath}: workflow.stepfunctions: this build has no Step Functions "
                               "front-end; use workflow.ir") from None
            workflow, functions = compile_app(root, manifest, mpath)
            manifest = manifest.model_copy(update={"functions": functions})
            synthesized = frozenset(n for n, spec in functions.items() if is_synthesized(spec))
    except IRError as exc:
        raise AppError(str(exc)) from None
    app = checked_app(root, manifest, workflow, synthesized)
    app.triggers = triggers
    return app


def tune_plan(app: App, cloud: str, use_plan: bool = True) -> Any:
    """The tune plan of `app` for `cloud` (planfile.load: its memory checked against the
    cloud's range), or None when there is no plan file or not `use_plan`. Raises
    PlanFileError (one line: file, field, fix)."""
    if not use_plan:
        return None
    from .tuning import planfile
    return planfile.load(app.root, set(app.workflow.functions), cloud)


def planned(app: App, cloud: str, use_plan: bool = True, plan: Any = None) -> Planned:
    """Step 2: `app` with its tune plan for `cloud` applied (planfile.applied: memory into
    the functions, fuse and batch into the IR; nothing on disk changes); `plan`: the plan
    already read by `tune_plan`, else it is read here. Raises PlanFileError, FusionError (a
    ValueError, one line)."""
    from .tuning import planfile
    if plan is None:
        plan = tune_plan(app, cloud, use_plan)
    if plan is None:
        return Planned(app, None)
    return Planned(planfile.applied(app, plan), plan)


def load_planned(path: str | Path, cloud: str, use_plan: bool = True) -> Planned:
    """Steps 1 and 2: `planned(load(path), cloud, use_plan)`."""
    return planned(load(path), cloud, use_plan)


def model(app: App, cloud: str, **flags: Any) -> Deployment:
    """Step 3: the deployment model of `app` on `cloud` (unumctl/deploy/appgraph.py `build`;
    `flags`: the command line's settings, None = not given). Nothing is built or written.
    AppError for a name the cloud would reject; ValueError for an unknown target."""
    from .deploy.appgraph import build
    return build(app, cloud, **flags)


def package(app: App, dep: Deployment) -> Deployment:
    """Step 4: build every archive of `dep` (unumctl/build.py, under `<app>/.unum/build`)
    and fill the model's placeholders; returns `dep`. Raises what the builders raise
    (AppError, AWS PackagingError)."""
    from .deploy.appgraph import package as build_archives
    return build_archives(app, dep)


def deployment(app: App, cloud: str, **flags: Any) -> Deployment:
    """Steps 3 and 4: the model of `app` on `cloud` with its archives built."""
    return package(app, model(app, cloud, **flags))


def bundles(app: App, cloud: str, settings: Any = None, out_dir: Path | None = None) -> dict[str, Any]:
    """Step 4 without a model (`unumctl build`, the emulated gcp platform): every function's
    bundle for `cloud` (unumctl.build.build_app: function -> Artifact), in `out_dir`
    (default `<app>/.unum/build/<cloud>`)."""
    from .build import build_app
    return build_app(app, cloud, out_dir, settings=settings)


def rendered(app: App, dep: Deployment, render: Callable[[Deployment], R]) -> R:
    """Steps 4 and 5: package `dep`, then the target's `render` over the packaged model;
    returns what `render` returns. Raises what the packager and the renderer raise."""
    return render(package(app, dep))


__all__ = ["Planned", "bundles", "deployment", "load", "load_planned", "model", "package", "planned",
           "rendered", "tune_plan"]
