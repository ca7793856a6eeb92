"""The `unumctl` command line (Typer).

Results go to stdout as JSON; progress, logs and errors go to stderr. Exit codes: 0 success,
1 the session failed, 2 bad input (manifest, IR, data file, flags) or a target error,
3 no result yet (`result`), 4 NOT_PLANNED (`plan` checked what it could offline but made no
Terraform plan: the JSON on stdout says what was checked and, in `not_done`, why), 128+N when stopped by signal N (SIGINT, SIGTERM, SIGHUP: the
local workers are stopped and temporary files removed; `resume` finishes the session).
`--debug` shows tracebacks.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import traceback
from pathlib import Path
from typing import Any, Iterator, Optional

import typer

from runtime.errors import IRError, UnumError
from runtime.payload import SessionId

from . import pipeline, registry
from .cliopts import STAGE, GlobalOptionsGroup, check_workers, deploy_cloud
from .inputs import read_json
from .manifest import AppError
from .targets import TargetError, get_target

__all__ = ["app", "main"]

app = typer.Typer(cls=GlobalOptionsGroup, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None,
                  help="Deploy and run workflows of FaaS functions with decentralized Unum "
                       "orchestration.\n\nExample: unumctl invoke examples/wordcount "
                       "--data examples/wordcount/input.json")
_state: dict[str, Any] = {"debug": False, "target": {}}

CLOUD = typer.Option("local", "--cloud", "-c", help="Target: local (default), aws or gcp.")
DEPLOY_CLOUD = typer.Option(None, "--cloud", "-c", help="aws or gcp (default: the one cloud "
                            "named under clouds: in unumctl.yaml).")


class Failed(Exception):
    """The session failed (exit code 1)."""


class Interrupted(BaseException):
    """A stop signal arrived (raised in the main thread so that cleanup runs)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _stoppable(what: str) -> Iterator[None]:
    """Turn SIGINT/SIGTERM/SIGHUP into Interrupted so that context managers (the local
    platform: workers, temporary directory) clean up; then exit 128+signal with one line.
    Further signals are ignored while cleaning up."""

    def handler(signum: int, frame: Any) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        raise Interrupted(signum)

    old = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    except Interrupted as exc:
        _err(f"stopped by {signal.Signals(exc.signum).name}; {what}")
        raise typer.Exit(128 + exc.signum)
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def _session_arg(session: Optional[str], flag: str) -> Optional[SessionId]:
    """A session id from the command line parsed into a SessionId (runtime.payload: the one
    validator), once, at the edge: ValueError naming the flag and the fix."""
    if session is None:
        return None
    try:
        return SessionId(session)
    except UnumError as exc:
        raise ValueError(f"{flag}: {exc} (e.g. run-42)") from None


NOT_PLANNED = 4  # `plan` exit code: checked offline, but no Terraform plan was made (docs/guide/commands.md)


def _err(msg: str) -> None:
    typer.echo(f"unumctl: {msg}", err=True)


