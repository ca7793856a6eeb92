"""The `aws` Target: plan/apply/destroy/outputs through Terraform, invoke/result through
boto3 (Lambda Invoke with InvocationType=Event; the session result from DynamoDB).

Settings come from the deployment model (unumctl/deploy/): CLI options (`region`, `profile`
passed by the CLI) > the standard AWS environment (AWS_REGION / AWS_DEFAULT_REGION,
AWS_PROFILE, AWS_ENDPOINT_URL[_<SERVICE>]) > the manifest (`clouds.aws.region`, `.profile`,
`.endpoints` {service: url}, `.backend`) > defaults (deploy/settings.py).
Terraform state: `<app>/.unum/terraform/aws/<region>/<stage>/terraform.tfstate` (local
backend; unumctl/deploy/statepath.py) unless `clouds.aws.backend` configures a remote one.
"""

from __future__ import annotations

import json
import os
import sys
from functools import cached_property
from pathlib import Path
from typing import Any

from . import names
from ..deploy.models import Deployment
from ..install_hint import install_hint
from .settings import AwsSection
from ..manifest import App
from ..targets import SessionPorts, Target, TargetError

__all__ = ["AwsTarget"]


class AwsTarget(Target):
    """Lambda + DynamoDB + S3 through Terraform (see the module docstring for settings).

    Every failure the user can fix is a TargetError with one line and the next step."""

    name = "aws"

    def __init__(self, app: App, **options: Any):
        super().__init__(app, **options)
        self.mpath = app.root / "unumctl.yaml"

    @cached_property
    def workdir(self) -> Path:
        """The Terraform working directory of this region and stage (deploy/statepath.py)."""
        from ..deploy.statepath import terraform_dir
        return terraform_dir(self.app, "aws", self.region, self.model.stage)

    # ------------------------------------------------------------------ settings
    @property
    def flags(self) -> dict[str, Any]:
        """The CLI options that are settings (deploy.settings: flag > environment > manifest)."""
        return {k: self.options.get(k) for k in ("region", "profile", "architecture", "runtime", "stage")}

    @cached_property
    def model(self) -> Deployment:
        """The app's deployment model on aws (unpackaged: names and settings). AppError for
        a name Lambda would reject."""
        from .. import pipeline
        return pipeline.model(self.app, "aws", **self.flags)

    @property
    def settings(self) -> AwsSection:
        """`clouds.aws` resolved by the one precedence rule (deploy/settings.py)."""
        return self.model.settings

    @property
    def profile(self) -> str | None:
        return self.settings.profile

    @property
    def region(self) -> str:
        region = self.settings.region
        if not region:
            raise TargetError("no AWS region: set clouds.aws.region in unumctl.yaml, pass --region, "
                              "or export AWS_REGION")
        return region

    def endpoints(self) -> dict[str, str]:
        """Service endpoint overrides: AWS_ENDPOINT_URL_<SVC> / AWS_ENDPOINT_URL from the
        environment, else the manifest's clouds.aws.endpoints (AwsSection.resolved)."""
        return dict(self.settings.endpoints)

    def session(self):
        """A boto3 Session for this target; TargetError when credentials are missing."""
        try:
            import boto3
            from botocore.exceptions import ProfileNotFound
        except ImportError:
            raise TargetError(f"boto3 is not installed; install the extra: {install_hint('aws')}") from None
        try:
            sess = boto3.session.Session(profile_name=self.profile, region_name=self.region)
        except ProfileNotFound:
            raise TargetError(f"AWS profile {self.profile!r} not found; run `aws configure --profile "
                              f"{self.profile}` or choose another with --profile / AWS_PROFILE") from None
        if sess.get_credentials() is None:
            raise TargetError("no AWS credentials found; run `aws configure` (or `aws sso login`), or "
                              "export AWS_PROFILE / AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        return sess

    def client(self, service: str):
        from botocore.config import Config

        url = self.endpoints().get(service)
        return self.session().client(service, endpoint_url=url,
                                     config=Config(retries={"mode": "standard", "max_attempts": 8}))

    # ------------------------------------------------------------------ terraform
    def _runner(self):
        from ..terraform import TerraformRunner, find_provider_mirror, write_mirror_cli_config

        env: dict[str, str] = {"TF_IN_AUTOMATION": "1"}
        cli_cfg = os.environ.get("TF_CLI_CONFIG_FILE")
        if not (cli_cfg and Path(cli_cfg).is_file()):
            mirror = find_provider_mirror("hashicorp/aws")
            if mirror is not None:
                self.workdir.mkdir(parents=True, exist_ok=True)
                path = write_mirror_cli_config(self.workdir / ".terraformrc", mirror)
                env["TF_CLI_CONFIG_FILE"] = str(path)
            elif cli_cfg:
                env["TF_CLI_CONFIG_FILE"] = ""
        if self.profile:
            env["AWS_PROFILE"] = self.profile
        return TerraformRunner(self.workdir, env)

    def render(self):
        """Build the model, package its archives, check their sizes against Lambda's limits
        (archive_limits: over the direct-upload limit -> uploaded through S3; over the unzipped
        limit -> TargetError) and render the root module; returns the packaged deployment
        model (unumctl/deploy/)."""
        from .. import pipeline
        from .render import render
        from .package import PackagingError

        from .archive_limits import via_s3

        def to_terraform(dep: Deployment) -> Deployment:
            try:
                s3 = {f.name for f in dep.all_functions if via_s3(f.unum_name, f.zip_path)}
            except PackagingError as exc:
                raise TargetError(str(exc)) from None
            s = dep.settings
            tfvars: dict[str, Any] = {"region": self.region, "endpoints": dict(s.endpoints),
                                      "s3_use_path_style": s.s3_use_path_style}
            if s.profile:
                tfvars["profile"] = s.profile
            try:
                render(dep, self.workdir, tfvars, s.backend.model_dump() if s.backend else None, via_s3=s3)
            except ValueError as exc:  # a ByTime window EventBridge Scheduler cannot tick (unumctl/aws/timers.py)
                raise TargetError(str(exc)) from None
            return dep

        try:
            return pipeline.rendered(self.app, self.model, to_terraform)
        except PackagingError as exc:
            raise TargetError(str(exc)) from None

    def _prepared(self, variables: list[str] | None = None, targets: list[str] | None = None):
        """Check credentials, render, check --var/--target against the rendered root module
        (before Terraform runs at all), init; returns (runner, packaged model, variables,
        targets)."""
        self.session()  # credentials first: the cheapest check with the clearest message
        runner = self._runner()
        dep = self.render()
        tf_vars, tf_targets = self._tf_args(variables, targets)
        runner.init()
        return runner, dep, tf_vars, tf_targets

    def _tf_args(self, variables: list[str] | None, targets: list[str] | None) -> tuple[dict[str, str], list[str]]:
        """`--var KEY=VALUE` and `--target ADDRESS` checked against the rendered root module
        (savedplan.check_vars / check_targets); ValueError (one line) otherwise."""
        from ..savedplan import check_targets, check_vars, declarations

        decl = declarations((self.workdir / "main.tf").read_text())
        return check_vars(variables or [], decl), check_targets(targets or [], decl)

    def plan(self, out: Path | None = None, variables: list[str] | None = None,
             targets: list[str] | None = None) -> dict[str, Any]:
        """Build, render, init and plan; returns PlanSummary.as_dict() (counts and the
        addresses to add/change/destroy/replace) and "workdir". With `out`, Terraform's saved
        plan goes to that file, with its record beside it (unumctl/savedplan.py), for `apply
        --plan`; the result then has "plan_file". `variables` / `targets`: the CLI's
        `--var KEY=VALUE` / `--target ADDRESS` (checked). ValueError / TargetError (one line)."""
        from .. import savedplan

        out_path = savedplan.check_out_path(out) if out is not None else None
        runner, dep, tf_vars, tf_targets = self._prepared(variables, targets)
        if out_path is None:
            s = runner.plan(variables=tf_vars, targets=tf_targets)
            return {**s.as_dict(), "workdir": str(self.workdir)}
        savedplan.record_path(out_path).unlink(missing_ok=True)  # never pair an old record with a new plan
        s = runner.plan(str(out_path), tf_vars, tf_targets)
        summary = {**s.as_dict(), "workdir": str(self.workdir)}
        savedplan.write_record(out_path, app=self.app.name, cloud=self.name, workdir=self.workdir,
                               digest=self._digest(dep), summary=summary, variables=tf_vars,
                               targets=tf_targets)
        return {**summary, "plan_file": str(out_path)}

    def _digest(self, dep) -> dict[str, str]:
        from ..savedplan import config_digest
        return config_digest(self.workdir, [f.zip_path for f in dep.all_functions])

    def apply(self, yes: bool = False, plan_file: Path | None = None, variables: list[str] | None = None,
              targets: list[str] | None = None) -> dict[str, Any]:
        """Plan and apply (asks unless `yes`), or apply exactly the saved plan `plan_file`
        (`plan --out`; no question: it was reviewed) after checking it is not stale
        (unumctl/savedplan.py). Returns the plan keys, "workdir" and "outputs"."""
        from ..terraform import PLAN_FILE
        if plan_file is not None:
            return self._apply_saved(plan_file, variables, targets)
        runner, _, tf_vars, tf_targets = self._prepared(variables, targets)
        s = runner.plan(variables=tf_vars, targets=tf_targets)
        if s.changes and not yes:
            print(f"unumctl: plan for {self.app.name} on aws: {s.add} to add, {s.change} to change, "
                  f"{s.destroy} to destroy", file=sys.stderr)
            if not sys.stdin.isatty():
                raise TargetError("apply needs confirmation and stdin is not a terminal; re-run with --yes")
            if input("Apply these changes? [y/N] ").strip().lower() not in ("y", "yes"):
                raise TargetError("apply cancelled; nothing was changed")
        try:
            runner.apply(PLAN_FILE)
        except TargetError as exc:
            raise TargetError(f"{exc}; fix the cause and re-run: unumctl apply {self.app.root} --cloud aws") from None
        return {**s.as_dict(), "workdir": str(self.workdir), "outputs": runner.outputs()}

    def _apply_saved(self, plan_file: Path, variables: list[str] | None,
                     targets: list[str] | None) -> dict[str, Any]:
        from .. import savedplan

        if variables or targets:
            raise ValueError("--var/--target: a saved plan already holds its variables and targets; "
                             "give them to: unumctl plan APP --out FILE")
        rec = savedplan.read_record(plan_file, self.app.name, self.name, self.workdir)
        runner, dep, _, _ = self._prepared()
        savedplan.check_fresh(plan_file, rec, self._digest(dep), self.name)
        try:
            runner.apply(str(Path(plan_file).expanduser().resolve()))
        except TargetError as exc:
            if "Saved plan is stale" in str(exc):
                raise TargetError(f"saved plan {plan_file} is stale: the Terraform state changed since it was "
                                  f"made (an apply or destroy ran); nothing was applied; review a new one: "
                                  f"unumctl plan {self.app.root} --cloud aws --out {plan_file}") from None
            raise TargetError(f"{exc}; review a new plan: unumctl plan {self.app.root} --cloud aws "
                              f"--out {plan_file}") from None
        return {**rec["plan"], "workdir": str(self.workdir), "plan_file": str(plan_file),
                "outputs": runner.outputs()}

    def destroy(self, yes: bool = False) -> dict[str, Any]:
        """Destroy the deployment (asks unless `yes`); returns {"destroyed": [address],
        "workdir"}."""
        if not yes and not sys.stdin.isatty():
            raise TargetError("destroy needs confirmation and stdin is not a terminal; re-run with --yes")
        if not yes and input(f"Destroy every AWS resource of {self.app.name}? [y/N] ").strip().lower() not in ("y", "yes"):
            raise TargetError("destroy cancelled; nothing was changed")
        runner = self._prepared()[0]
        return {"destroyed": runner.destroy(), "workdir": str(self.workdir)}

    def outputs(self) -> dict[str, Any]:
        if not (self.workdir / ".terraform").exists():
            raise TargetError(f"{self.app.name} is not deployed on aws yet; run: unumctl apply {self.app.root} --cloud aws")
        out = self._runner().outputs()
        if not out.get("entry_function"):
            raise TargetError(f"{self.app.name} is not deployed on aws yet; run: unumctl apply {self.app.root} --cloud aws")
        return out

    def status(self) -> dict[str, Any]:
        out = self.outputs()
        lam = self.client("lambda")
        return {fn: lam.get_function_configuration(FunctionName=v["name"]).get("State", "?")
                for fn, v in out["functions"].items()}

    # ------------------------------------------------------------------ sessions
    def _stores(self, out: dict[str, Any]):
        from runtime.aws.datastore import DynamoDBDatastore, S3BlobStore

        assert self.model.blobs is not None  # every aws deployment has its bucket
        return (DynamoDBDatastore(out["table"], self.client("dynamodb")),
                S3BlobStore(out["bucket"], out.get("blob_prefix", self.model.blobs.prefix), self.client("s3")))

    def session_ports(self) -> SessionPorts:
        """The deployed app's ports for the one session loop (Target.invoke / result): the
        entry function async-invoked (Invoke, InvocationType=Event), the result read from the
        table (strongly consistent reads) and the bucket."""
        from runtime.aws.invoker import LambdaInvoker

        out = self.outputs()
        ds, blobs = self._stores(out)

        # a deployment with versions starts sessions through the stage alias (docs/versions.md)
        alias = {"Qualifier": self.model.stage} if self._versions(out, ds).current() else {}

        def send(payload: dict[str, Any]) -> None:
            lam = self.client("lambda")
            try:
                lam.invoke(FunctionName=out["entry_function"], InvocationType="Event",
                           Payload=json.dumps(payload).encode(), **alias)
            except lam.exceptions.ResourceNotFoundException:
                raise TargetError(f"function {out['entry_function']} does not exist; run: unumctl apply "
                                  f"{self.app.root} --cloud aws") from None

        def no_result(session: str, timeout: float) -> str:
            from .diagnose import no_result_message
            return no_result_message(ds, session, out, timeout, self.app.root, self.endpoints().get("lambda"))

        return SessionPorts(lambda: (ds, blobs), send, LambdaInvoker.max_payload_bytes, lambda: blobs, no_result)

    def reopen(self, ds, session):
        """Target.reopen: the result's value and the end leave the session's record, which
        keeps its start (unumctl/aws/redrive.py)."""
        from .redrive import reopen_record
        reopen_record(ds.client, ds.table, session)

    def callback_ports(self):
        """The deployed app's DynamoDB datastore and Lambda invoker (send-task-*): the
        claim is a conditional put on the table, the resume an async Invoke of the waiting
        function (docs/stepfunctions.md "Timeouts, heartbeats and callbacks")."""
        from runtime.aws.invoker import LambdaInvoker

        from runtime.aws.pins import SessionPins

        out = self.outputs()
        ds, _ = self._stores(out)
        pins = SessionPins(ds, None, self.model.stage) if self._versions(out, ds).current() else None
        return ds, LambdaInvoker(names.function_prefix(self.app.name, self.model.stage), self.client("lambda"),
                                 pins=pins)

    def _versions(self, out: dict[str, Any], ds):
        from .versions import AwsVersions
        return AwsVersions(ds, self.client("lambda"), names.function_prefix(self.app.name, self.model.stage),
                           self.model.stage)

    def versions(self, now: float | None = None) -> list[dict[str, Any]]:
        """`unumctl versions APP --cloud aws`: the app versions of the deployment, current
        first, with their sessions that can still run (unumctl/aws/versions.py); drained old
        versions are collected first. TargetError before the first apply."""
        out = self.outputs()
        ds, _ = self._stores(out)
        store = self._versions(out, ds)
        store.collect(now)
        return store.listing(now)