def _run(fn, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except (AppError, IRError, TargetError, FileNotFoundError, ValueError) as exc:
        if _state["debug"]:
            traceback.print_exc()
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        _err(msg if len(msg) <= 1000 else f"{msg[:1000]}... ({len(msg)} characters)")
        raise typer.Exit(2)
    except Failed as exc:
        _err(str(exc))
        raise typer.Exit(1)


def _version(value: bool) -> None:
    if value:
        from . import __version__
        typer.echo(f"unumctl {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                       help="Print the version and exit."),
          debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
          region: Optional[str] = typer.Option(None, "--region", help="Cloud region (aws: overrides "
                                               "clouds.aws.region and AWS_REGION)."),
          profile: Optional[str] = typer.Option(None, "--profile", help="AWS profile (overrides "
                                                "clouds.aws.profile and AWS_PROFILE)."),
          architecture: Optional[str] = typer.Option(None, "--architecture", help="aws: Lambda "
                                                     "architecture x86_64 or arm64 (overrides "
                                                     "clouds.aws.architecture)."),
          lambda_runtime: Optional[str] = typer.Option(None, "--lambda-runtime", help="aws: Lambda "
                                                       "runtime, e.g. python3.13 (overrides "
                                                       "clouds.aws.runtime).")) -> None:
    _state["debug"] = debug
    _state["target"] = {k: v for k, v in (("region", region), ("profile", profile),
                                          ("architecture", architecture), ("runtime", lambda_runtime)) if v}


def _target(cloud: str, a: Any, **options: Any):
    """get_target with the global --region/--profile/--architecture/--lambda-runtime options
    (and a command's `stage`: --stage, None = the manifest's `stage:`, else dev)."""
    return get_target(cloud, a, **{**_state["target"], **options})


def _read_data(path: Path, flag: str = "--data") -> Any:
    return read_json(path, flag)


NO_PLAN = typer.Option(False, "--no-plan", help="Ignore the plan file APP/unumctl.plan.yaml "
                       "(written by `unumctl tune`; docs/tune.md).")


def _planned(a: Any, cloud: str, no_plan: bool, say: bool = True) -> tuple[Any, Any]:
    """(`a` with its plan file applied (unumctl.tuning.planfile), the plan or None); with
    `no_plan`, (`a`, None). Says on stderr when a plan file is in force (unless not `say`).
    A bad plan file: one line naming the file and field, exit 2."""
    from .tuning import planfile
    plan = _run(pipeline.tune_plan, a, cloud, not no_plan)
    if plan is None:
        return a, None
    mem = ", ".join(f"{fn} {mb} MB" for fn, mb in sorted(plan.memory.items()))
    if say:
        typer.echo(f"plan file in force: {planfile.plan_path(a.root)} (memory: {mem or 'none'}; "
                   f"fuse: {plan.fuse or 'none'}; batch: {plan.batch or 'none'}); --no-plan ignores it", err=True)
    return _run(pipeline.planned, a, cloud, plan=plan).app, plan


def _plan_note(a: Any, plan: Any) -> dict[str, Any]:
    """The `plan_file` key of `plan`/`apply`'s JSON: where the plan in force is and its memory."""
    from .tuning import planfile
    return {"plan_file": {"path": str(planfile.plan_path(a.root)), "memory": plan.memory}} if plan else {}


def _deploy_target(app_dir: Path, cloud: Optional[str], command: str, stage: Optional[str] = None,
                   **options: Any):
    """Load the app and the target of a deployment command (cloud from the manifest when
    --cloud is not given: cliopts.deploy_cloud) at `stage` (--stage; None: the manifest's),
    with extra target `options`."""
    a = _run(pipeline.load, app_dir)
    return _run(_target, _run(deploy_cloud, cloud, a.manifest.clouds, command), a, stage=stage, **options)


def _planned_target(app_dir: Path, cloud: Optional[str], command: str, no_plan: bool,
                    stage: Optional[str] = None):
    """As `_deploy_target` for `plan` and `apply`, with the plan file applied unless
    `no_plan`: (target, app, plan or None). (`destroy`, `outputs`, `status` do not read the
    plan file: a bad one must not block them.)"""
    a = _run(pipeline.load, app_dir)
    cloud = _run(deploy_cloud, cloud, a.manifest.clouds, command)
    a, plan = _planned(a, cloud, no_plan)
    return _run(_target, cloud, a, stage=stage), a, plan


AWS_ENDPOINT_HELP = ("Local/serve: the endpoint of the Step Functions service integrations "
                     "(LocalStack, DynamoDB Local, moto_server), e.g. http://127.0.0.1:4566, signed with "
                     "placeholder keys; `aws`: real AWS with your credentials (without it they are never "
                     "used; default: the embedded emulator); overrides UNUM_AWS_ENDPOINT and the "
                     "manifest's integrations.aws_endpoint.")


def _aws_endpoint(url: Optional[str]) -> None:
    """`--aws-endpoint URL`: checked, then given to the local workers through
    UNUM_AWS_ENDPOINT (unumctl.deploy.settings.IntegrationsSection)."""
    if url is None:
        return
    from .deploy.settings import check_endpoint
    try:
        check_endpoint(url)
    except ValueError as exc:
        _err(f"--aws-endpoint: {exc}")
        raise typer.Exit(2)
    os.environ["UNUM_AWS_ENDPOINT"] = url


@app.command()
def init(directory: Path = typer.Argument(Path("."), metavar="[DIR]",
                                          help="New or empty directory for the app (default: here); "
                                               "its name is the app's name."),
         template: str = typer.Option("chain", "--template", "-t", help="Template (see --list)."),
         name: Optional[str] = typer.Option(None, "--name", help="App name (default: DIR's name)."),
         list_: bool = typer.Option(False, "--list", help="List the templates (name and description) "
                                    "and exit.")) -> None:
    """Create a working app from a template: manifest, IR or state machine, handlers,
    input.json, expected_output.json and tests/ (pytest, which unumctl does not install; the
    test runs the `unumctl` on PATH). init only writes the files: the app is ready to validate
    and invoke on local as written. Stdout: {"app", "template", "dir", "files"} as JSON;
    stderr: what to run next.

    Example: unumctl init my-app --template map-fan-in
    """
    from .init import init_app, templates
    if list_:
        known = _run(templates)
        width = max(map(len, known))
        for tname, desc in known.items():
            typer.echo(f"{tname:<{width}}  {desc}")
        return
    made = _run(init_app, directory, template, name)
    d = str(directory)
    _err(f"created {made['app']} from template {template} in {d}; next:")
    for step in ([f"cd {d}"] if d != "." else []) + [
            "unumctl validate .", "unumctl invoke . --data input.json   # prints expected_output.json",
            "python -m pytest tests", "unumctl plan . --cloud aws --out app.tfplan   # docs/aws.md"]:
        typer.echo(f"  {step}", err=True)
    _print_json(made)


@app.command()
def validate(app_dir: Path = typer.Argument(..., help="App directory (holding unumctl.yaml).")) -> None:
    """Check the manifest and the workflow IR, then import each function's module in an
    isolated process (no network, a timeout) and check that its handler is callable.

    Example: unumctl validate examples/wordcount
    """
    from .check import check_app
    a = _run(pipeline.load, app_dir)
    for cloud in a.manifest.clouds.named():  # the typed clouds.* sections were checked on load;
        _run(pipeline.model, a, cloud)        # the model checks the names each cloud would reject
    findings = check_app(a)
    for f in findings:
        if f.note:
            _err(f"note: {f.message}")
    bad = [f for f in findings if not f.ok]
    if bad:
        for f in bad:
            _err(f.message)
        raise typer.Exit(2)
    typer.echo(f"{a.name}: {_summary(a)}: OK", err=True)


def _summary(a: Any) -> str:
    """What `validate` checked, in the user's terms: the IR functions and the entry; for a
    Step Functions app the state machine's StartAt and the Lambda functions the manifest names
    (not the compiled functions, some of which the compiler synthesizes)."""
    sf = a.manifest.workflow.stepfunctions
    if sf is None:
        return f"{len(a.workflow.functions)} functions, entry {a.workflow.entry.name}"
    from .asl import load_definition
    from .manifest import load_manifest
    start = _run(load_definition, a.root / sf).get("StartAt")
    lambdas = len(_run(load_manifest, a.root).functions)
    return (f"state machine {sf} starts at state {start}, {lambdas} Lambda functions "
            f"({len(a.workflow.functions)} compiled functions)")


@app.command(name="compile")
def compile_cmd(app_dir: Path = typer.Argument(..., help="App directory."),
                out: Optional[Path] = typer.Option(None, "--out", "-o",
                                                   help="Write <Function>.yaml per function here "
                                                        "instead of printing them.")) -> None:
    """Compile the app's workflow (a Step Functions state machine or IR files) and print or
    write the IR of every function, including the compiled ASL `Wrapper`."""
    import yaml

    def go() -> None:
        loaded = pipeline.load(app_dir)
        docs = {n: f.to_dict() for n, f in sorted(loaded.workflow.functions.items())}
        if out is None:
            typer.echo(yaml.safe_dump_all(list(docs.values()), sort_keys=False), nl=False)
            return
        out.mkdir(parents=True, exist_ok=True)
        for name, doc in docs.items():
            (out / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        _err(f"wrote {len(docs)} IR file(s) to {out}")

    _run(go)


@app.command()
def build(app_dir: Path = typer.Argument(..., help="App directory."), cloud: str = CLOUD,
          list_: bool = typer.Option(False, "--list", help="Print what each bundle holds "
                                     "(function, archive path, bytes; tab-separated) and, on "
                                     "stderr, what was left out and why, instead of building."),
          no_plan: bool = NO_PLAN) -> None:
    """Build one deterministic zip bundle per function (rebuilt only when inputs change).

    Prints a JSON object function -> {path, sha256}. With --list, one line per file of each
    bundle: function, archive path, size in bytes (what the bundle would hold; nothing built),
    and on stderr one line per path left out of a code directory: `left out`, function, path,
    reason (tab-separated). Left out: files matched by the default ignore list or the code
    directory's .unumignore, virtual environments, files holding a private key
    (docs/security.md).

    The plan file (APP/unumctl.plan.yaml, `unumctl tune`) is checked and said to be in force
    (its memory applies to the deployment: `plan`, `apply`, the local platform); --no-plan
    ignores it.

    Example: unumctl build examples/wordcount --cloud local --list
    """
    a = _run(pipeline.load, app_dir)
    a, _ = _planned(a, cloud, no_plan)
    section = a.manifest.clouds.section(cloud)  # the global flags that are settings of `cloud`
    settings = _run(section.resolved, **_state["target"]) if section is not None else None
    if list_:
        from .build import bundle_entries, scan_code

        def listing() -> list[str]:
            if cloud not in registry.names():
                raise ValueError(f"unknown cloud {cloud!r} (known: {', '.join(registry.names())})")
            return [f"{fn}\t{rel}\t{len(data)}" for fn in sorted(a.workflow.functions)
                    for rel, data in bundle_entries(a, fn, cloud, settings)]
        typer.echo("\n".join(_run(listing)))
        for fn in sorted(a.workflow.functions):
            for left in _run(scan_code, a, fn)[1]:
                typer.echo(f"left out\t{fn}\t{left.path}\t{left.reason}", err=True)
        return
    arts = _run(pipeline.bundles, a, cloud, settings=settings)
    for fn, art in arts.items():
        typer.echo(f"{'built ' if art.rebuilt else 'cached'} {fn}: {art.path.name}", err=True)
    typer.echo(json.dumps({fn: {"path": str(art.path), "sha256": art.sha256}
                           for fn, art in arts.items()}, indent=2))


@app.command()
def graph(app_dir: Path = typer.Argument(..., help="App directory."),
          format: str = typer.Option("mermaid", "--format", "-f", help="mermaid or dot."),
          ir: bool = typer.Option(False, "--ir", help="Step Functions apps: draw the compiled "
                                  "IR (functions and edges) instead of the state machine.")) -> None:
    """Print the workflow graph as Mermaid (default) or DOT text. For a Step Functions app,
    the state machine as written (every state, Choice conditions, Catch edges, Map/Parallel
    boxes) with the compiled function each state runs in; `--ir` draws the IR instead.

    Example: unumctl graph examples/text-processing --format dot | dot -Tpng > g.png
    """
    from .graph import to_dot, to_mermaid

    renderers = {"mermaid": to_mermaid, "dot": to_dot}
    if format not in renderers:
        _err(f"--format: {format!r} must be mermaid or dot")
        raise typer.Exit(2)
    a = _run(pipeline.load, app_dir)
    if a.manifest.workflow.stepfunctions is not None and not ir:
        from .asl import graph as asl_graph
        from .manifest import load_manifest
        g = _run(asl_graph.state_graph, a.root, _run(load_manifest, a.root))
        typer.echo({"mermaid": asl_graph.to_mermaid, "dot": asl_graph.to_dot}[format](g), nl=False)
        return
    typer.echo(renderers[format](a.workflow), nl=False)


def _report(session: str, item: dict[str, Any] | None) -> None:
    if item is None:
        return
    if item.get("status") == "FAILED":
        from .failure import failure_line, traceback_text
        if _state["debug"] and traceback_text(item):
            typer.echo(traceback_text(item), err=True)
        raise Failed(failure_line(session, item))
    typer.echo(json.dumps(item.get("v"), indent=2))


@app.command()
def invoke(app_dir: Path = typer.Argument(..., help="App directory."),
           data: Path = typer.Option(..., "--data", "-d", help="JSON file with the input ('-' = stdin)."),
           cloud: str = CLOUD,
           wait: bool = typer.Option(True, "--wait/--no-wait", help="Wait for the session result."),
           faults: Optional[str] = typer.Option(None, "--faults", envvar="UNUM_FAULTS",
                                                help="Fault injection (local), e.g. 'seed=1,crash=0.1,duplicate=0.1'."),
           timeout: float = typer.Option(600.0, "--timeout", help="Seconds to wait for the result."),
           session: Optional[str] = typer.Option(None, "--session", help="Session id to use (default: a new UUID4); "
                                                 "1-80 of A-Z a-z 0-9 _ -, starting with a letter or digit. "
                                                 "Local: the same id with the same input resumes or returns "
                                                 "that session; with a different input it is refused."),
           workers: int = typer.Option(2, "--workers", help="Local: processes per function."),
           aws_endpoint: Optional[str] = typer.Option(None, "--aws-endpoint", help=AWS_ENDPOINT_HELP),
           no_plan: bool = NO_PLAN, stage: Optional[str] = STAGE) -> None:
    """Start a session with the input in --data and (by default) print its result JSON.

    The session id goes to stderr first (stdout with --no-wait); the result JSON to stdout.
    While waiting, on a terminal, stderr shows a live line of invocations done / running /
    failed (from the execution history, runtime.history).

    Local: each function's memory limit is the plan file's (APP/unumctl.plan.yaml, from
    `unumctl tune`) when it sets one, else the manifest's; --no-plan ignores the file.

    Example: unumctl invoke examples/wordcount --data examples/wordcount/input.json
    """
    from .client import Client
    session = _run(_session_arg, session, "--session")
    _run(check_workers, workers)
    _aws_endpoint(aws_endpoint)
    a = _run(pipeline.load, app_dir)
    if cloud not in registry.deployable():  # it runs here (local): the plan's memory is its limit
        a, _ = _planned(a, cloud, no_plan, say=False)
    value = _run(_read_data, data)
    _check_handlers(a)
    target = _run(_target, cloud, a, workers=workers, stage=stage)
    session = SessionId.of(session)
    resume = (f"resume: unumctl resume {app_dir} {session}{_stage_flag(stage)}" if hasattr(target, "resume")
              else f"session {session} keeps its state")
    if wait:
        typer.echo(f"session {session}", err=True)  # first, so that a long wait can be followed
    with _stoppable(resume), _progress(cloud, a, session, wait, stage):
        sid, item = _run(Client.of_target(target).invoke, value, wait, timeout, session, faults)
    if not wait:
        typer.echo(sid)
        return
    _run(_report, sid, item)


@app.command()
def send(app_dir: Path = typer.Argument(..., help="App directory."),
         trigger: str = typer.Argument(..., help="The trigger's name (triggers: in unumctl.yaml)."),
         data: Path = typer.Option(..., "--data", "-d", help="File with the body ('-' = stdin)."),
         idempotency_key: Optional[str] = typer.Option(None, "--idempotency-key", help="http: the "
                                                       "Idempotency-Key header (the same key: the same session)."),
         stage: Optional[str] = STAGE) -> None:
    """Send --data to a trigger of APP on the `unumctl serve` hosting it: an http trigger's
    request, a message to a queue trigger, a PutEvents entry to an eventbridge trigger
    (docs/triggers.md). Prints the service's JSON answer; exit 1 when it refused.

    Example: unumctl send examples/wordcount web --data examples/wordcount/input.json
    """
    import sys

    from .deploy.stage import resolve_stage
    from .deploy.statepath import local_dir
    from .safefile import read_bounded
    from .serve.client import send_trigger
    from .serve.service import running_service
    a = _run(pipeline.load, app_dir)
    t = next((t for t in a.triggers if t.name == trigger), None)
    if t is None:
        _err(f"TRIGGER: {a.name} has no trigger {trigger!r} (its triggers: "
             f"{', '.join(x.name for x in a.triggers) or 'none'}; see docs/triggers.md)")
        raise typer.Exit(2)
    if t.type not in ("http", "queue", "eventbridge"):
        _err(f"TRIGGER: {trigger} is a {t.type} trigger: "
             + ("copy files into its directory on serve" if t.type == "storage" else "it fires by itself")
             + " (docs/triggers.md)")
        raise typer.Exit(2)
    try:
        body = sys.stdin.buffer.read(1024 * 1024 + 1) if str(data) == "-" else read_bounded(data)
    except (OSError, ValueError) as exc:
        _err(f"--data: {exc}")
        raise typer.Exit(2)
    record = running_service(_run(local_dir, a, _run(resolve_stage, stage, a.manifest.stage)))
    if record is None:
        _err(f"APP: no unumctl serve hosts {a.name} (start it: unumctl serve {app_dir})")
        raise typer.Exit(2)
    status, answer = _run(send_trigger, record, a.name, trigger, body, idempotency_key)
    typer.echo(json.dumps(answer))
    if status >= 400:
        raise typer.Exit(1)


def _check_handlers(a: Any) -> None:
    """Before a session starts: every function's handler module is there and binds the
    handler's name (unumctl/check.py static_handler_problem: read and parsed, no user code
    run; `validate` imports it), else one line and exit 2 with no session created. Other
    failures are left to the session, which reports them with FILE:LINE."""
    from .check import static_handler_problem
    for name in a.manifest.functions:
        problem = static_handler_problem(a, name)
        if problem:
            _err(problem)
            raise typer.Exit(2)


def _stage_flag(stage: Optional[str]) -> str:
    """` --stage NAME` for a command line printed as the next step ('' when not given)."""
    return f" --stage {stage}" if stage else ""


def _progress(cloud: str, a: Any, session: str, wait: bool, stage: Optional[str] = None):
    """The live line of invocations done / running / failed while `invoke --wait` waits, only
    when stderr is a terminal (unumctl/observe/progress.py)."""
    import sys

    from .observe.progress import live_progress

    def open_reader():
        from . import observe
        return observe.reader(cloud, a, stage=stage, **_state["target"])

    return live_progress(open_reader, session, wait and sys.stderr.isatty())


@app.command()
def result(app_dir: Path = typer.Argument(..., help="App directory."),
           session: str = typer.Argument(..., help="Session id printed by invoke."),
           cloud: str = CLOUD, stage: Optional[str] = STAGE) -> None:
    """Print a session's result JSON (exit 1 if it failed, 3 if it has none yet, 2 if there
    is no such session).

    Example: unumctl result examples/wordcount 0b7c...-...
    """
    _run(_session_arg, session, "SESSION")
    a = _run(pipeline.load, app_dir)
    target = _run(_target, cloud, a, stage=stage)
    item = _run(target.result, session)
    if item is None:
        _known_session(cloud, a, session, stage)
        _err(f"session {session} has no result yet")
        raise typer.Exit(3)
    _run(_report, session, item)


def _known_session(cloud: str, a: Any, session: str, stage: Optional[str] = None) -> None:
    """Exit 2 with one line when the target's history knows no session `session` (observe
    readers' UnknownSession); a target whose history cannot be read says nothing here."""
    from . import observe
    try:
        r = observe.reader(cloud, a, stage=stage, **_state["target"])
        r.describe(session)
    except observe.UnknownSession:
        _err(f"SESSION: no session {session} on this target (see: unumctl sessions {a.root})")
        raise typer.Exit(2)
    except (TargetError, OSError):
        return


@app.command()
def resume(app_dir: Path = typer.Argument(..., help="App directory."),
           session: str = typer.Argument(..., help="Session id given to (or printed by) invoke."),
           cloud: str = CLOUD,
           timeout: float = typer.Option(600.0, "--timeout", help="Seconds to wait for the result."),
           faults: Optional[str] = typer.Option(None, "--faults", envvar="UNUM_FAULTS",
                                                help="Fault injection (local), as for invoke."),
           workers: int = typer.Option(2, "--workers", help="Local: processes per function."),
           stage: Optional[str] = STAGE) -> None:
    """Finish a session whose `unumctl invoke` was stopped or killed, and print its result JSON
    (exit 1 if it failed). Local: delivers the session's queued invocations (the durable
    queue in the app's SQLite file), or starts its entry again from the stored input when
    nothing is queued and there is no result.

    Example: unumctl resume examples/wordcount run-42
    """
    _run(_session_arg, session, "SESSION")
    _run(check_workers, workers)
    a = _run(pipeline.load, app_dir)
    target = _run(_target, cloud, a, workers=workers, stage=stage)
    if not hasattr(target, "resume"):
        _err(f"'resume' is not available for --cloud {cloud}")
        raise typer.Exit(2)
    with _stoppable(f"resume again: unumctl resume {app_dir} {session}{_stage_flag(stage)}"):
        item = _run(target.resume, session, timeout, faults)
    typer.echo(f"session {session}", err=True)
    _run(_report, session, item)


@app.command()
def redrive(app_dir: Path = typer.Argument(..., help="App directory."),
            session: str = typer.Argument(..., help="Session id of a FAILED session."),
            cloud: str = CLOUD,
            wait: bool = typer.Option(True, "--wait/--no-wait", help="Wait for the session's new result."),
            timeout: float = typer.Option(600.0, "--timeout", help="Seconds to wait for the result."),
            workers: int = typer.Option(2, "--workers", help="Local: processes per function."),
            stage: Optional[str] = STAGE) -> None:
    """Redrive a FAILED session (Step Functions' RedriveExecution): within 14 days of its stop,
    re-run its failed invocations with their input, keep what succeeded (never re-run), and
    print its result JSON (exit 1 if it failed again). The app needs `runtime.redrive: true`.
    Refused in one line (`ExecutionNotRedrivable: ...`) for a SUCCEEDED or RUNNING session.
    Not `resume`: that finishes a session that has no result (its invoke was killed).

    Example: unumctl redrive examples/wordcount run-42
    """
    _run(_session_arg, session, "SESSION")
    _run(check_workers, workers)
    a = _run(pipeline.load, app_dir)
    target = _run(_target, cloud, a, workers=workers, stage=stage)
    info = _run(target.redrive, session, wait=wait, timeout=timeout)
    typer.echo(f"session {session}: redrive {info['redriveCount']}", err=True)
    if wait:
        if info.get("result") is None:
            _err(f"session {session} has no result yet (see: unumctl result {app_dir} {session})")
            raise typer.Exit(3)
        _run(_report, session, info["result"])


@app.command()
def serve(app_dirs: list[Path] = typer.Argument(None, help="App directories to host (each is a state machine)."),
          port: int = typer.Option(8083, "--port", help="TCP port on 127.0.0.1 (0: any free port)."),
          state: Path = typer.Option(Path(".unum/serve"), "--state",
                                     help="Directory of the state machines created through the API."),
          account: Optional[str] = typer.Option(None, "--account", help="12-digit account id in ARNs "
                                                "(default 000000000000; never checked)."),
          workers: int = typer.Option(2, "--workers", help="Processes per function per state machine."),
          faults: Optional[str] = typer.Option(None, "--faults", help="Fault injection in every machine's "
                                               "platform (testing), e.g. 'seed=1,crash=0.05,duplicate=0.1'."),
          aws_endpoint: Optional[str] = typer.Option(None, "--aws-endpoint", help=AWS_ENDPOINT_HELP),
          stage: Optional[str] = STAGE) -> None:
    """Run a long-lived local platform hosting the apps, with the Step Functions API (AWS JSON
    1.0) on http://127.0.0.1:PORT for boto3, the AWS CLI (--endpoint-url) and the SDKs. Prints
    the URL on stdout; SIGINT/SIGTERM stop it, and queued work resumes on the next start.
    `unumctl invoke` of a hosted app runs there. No credentials are checked.
    See docs/local-service.md.

    Example: unumctl serve examples/order-payment-sfn --port 8083
    """
    from .local.target import fault_spec
    from .serve.server import serve as run_server
    _run(check_workers, workers)
    _aws_endpoint(aws_endpoint)
    _run(fault_spec, faults)
    if not 0 <= port <= 65535:
        _err(f"--port: {port} must be 0-65535 (e.g. --port 8083)")
        raise typer.Exit(2)
    try:
        _run(run_server, list(app_dirs or []), state, port, _state["target"].get("region"), account, workers,
             _state["debug"], faults or None, stage)
    except OSError as exc:
        _err(f"--port: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}; choose another --port "
             "(or --port 0 for any free one)")
        raise typer.Exit(2)


@app.command(name="run-function")
def run_function_cmd(app_dir: Path = typer.Argument(..., help="App directory."),
                     function: str = typer.Argument(..., help="Function name (as in unumctl.yaml)."),
                     event: Path = typer.Option(..., "--event", "-e", help="JSON file with the event "
                                                "('-' = stdin)."),
                     timeout: Optional[float] = typer.Option(None, "--timeout", help="Seconds (default: "
                                                             "the function's manifest timeout).")) -> None:
    """Run one function's handler on this machine with the event in --event, as `sam local
    invoke`: prints the return value as JSON on stdout and the function's own output on
    stderr; exit 1 with the error when the handler raises. No session is started.

    Example: unumctl run-function examples/iot-pipeline Aggregate --event examples/iot-pipeline/input.json
    """
    from .runfunction import FunctionError, run_function
    a = _run(pipeline.load, app_dir)
    value = _run(_read_data, event, "--event")
    try:
        res = _run(run_function, a, function, value, timeout)
    except FunctionError as exc:
        _err(str(exc))
        raise typer.Exit(1)
    typer.echo(json.dumps(res.value, indent=2))


TOKEN = typer.Option(..., "--token", "-t", help="The task token ($$.Task.Token) the waiting Task sent.")
SEND_WAIT = typer.Option(True, "--wait/--no-wait", help="Local: run the session until it has a result "
                                                         "or waits again, and print the result JSON.")


def _send(app_dir: Path, cloud: str, kind: str, token: str, wait: bool, timeout: float,
          stage: Optional[str] = None, **fields: Any) -> None:
    """Run unumctl.callbacks.send_task_<kind> and print the session's result if it ended."""
    from . import callbacks
    fn = getattr(callbacks, f"send_task_{kind}")
    if kind != "heartbeat":
        fields.update(wait=wait, timeout=timeout)
    with _stoppable(f"the callback is recorded; finish the session: unumctl resume {app_dir} SESSION"
                    f"{_stage_flag(stage)}"):
        item = _run(fn, app_dir, token, cloud=cloud, stage=stage, **fields, **_state["target"])
    from runtime.asl.callback import Token
    session = Token.decode(token).session  # the token was checked by the send
    if item is not None:
        _run(_report, session, item)
    elif kind != "heartbeat":
        _err(f"session {session}: callback accepted; no result yet (the session runs on or waits again)")


@app.command(name="send-task-success")
def send_task_success(app_dir: Path = typer.Argument(..., help="App directory."), token: str = TOKEN,
                      output: Path = typer.Option(..., "--output", "-o", help="JSON file with the Task's "
                                                  "result ('-' = stdin)."),
                      cloud: str = CLOUD, wait: bool = SEND_WAIT,
                      timeout: float = typer.Option(600.0, "--timeout", help="Seconds to wait."),
                      stage: Optional[str] = STAGE) -> None:
    """Complete a Task waiting for a callback (.waitForTaskToken) with the JSON in --output, as
    Step Functions' SendTaskSuccess. A token is used once: a second use exits 2 with
    `TaskTimedOut`. Local: then runs the session on (prints its result when it ends).

    Example: unumctl send-task-success examples/orders-callback --token "$T" --output paid.json
    """
    value = _run(_read_data, output, "--output")
    _send(app_dir, cloud, "success", token, wait, timeout, stage, output=value)


@app.command(name="send-task-failure")
def send_task_failure(app_dir: Path = typer.Argument(..., help="App directory."), token: str = TOKEN,
                      error: Optional[str] = typer.Option(None, "--error", "-e", help="Error name (matched "
                                                          "by the Task's Retry/Catch ErrorEquals)."),
                      cause: Optional[str] = typer.Option(None, "--cause", help="Cause text."),
                      cloud: str = CLOUD, wait: bool = SEND_WAIT,
                      timeout: float = typer.Option(600.0, "--timeout", help="Seconds to wait."),
                      stage: Optional[str] = STAGE) -> None:
    """Fail a Task waiting for a callback with --error/--cause, as SendTaskFailure; the Task's
    Retry and Catch apply.

    Example: unumctl send-task-failure examples/orders-callback --token "$T" --error Payment.Declined
    """
    _send(app_dir, cloud, "failure", token, wait, timeout, stage, error=error, cause=cause)


@app.command(name="send-task-heartbeat")
def send_task_heartbeat(app_dir: Path = typer.Argument(..., help="App directory."), token: str = TOKEN,
                        cloud: str = CLOUD, stage: Optional[str] = STAGE) -> None:
    """Tell a Task waiting for a callback that the work goes on (restarts its HeartbeatSeconds),
    as SendTaskHeartbeat.

    Example: unumctl send-task-heartbeat examples/orders-callback --token "$T"
    """
    _send(app_dir, cloud, "heartbeat", token, False, 0.0, stage)


def _print_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, sort_keys=True, default=str))


TF_VAR = typer.Option(None, "--var", metavar="KEY=VALUE", help="Set a variable of the rendered root "
                      "module (terraform -var; repeatable). aws only.")
TF_TARGET = typer.Option(None, "--target", metavar="ADDRESS", help="Only this resource or module "
                         "and what it depends on (terraform -target; repeatable). aws only.")


@app.command()
def plan(app_dir: Path = typer.Argument(..., help="App directory."), cloud: Optional[str] = DEPLOY_CLOUD,
         out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="FILE", help="Save the plan "
                                            "(Terraform's, with FILE.unumctl.json beside it) for "
                                            "`apply APP --plan FILE`. aws only."),
         var: Optional[list[str]] = TF_VAR, target: Optional[list[str]] = TF_TARGET,
         no_plan: bool = NO_PLAN, stage: Optional[str] = STAGE) -> None:
    """Build, render Terraform and plan. Terraform's output streams to stderr as it runs, then
    the resources to add (+), change (~), destroy (-) or replace (-/+) by address; stdout gets
    JSON with the same keys on aws and gcp: add, change, destroy (counts), changes,
    resources {add, change, destroy, replace: [address]}, workdir.

    Exit 4 (NOT_PLANNED) when no plan could be made (gcp without the google provider or
    credentials): the JSON still says what was checked (`checked`) and why not (`not_done`),
    so a CI pipeline does not read "nothing planned" as success.

    With --out FILE, Terraform's saved plan is written to FILE for `unumctl apply APP --plan
    FILE`, which applies exactly these changes or refuses a stale plan.

    Each function's memory is the plan file's (APP/unumctl.plan.yaml, from `unumctl tune`)
    when there is one, else the manifest's; the JSON then has `plan_file` {path, memory};
    --no-plan ignores the file.

    Example: unumctl plan examples/wordcount --cloud aws --out wordcount.tfplan
    """
    from .terraform import plan_lines
    tgt, a, tune_plan = _planned_target(app_dir, cloud, "plan", no_plan, stage)
    summary = {**_run(tgt.plan, out, var or None, target or None), **_plan_note(a, tune_plan)}
    for ln in plan_lines(summary):
        typer.echo(ln, err=True)
    _print_json(summary)
    if summary.get("not_done"):
        raise typer.Exit(NOT_PLANNED)


@app.command()
def apply(app_dir: Path = typer.Argument(..., help="App directory."), cloud: Optional[str] = DEPLOY_CLOUD,
          yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
          plan_file: Optional[Path] = typer.Option(None, "--plan", metavar="FILE", help="Apply exactly "
                                                   "this saved plan (from `plan --out FILE`; no "
                                                   "question asked); refused when stale. aws only."),
          var: Optional[list[str]] = TF_VAR, target: Optional[list[str]] = TF_TARGET,
          no_plan: bool = NO_PLAN, stage: Optional[str] = STAGE) -> None:
    """Build, render and apply the deployment (asks for confirmation unless --yes).
    Terraform's output streams to stderr as it runs; stdout gets the plan keys (as `plan`)
    and the outputs as JSON.

    With --plan FILE, applies exactly the plan `unumctl plan APP --out FILE` saved, as
    `terraform apply FILE`: refused with one line (exit 2, nothing applied) when it is stale,
    i.e. the Terraform state, the rendered configuration or an archive changed since.

    Memory per function from the plan file as `plan` (--no-plan ignores it).

    Example: unumctl apply examples/wordcount --cloud aws --plan wordcount.tfplan
    """
    tgt, a, tune_plan = _planned_target(app_dir, cloud, "apply", no_plan, stage)
    _print_json({**_run(tgt.apply, yes, plan_file, var or None, target or None), **_plan_note(a, tune_plan)})


@app.command()
def destroy(app_dir: Path = typer.Argument(..., help="App directory."), cloud: Optional[str] = DEPLOY_CLOUD,
            yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
            stage: Optional[str] = STAGE,
            delete_data: bool = typer.Option(False, "--delete-data", help="Also delete the app's data where "
                                             "destroy keeps it (gcp: the Firestore database and its "
                                             "documents; asks for its id unless --yes).")) -> None:
    """Destroy everything the app's deployment created. Terraform's output streams to
    stderr; then the destroyed resources, by address. Stdout: {"destroyed": [address],
    "workdir"} as JSON.

    On gcp the app's Firestore database is kept (delete protection) and the next apply adopts
    it; --delete-data deletes it (docs/gcp.md "Destroy, --delete-data and adoption").

    Example: unumctl destroy examples/wordcount --cloud aws --yes
    """
    tgt = _deploy_target(app_dir, cloud, "destroy", stage, **({"delete_data": True} if delete_data else {}))
    if delete_data and not tgt.keeps_data_on_destroy:
        _err(f"--delete-data: destroy on --cloud {tgt.name} deletes the app's data already; drop the flag")
        raise typer.Exit(2)
    done = _run(tgt.destroy, yes)
    for addr in done["destroyed"]:
        typer.echo(f"  - {addr}", err=True)
    _err(f"destroyed {len(done['destroyed'])} resource(s)")
    _print_json(done)


@app.command()
def outputs(app_dir: Path = typer.Argument(..., help="App directory."), cloud: Optional[str] = DEPLOY_CLOUD,
            stage: Optional[str] = STAGE) -> None:
    """Show the deployment's outputs (function names/ARNs, entry, table, topics, bucket).

    Example: unumctl outputs examples/wordcount --cloud aws
    """
    _print_json(_run(_deploy_target(app_dir, cloud, "outputs", stage).outputs))


@app.command()
def status(app_dir: Path = typer.Argument(..., help="App directory."), cloud: Optional[str] = DEPLOY_CLOUD,
           stage: Optional[str] = STAGE) -> None:
    """Show the deployed functions' state.

    Example: unumctl status examples/wordcount --cloud gcp
    """
    _print_json(_run(_deploy_target(app_dir, cloud, "status", stage).status))


# ---------------------------------------------------------------- emulated clouds
# (docs/aws.md and docs/gcp.md "Rehearse on emulators"; logic in unumctl/emulate/run.py)
emulate_app = typer.Typer(no_args_is_help=True, help="Run an emulated cloud on this machine "
                          "(127.0.0.1 only) until stopped with Ctrl-C or SIGTERM.")
app.add_typer(emulate_app, name="emulate")
ENV_FILE = typer.Option(None, "--env-file", help="Also write the export lines to this new file "
                        "(mode 0600) once everything answers; removed on stop. An existing file is "
                        "not replaced without --force.")
ENV_FORCE = typer.Option(False, "--force", help="Replace an existing --env-file.")


def _check_env_file(env_file: Path, force: bool) -> None:
    """Refuse (ValueError, one line) an --env-file that names a directory, lies in a missing
    directory, or exists (anything, a link included) when not `force`: checked before any
    emulator starts."""
    if env_file.is_dir():
        raise ValueError(f"--env-file {env_file}: is a directory; name a file (e.g. --env-file "
                         f"{env_file / 'emulate.env'})")
    parent = env_file.parent
    if not parent.is_dir():
        raise ValueError(f"--env-file {env_file}: directory {parent} does not exist; create it or name a "
                         "file in an existing directory")
    if os.path.lexists(env_file) and not force:
        raise ValueError(f"--env-file {env_file}: exists; not overwritten. Pass --force to replace it, or "
                         "name another file")


def _serve_emulator(cloud: str, start: Any, env_file: Optional[Path], force: bool = False) -> None:
    """Run the emulator context manager `start(workdir)`: print the environment to export on
    stdout (and to --env-file), wait for SIGINT/SIGTERM/SIGHUP, stop everything it started,
    exit 0. A missing component: one line naming it and how to install it, exit 2.

    --env-file (safefile.write_atomic): a new file, refused when one exists unless `force`
    (--force, as `unumctl tune --force` replaces a plan file), never written through a link,
    and on stop removed only if it is still the file written here (safefile.remove_if_same)."""
    import tempfile
    import threading

    from .emulate import EmulatorMissing
    from .emulate.run import export_lines
    from .safefile import remove_if_same, write_atomic

    if env_file is not None:
        _run(_check_env_file, env_file, force)
    written: Optional[os.stat_result] = None

    stop = threading.Event()

    def handler(signum: int, frame: Any) -> None:
        stop.set()

    old = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        with tempfile.TemporaryDirectory(prefix=f"unumctl-emulate-{cloud}-") as work:
            cm = start(Path(work))
            try:
                env = cm.__enter__()
            except (EmulatorMissing, RuntimeError, AppError, TargetError) as exc:
                if _state["debug"]:
                    traceback.print_exc()
                _err(f"emulate {cloud}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
                raise typer.Exit(2)
            try:
                lines = export_lines(env)
                if env_file is not None:
                    try:
                        written = write_atomic(env_file, "\n".join(lines) + "\n", replace=force)
                    except FileExistsError:
                        _err(f"--env-file {env_file}: created by something else meanwhile; not overwritten. "
                             "Pass --force to replace it, or name another file")
                        raise typer.Exit(2)
                    except OSError as exc:
                        _err(f"--env-file {env_file}: cannot write: {exc.strerror or exc}")
                        raise typer.Exit(2)
                typer.echo("\n".join(lines))
                _err(f"emulating {cloud} on 127.0.0.1; export the lines above in another shell "
                     f"(or source {env_file or 'them'}); stop with Ctrl-C")
                while not stop.wait(0.5):
                    pass
                _err(f"stopping the {cloud} emulators")
            finally:
                cm.__exit__(None, None, None)
                if env_file is not None and written is not None:
                    remove_if_same(env_file, written)
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
    _err("stopped; nothing left running")


def _emulate_command(cloud: str) -> Any:
    """The command `unumctl emulate <cloud>` made from the target's TargetSpec `emulator`
    (an unumctl.emulate.Emulator: its context manager, help text and whether it serves APPs)."""
    emulator = registry.part(cloud, "emulator")

    def command(app_dirs: list[Path] = typer.Argument(None, help="Apps to serve on the emulators "
                                                      "(only targets whose emulator serves apps take them)."),
                env_file: Optional[Path] = ENV_FILE, force: bool = ENV_FORCE) -> None:
        if emulator.takes_apps:
            apps = [_run(pipeline.load, d) for d in app_dirs or []]
            _serve_emulator(cloud, lambda work: emulator.start(work, apps), env_file, force)
            return
        if app_dirs:
            _err(f"emulate {cloud}: takes no APP; deploy onto it with unumctl apply APP --cloud {cloud}")
            raise typer.Exit(2)
        _serve_emulator(cloud, emulator.start, env_file, force)
    command.__name__ = f"emulate_{cloud}_cmd"
    command.__doc__ = emulator.help
    return command


for _cloud in registry.names():  # one `emulate` command per target that has an emulator
    if registry.spec(_cloud).emulator is not None:
        emulate_app.command(_cloud)(_emulate_command(_cloud))


# ---------------------------------------------------------------- execution history
# (docs/observability.md; logic in unumctl/observe/)
JSON_OUT = typer.Option(False, "--json", help="Print JSON instead of text.")


def _observe(app_dir: Path, cloud: str, stage: Optional[str] = None):
    from . import observe
    a = _run(pipeline.load, app_dir)
    return _run(observe.reader, cloud, a, stage=stage, **_state["target"])


def _observed(fn, *args: Any, **kwargs: Any) -> None:
    from .observe import UnknownSession
    try:
        _run(fn, *args, **kwargs)
    except UnknownSession as exc:
        _err(f"SESSION: no session {exc.args[0]} on this target (see: unumctl sessions APP)")
        raise typer.Exit(2)


@app.command()
def sessions(app_dir: Path = typer.Argument(..., help="App directory."), cloud: str = CLOUD,
             status: Optional[str] = typer.Option(None, "--status", help="RUNNING, SUCCEEDED, FAILED "
                                                  "or TIMED_OUT."),
             limit: Optional[int] = typer.Option(None, "--limit", "-n", help="At most N sessions."),
             as_json: bool = JSON_OUT, stage: Optional[str] = STAGE) -> None:
    """List sessions, newest first: id, status, start, duration, invocations (as Step
    Functions' ListExecutions).

    Example: unumctl sessions examples/wordcount --status FAILED --limit 10
    """
    from .observe import commands
    _observed(commands.sessions, _observe(app_dir, cloud, stage), status, limit, as_json)


@app.command()
def versions(app_dir: Path = typer.Argument(..., help="App directory."), cloud: str = CLOUD,
             as_json: bool = JSON_OUT, stage: Optional[str] = STAGE) -> None:
    """List the app's versions, current first: id, whether new sessions start on it, its
    sessions that can still run, when it was deployed (docs/versions.md). Local target,
    `unumctl serve`, aws and gcp (where drained old versions are collected first).

    Example: unumctl versions examples/wordcount --stage prod
    """
    import datetime
    target = _run(_target, cloud, _run(pipeline.load, app_dir), stage=stage)
    if not hasattr(target, "versions"):
        _err(f"--cloud: versions are kept on the local target (and unumctl serve), aws and gcp, not on {cloud}")
        raise typer.Exit(2)
    rows = _run(target.versions)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    typer.echo(f"{'VERSION':<18}{'CURRENT':<9}{'RUNNING':>8}  DEPLOYED (UTC)       FUNCTIONS")
    for r in rows:
        when = datetime.datetime.fromtimestamp(r["deployed_at"], datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        typer.echo(f"{r['version']:<18}{'*' if r['current'] else '':<9}{r['running']:>8}  {when}  "
                   f"{len(r['functions'])}")


@app.command()
def describe(app_dir: Path = typer.Argument(..., help="App directory."),
             session: str = typer.Argument(..., help="Session id."), cloud: str = CLOUD,
             as_json: bool = JSON_OUT, stage: Optional[str] = STAGE) -> None:
    """Describe a session: status, input, output or error, times, counts of invocations,
    retries and duplicates dropped (as DescribeExecution). Unknown id: exit 2.

    Example: unumctl describe examples/wordcount run-42
    """
    from .observe import commands
    from .tuning import planfile
    _run(_session_arg, session, "SESSION")
    reader = _observe(app_dir, cloud, stage)
    if planfile.plan_path(app_dir).exists():
        typer.echo(f"plan file in force for build/plan/apply: {planfile.plan_path(app_dir)} (docs/tune.md)",
                   err=True)
    _observed(commands.describe, reader, session, as_json)


@app.command()
def history(app_dir: Path = typer.Argument(..., help="App directory."),
            session: str = typer.Argument(..., help="Session id."), cloud: str = CLOUD,
            as_json: bool = JSON_OUT, stage: Optional[str] = STAGE) -> None:
    """Print a session's events in order: every execution (ran, adopted, dropped, failed,
    crashed), retry, timeout, give-up and injected duplicate (as GetExecutionHistory).

    Example: unumctl history examples/wordcount run-42 --json
    """
    from .observe import commands
    _run(_session_arg, session, "SESSION")
    _observed(commands.history, _observe(app_dir, cloud, stage), session, as_json)


@app.command()
def logs(app_dir: Path = typer.Argument(..., help="App directory."), cloud: str = CLOUD,
         session: Optional[str] = typer.Option(None, "--session", "-s", help="Only this session."),
         function: Optional[str] = typer.Option(None, "--function", "-f", help="Only this function."),
         follow: bool = typer.Option(False, "--follow", help="Keep printing new lines (Ctrl-C stops; "
                                     "with --session, stops once the session has ended)."),
         as_json: bool = JSON_OUT, stage: Optional[str] = STAGE) -> None:
    """Print the functions' own output (print, logging), each line prefixed with function and
    invocation (like `sam logs`).

    Example: unumctl logs examples/wordcount --session run-42 --function Mapper
    """
    from .observe import commands
    _run(_session_arg, session, "--session")
    r = _observe(app_dir, cloud, stage)
    with _stoppable("stopped following"):
        _observed(commands.logs, r, session, function, follow, as_json, idle_exit=1.0)



@app.command()
def trace(app_dir: Path = typer.Argument(..., help="App directory."),
          session: str = typer.Argument(..., help="Session id."), cloud: str = CLOUD,
          out: Path = typer.Option(Path("trace.html"), "--out", "-o", help="HTML file to write."),
          stage: Optional[str] = STAGE) -> None:
    """Write one self-contained HTML file (opens offline): the workflow graph coloured by
    outcome (for a Step Functions app, also the states as written), and a timeline with one
    bar per execution, the critical path outlined, retries and duplicates labelled; click
    for its input and output.

    Example: unumctl trace examples/wordcount run-42 -o trace.html
    """
    from .observe import commands
    _run(_session_arg, session, "SESSION")
    a = _run(pipeline.load, app_dir)
    from . import observe
    r = _run(observe.reader, cloud, a, stage=stage, **_state["target"])
    states = None
    if a.manifest.workflow.stepfunctions is not None:  # draw the states the user wrote
        from .asl import graph as asl_graph
        from .manifest import load_manifest
        states = _run(asl_graph.state_graph, a.root, _run(load_manifest, a.root))
    from .observe import UnknownSession
    try:
        path = _run(commands.trace, r, session, a.workflow, out, states)
    except UnknownSession as exc:
        _err(f"SESSION: no session {exc.args[0]} on this target (see: unumctl sessions APP)")
        raise typer.Exit(2)
    _err(f"wrote {path}")


@app.command()
def tune(app_dir: Path = typer.Argument(..., help="App directory."), cloud: str = CLOUD,
         sessions: Optional[int] = typer.Option(None, "--sessions", "-n", help="Run the app's input N times "
                                                "first (default 3), one after the other."),
         from_history: bool = typer.Option(False, "--from-history", help="Run nothing: read the recorded "
                                           "sessions (the newest N with --sessions, else all)."),
         latency_bound: float = typer.Option(1.10, "--latency-bound", help="The predicted critical path may be "
                                             "at most X times the measured one (>= 1.0)."),
         objective: str = typer.Option("cost", "--objective", help="cost (default): raise memory only if "
                                       "faster and cheaper; speed: fastest on the critical path; balanced."),
         out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="FILE", help="Plan file to write "
                                            "(default: APP/unumctl.plan.yaml)."),
         dry_run: bool = typer.Option(False, "--dry-run", help="Print the table; write no plan file."),
         force: bool = typer.Option(False, "--force", help="Overwrite a plan file edited by hand."),
         data: Optional[Path] = typer.Option(None, "--input", help="Input JSON (default: APP/input.json)."),
         prices: Optional[Path] = typer.Option(None, "--prices", help="Price table (default: $UNUMCTL_PRICES, "
                                               "else unumctl/cost/prices.json)."),
         timeout: float = typer.Option(600.0, "--timeout", help="Seconds to wait for each session."),
         emulated: bool = typer.Option(False, "--emulated", help="aws/gcp: run the sessions on the emulators "
                                       "(as `unumctl cost`; needs pip install 'unumctl[emulate]') instead "
                                       "of the deployed app."),
         allow_serialising: bool = typer.Option(False, "--allow-serialising", help="Accept a fusion that runs "
                                                "a Map's or a Parallel's branches one after another in one "
                                                "invocation (not chosen without it; tune prints its latency)."),
         no_plan: bool = NO_PLAN, stage: Optional[str] = STAGE) -> None:
    """Plan memory per function from measured sessions and write the plan file
    APP/unumctl.plan.yaml, which build, plan, apply and local invoke honour (docs/tune.md).

    Runs the app's input N times on the target (local: the embedded platform; aws/gcp: the
    deployed app, or with --emulated the emulators through the cost harness), or with
    --from-history reads recorded sessions; needs runtime.history: full. Prints each
    function's candidate sizes with the predicted duration and $ per million executions,
    `*` on the chosen one, and the critical path before and after
    (AWS Lambda Power Tuning's report; seed 004's Algorithm 2 keeps it within
    --latency-bound). A fusion that serialises a Map's or a Parallel's branches is printed
    with its latency at the measured input and at the manifest's expected_width, and written
    only with --allow-serialising. A plan file edited by hand is not overwritten without
    --force. The sessions run with the plan in force unless --no-plan; its sizes are the
    measured ones.

    Example: unumctl tune examples/wordcount --sessions 2
    """
    from .cost.prices import load_prices
    from .observe import reader as history_reader
    from .tuning import command as tuning
    from .tuning import planfile
    if sessions is not None and sessions < 1:
        _run(_fail_value, f"--sessions: {sessions} must be at least 1")
    if out is not None and not dry_run:
        _run(tuning.check_out, out)
    a = _run(pipeline.load, app_dir)
    a, _ = _planned(a, cloud, no_plan)
    table_prices = _run(load_prices, prices)
    ids, histories, measured = None, None, None
    if emulated and (from_history or cloud not in registry.priced()):
        _run(_fail_value, f"--emulated: runs sessions on the emulated {'|'.join(registry.priced())}; "
                          "not with --from-history or --cloud " + cloud)
    if emulated:
        with _stoppable("the plan file was not written"):
            histories, measured = _run(tuning.emulated_run, a.root, cloud, sessions or tuning.DEFAULT_SESSIONS,
                                       data or a.root / "input.json", not no_plan)
    elif not from_history:
        n = sessions or tuning.DEFAULT_SESSIONS
        value = _run(_read_data, data or a.root / "input.json", "--input")
        _check_handlers(a)
        target = _run(_target, cloud, a, stage=stage)
        with _stoppable("the plan file was not written"):
            ids = _run(tuning.run_sessions, target, value, n, timeout, lambda m: typer.echo(m, err=True))
    r = _run(history_reader, cloud, a, stage=stage, **_state["target"]) if histories is None else None
    try:
        plan, lines = _run(tuning.tune, a, cloud, reader=r, prices=table_prices, session_ids=ids,
                           limit=sessions if from_history else None, latency_bound=latency_bound,
                           objective=objective, histories=histories, allow_serialising=allow_serialising,
                           measurement=measured, command=tuning.command_line(app_dir, cloud, sessions or tuning.DEFAULT_SESSIONS,
                                                       from_history, latency_bound, objective, emulated,
                                                       allow_serialising))
    finally:
        close = getattr(r, "close", None)
        if close is not None:
            close()
    typer.echo("\n".join(lines))
    if dry_run:
        typer.echo("dry run: no plan file written", err=True)
        return
    path = out or planfile.plan_path(a.root)
    _run(tuning.write, plan, path, force)
    typer.echo(f"wrote {path}", err=True)


def _fail_value(msg: str) -> None:
    raise ValueError(msg)


@app.command()
def cost(app_dir: Path = typer.Argument(..., help="App directory."),
         cloud: str = typer.Option(registry.priced()[0], "--cloud", "-c",
                                   help=f"{' or '.join(registry.priced())}: the emulated cloud to run on "
                                        f"(default: {registry.priced()[0]})."),
         sessions: int = typer.Option(1, "--sessions", "-n", help="Sessions to run (one at a time)."),
         as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
         prices: Optional[Path] = typer.Option(None, "--prices", help="Price table (default: $UNUMCTL_PRICES, "
                                               "else unumctl/cost/prices.json)."),
         data: Optional[Path] = typer.Option(None, "--input", help="Input JSON (default: APP/input.json)."),
         mode: str = typer.Option("exactly-once", "--mode", help="exactly-once (the manifest's checkpoints), "
                                  "at-least-once (runtime.checkpoint false) or both (one run each)."),
         plan: bool = typer.Option(False, "--plan", help="Before / after the plan file APP/unumctl.plan.yaml: "
                                   "one run with it ignored, one with it applied.")) -> None:
    """Run the app's example input on the emulated cloud (moto + emulated Lambda, or the GCP
    emulators; needs `pip install 'unumctl[emulate]'`), count every billed operation, price it
    and print the cost per execution and per million beside Step Functions Standard and
    Express and Google Cloud Workflows, with the assumptions (unumctl/cost/, docs/cost.md).

    Example: unumctl cost examples/iot-pipeline --cloud aws --sessions 3 --mode both
    """
    from .cost import cost_plan_report, cost_report
    from .cost.report import render, render_compare
    if plan:
        c = _run(cost_plan_report, app_dir, cloud, sessions, prices, data, mode)
        typer.echo(json.dumps(c, indent=2) if as_json else render_compare(c))
        return
    r = _run(cost_report, app_dir, cloud, sessions, prices, data, mode)
    typer.echo(json.dumps(r, indent=2) if as_json else render(r))


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
