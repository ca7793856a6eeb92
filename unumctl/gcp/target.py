"""The `gcp` Target: plan/apply/destroy through the shared Terraform driver, invoke by
publishing to the entry topic, result and `--wait` by reading Firestore, status through
google-cloud-functions (Cloud Functions v2 API `GetFunction`).

Settings and names come from the deployment model (unumctl/deploy/). Project and region:
flags (target options) > GOOGLE_CLOUD_PROJECT / CLOUDSDK_CORE_PROJECT / GCLOUD_PROJECT and
GOOGLE_CLOUD_REGION / CLOUDSDK_FUNCTIONS_REGION > manifest `clouds.gcp` > default
(us-central1), the one rule of deploy/settings.py. With PUBSUB_EMULATOR_HOST /
FIRESTORE_EMULATOR_HOST set, invoke/result talk to the emulators (no Terraform needed).
Every failure is a one-line TargetError with the next step.
"""

from __future__ import annotations

import os
import socket
import sys
from functools import cached_property
from typing import Any

from .. import pipeline
from ..deploy.models import Deployment
from ..targets import SessionPorts, Target, TargetError
from ..terraform import NO_PLAN, PLAN_FILE, TerraformFailed, TerraformRunner, find_provider_mirror, find_terraform
from . import adopt, propagation
from . import render as _render
from .model import params
from .settings import GcpSection

__all__ = ["GcpTarget"]


# every provider the rendered root module requires (unumctl/gcp/templates/main.tf.j2)
MIRROR_PROVIDERS = ("hashicorp/google", "hashicorp/google-beta", "hashicorp/random", "hashicorp/time")


def _emulator_up(var: str) -> None:
    """TargetError when `var` (host:port) is set but nothing listens there."""
    addr = os.environ.get(var)
    if not addr:
        return
    host, _, port = addr.rpartition(":")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=2).close()
    except (OSError, ValueError):
        raise TargetError(f"{var}={addr} but no emulator answers there; start it (e.g. gcloud "
                          f"emulators firestore start / gcloud beta emulators pubsub start "
                          f"--host-port={addr}) or unset {var}") from None


def _credentials_available() -> bool:
    try:
        import google.auth
        from google.auth.exceptions import DefaultCredentialsError
    except ImportError:
        return False
    try:
        google.auth.default()
        return True
    except DefaultCredentialsError:
        return False


def _offline_checks(out) -> list[str] | str:
    """Check the rendered directory `out` against the google provider schema snapshot and
    the API-enablement dependencies; returns what was checked, or one line saying why the
    checks could not run (python-hcl2 or the snapshot missing). TargetError naming the
    first finding (a template bug)."""
    try:
        from .checks import tf_deps, tf_schema
        from .render import PROVIDER_VERSION
        schema = tf_schema.load_schema(PROVIDER_VERSION)
    except ImportError as exc:
        return f"no offline schema or dependency check ({exc.name or exc} is not installed: pip install python-hcl2)"
    except FileNotFoundError as exc:
        return f"no offline schema or dependency check ({str(exc).splitlines()[0]})"
    problems = tf_schema.check_dir(out, schema)[0] + tf_deps.check(out)[0]
    if problems:
        raise TargetError(f"rendered Terraform fails the offline check: {problems[0]} "
                          f"({len(problems)} finding(s); a template bug, please report it)")
    return [f"schema-checked offline (hashicorp/google {PROVIDER_VERSION})",
            "dependency-checked offline (API enablement)"]


class GcpTarget(Target):
    """Cloud Functions gen2 + Pub/Sub topic per function + Firestore (seed 001 §4.2)."""

    name = "gcp"
    keeps_data_on_destroy = True  # the Firestore database is left (ABANDON) unless --delete-data

    @property
    def flags(self) -> dict[str, Any]:
        """The CLI options that are settings (deploy.settings: flag > environment > manifest)."""
        return {"project": self.options.get("project"), "region": self.options.get("region"),
                "stage": self.options.get("stage")}

    @cached_property
    def model(self) -> Deployment:
        """The app's deployment model on gcp (unpackaged: names and settings)."""
        return pipeline.model(self.app, "gcp", **self.flags)

    @property
    def settings(self) -> GcpSection:
        """`clouds.gcp` resolved by the one precedence rule (deploy/settings.py)."""
        return self.model.settings

    def _emulated(self) -> bool:
        return bool(os.environ.get("PUBSUB_EMULATOR_HOST") or os.environ.get("FIRESTORE_EMULATOR_HOST"))

    def _project(self) -> str:
        project = self.settings.project
        if not project:
            raise TargetError(f"no GCP project for {self.app.name}: set clouds.gcp.project in "
                              f"{self.app.root / 'unumctl.yaml'} or export GOOGLE_CLOUD_PROJECT")
        return project

    def _need_credentials(self) -> None:
        if not self._emulated() and not _credentials_available():
            raise TargetError("no Google credentials found; run `gcloud auth application-default "
                              "login` or set GOOGLE_APPLICATION_CREDENTIALS")

    # ------------------------------------------------------------------ Terraform
    def render(self, adopt_database: str | None = None):
        """Build the model, package its bundles and render the root module (with an import
        of `adopt_database`, unumctl/gcp/adopt.py); returns (dir, packaged model)."""
        try:
            return pipeline.rendered(self.app, self.model, lambda dep: _render.render(self.app, dep, adopt_database))
        except ValueError as exc:  # a ByTime window Cloud Scheduler cannot tick (unumctl/gcp/timers.py)
            raise TargetError(str(exc)) from None

    def _aws_only(self, out: Any, variables: Any, targets: Any, plan_file: Any = None) -> None:
        """Saved plans and --var/--target are wired on aws only: the google provider is not
        available here to test them (docs/guide/commands.md)."""
        given = [f for f, v in (("--out", out), ("--plan", plan_file), ("--var", variables),
                                ("--target", targets)) if v]
        if given:
            raise TargetError(f"{given[0]} is available on --cloud aws only for now")

    def plan(self, out: Any = None, variables: Any = None, targets: Any = None) -> dict[str, Any]:
        """Build, render, `terraform fmt -check`, then the offline checks (`checked`): the
        google provider schema snapshot (unumctl/gcp/checks/tf_schema.py) and the API-enablement
        dependencies (unumctl/gcp/checks/tf_deps.py); then init/validate/plan when the
        hashicorp/google provider and credentials are available. Otherwise returns with
        `not_done`: one line saying what could not be done and why (the CLI exits
        NOT_PLANNED, 4), and the plan keys (terraform.NO_PLAN, as on aws) set to None.
        TargetError when a check finds a problem (a template bug)."""
        self._aws_only(out, variables, targets)
        out, dep = self.render()
        runner = TerraformRunner(out, stream=False)
        unformatted = runner.fmt_check()
        if unformatted:
            raise TargetError(f"rendered Terraform is not in canonical format: {unformatted[0]} "
                              "(a template bug; please report it)")
        checked, missing = ["rendered", "formatted"], []
        offline = _offline_checks(out)
        if isinstance(offline, str):
            missing.append(offline)
        else:
            checked += offline
        summary: dict[str, Any] = {**NO_PLAN, "workdir": str(out), "functions": len(dep.functions),
                                   "topics": [f.topic.name for f in dep.functions if f.topic],
                                   "entry_topic": dep.entry_function.topic.name, "fmt": "ok",
                                   "checked": checked}
        mirror = find_provider_mirror("hashicorp/google")
        if mirror is None and not os.environ.get("UNUMCTL_TF_ONLINE"):
            missing.append("the hashicorp/google provider is not installed here (no provider "
                           "mirror and no registry access), so init/validate/plan were skipped")
        elif mirror is not None:
            lacking = [p for p in MIRROR_PROVIDERS if not (mirror / "registry.terraform.io" / p).is_dir()]
            if lacking:
                missing.append(f"the provider mirror {mirror} lacks {', '.join(lacking)} (the root module "
                               "needs them), so init/validate/plan were skipped")
        if not params(dep).project:
            missing.append("no project (set clouds.gcp.project or GOOGLE_CLOUD_PROJECT)")
        elif not _credentials_available():
            missing.append("no Google credentials (gcloud auth application-default login)")
        if missing:
            summary["not_done"] = "; ".join(missing)
            print(f"unumctl: plan --cloud gcp: {', '.join(checked)} {out}; not planned: "
                  f"{summary['not_done']}", flush=True, file=sys.stderr)
            return summary
        env = self._tf_env(mirror)
        runner = TerraformRunner(out, env)
        runner.init()
        runner.validate()
        summary.update(runner.plan().as_dict())
        return summary

    def _tf_env(self, mirror) -> dict[str, str]:
        if mirror is None:
            return {}
        from ..terraform import write_mirror_cli_config
        cfg = _render.terraform_dir(self.app, self.model) / "mirror.tfrc"
        write_mirror_cli_config(cfg, mirror)
        return {"TF_CLI_CONFIG_FILE": str(cfg)}

    def apply(self, yes: bool = False, plan_file: Any = None, variables: Any = None,
              targets: Any = None) -> dict[str, Any]:
        """Render, init, plan and apply (needs `yes`). Adopts the Firestore database this
        directory's last destroy left (an import block, unumctl/gcp/adopt.py; `adopted` in the
        result). An apply that fails only with documented propagation errors is planned and
        applied again, at most propagation.ATTEMPTS times, one line on stderr each time
        (`retries` in the result). Returns the first plan's keys, "workdir", "outputs",
        "retries", "adopted". TargetError (one line) otherwise; a create refused because the
        database exists names the fix (adopt.conflict_message)."""
        self._aws_only(None, variables, targets, plan_file)
        project = self._project()
        self._need_credentials()
        if not yes:
            raise TargetError("apply creates billable GCP resources; re-run with --yes")
        ds = self.model.datastore
        assert ds.database is not None  # every gcp model names its database (deploy/appgraph.py)
        workdir = _render.terraform_dir(self.app, self.model)
        adopt_id = adopt.to_adopt(workdir, project, ds.database, ds.create_database)
        if adopt_id:
            print(f"unumctl: apply --cloud gcp: adopting the Firestore database {adopt_id} that the last "
                  "destroy left (import block)", file=sys.stderr, flush=True)
        out, _ = self.render(adopt_id)
        runner = TerraformRunner(out, self._tf_env(find_provider_mirror("hashicorp/google")))
        runner.init()
        plans: list[Any] = []

        def attempt() -> None:
            plans.append(runner.plan())  # the addresses, as `plan` and aws's apply return them
            runner.apply(PLAN_FILE)

        try:
            _, retries = propagation.retrying(attempt, "apply --cloud gcp")
        except TerraformFailed as exc:
            if adopt.CONFLICT_TEXT.casefold() in " ".join(exc.output.split()).casefold():
                raise TargetError(adopt.conflict_message(self.app.root, out, project, ds.database)) from None
            raise
        if adopt_id:
            adopt.forget(workdir)
        return {**plans[0].as_dict(), "workdir": str(out), "outputs": runner.outputs(), "retries": retries,
                "adopted": adopt_id}

    def _confirm_destroy(self, yes: bool, delete_data: bool, database: str) -> None:
        if yes:
            return
        if not sys.stdin.isatty():
            raise TargetError("destroy deletes the app's GCP resources and stdin is not a terminal; re-run with --yes")
        if delete_data:
            answer = input(f"Destroy every GCP resource of {self.app.name} AND delete the Firestore database "
                           f"{database} with all its documents? Type the database id to confirm: ").strip()
            if answer != database:
                raise TargetError("destroy --delete-data cancelled; nothing was changed")
        elif input(f"Destroy every GCP resource of {self.app.name} (the Firestore database {database} "
                   "is kept)? [y/N] ").strip().lower() not in ("y", "yes"):
            raise TargetError("destroy cancelled; nothing was changed")

    def destroy(self, yes: bool = False) -> dict[str, Any]:
        """Destroy the deployment (asks unless `yes`); returns {"destroyed": [address],
        "workdir", "database": {"id", "kept": bool}}. The app's Firestore database is left
        in the project (deletion_policy ABANDON) and recorded for the next apply to adopt
        (unumctl/gcp/adopt.py), unless the target option `delete_data` (`destroy
        --delete-data`): then delete protection is turned off and the deletion policy set to
        DELETE (a targeted apply) before the destroy, which deletes it and its documents. A
        database the app does not own (create_database: false) is never deleted."""
        delete_data = bool(self.options.get("delete_data"))
        out = _render.terraform_dir(self.app, self.model)
        if not (out / "terraform.tfstate").exists():
            raise TargetError(f"nothing to destroy: {self.app.name} was not applied with "
                              f"--cloud gcp from here ({out} has no state)")
        ds = self.model.datastore
        assert ds.database is not None  # every gcp model names its database (deploy/appgraph.py)
        if delete_data and not ds.create_database:
            raise TargetError(f"--delete-data: the Firestore database {ds.database} is not this app's "
                              "(clouds.gcp.create_database: false); unumctl never deletes it")
        project = self._project()
        self._need_credentials()
        self._confirm_destroy(yes, delete_data, ds.database)
        runner = TerraformRunner(out, self._tf_env(find_provider_mirror("hashicorp/google")))
        held = adopt.DATABASE_ADDRESS in runner.state_list()
        variables: dict[str, str] = {}
        if delete_data:
            if not held:
                raise TargetError(f"--delete-data: the state in {out} holds no Firestore database; if a destroy "
                                  f"left {ds.database}, run `unumctl apply {self.app.root} --cloud gcp --yes` "
                                  "(it adopts it), then destroy --delete-data")
            variables = {"database_delete_protection": "false", "database_deletion_policy": "DELETE"}
            print(f"unumctl: destroy --delete-data: turning off delete protection of the Firestore database "
                  f"{ds.database}", file=sys.stderr, flush=True)
            runner.apply(variables=variables, targets=[adopt.DATABASE_ADDRESS])
        destroyed = runner.destroy(variables)
        kept = held and not delete_data
        if kept:
            adopt.record_abandoned(out, project, ds.database)
            print(f"unumctl: destroy --cloud gcp: kept the Firestore database {ds.database} and its documents "
                  "(delete protection); the next apply adopts it, `destroy --delete-data` deletes it",
                  file=sys.stderr, flush=True)
        elif delete_data:
            adopt.forget(out)
        return {"destroyed": destroyed, "workdir": str(out),
                "database": {"id": adopt.database_id(project, ds.database), "kept": kept}}

    def outputs(self) -> dict[str, Any]:
        out = _render.terraform_dir(self.app, self.model)
        if not (out / "terraform.tfstate").exists():
            raise TargetError(f"{self.app.name} is not deployed on gcp; run: unumctl apply "
                              f"{self.app.root} --cloud gcp --yes")
        find_terraform()
        return TerraformRunner(out).outputs()

    def status(self) -> dict[str, Any]:
        """State of each deployed function (ACTIVE, DEPLOYING, FAILED, ...)."""
        project = self._project()
        self._need_credentials()
        outs = self.outputs()
        from google.api_core import exceptions as gexc
        from google.cloud import functions_v2

        client = functions_v2.FunctionServiceClient()
        region = self.settings.region
        result = {}
        for fn, name in (outs.get("functions") or {}).items():
            path = client.function_path(project, region, name)
            try:
                f = client.get_function(name=path)
                result[fn] = {"name": name, "state": functions_v2.Function.State(f.state).name,
                              "update_time": str(f.update_time), "url": f.url}
            except gexc.NotFound:
                result[fn] = {"name": name, "state": "NOT_FOUND"}
        return result

    # ------------------------------------------------------------------ sessions
    def _clients(self):
        _emulator_up("PUBSUB_EMULATOR_HOST")
        _emulator_up("FIRESTORE_EMULATOR_HOST")
        project = self._project()
        self._need_credentials()
        if not self._emulated() and not (_render.terraform_dir(self.app, self.model) / "terraform.tfstate").exists():
            raise TargetError(f"{self.app.name} is not deployed on gcp; run: unumctl apply "
                              f"{self.app.root} --cloud gcp --yes")
        return project

    def _datastore(self, project: str):
        from google.cloud import firestore

        from runtime.gcp.datastore import FirestoreDatastore
        db = self.model.datastore.database
        return FirestoreDatastore(firestore.Client(project=project, database=db),
                                  self.model.datastore.name)

    def _blobs(self, project: str):
        from google.cloud import storage

        from runtime.gcp.blobs import GcsBlobStore
        # UNUM_BUCKET (emulators), else the deployment's Terraform output: the name has a
        # random suffix chosen at apply (terraform/modules/gcp-unum-datastore). On emulators
        # with neither, nothing was deployed from here and no large value can be read.
        bucket = os.environ.get("UNUM_BUCKET")
        if not bucket:
            deployed = (_render.terraform_dir(self.app, self.model) / "terraform.tfstate").exists()
            bucket = self.outputs()["bucket"] if deployed or not self._emulated() else "unum-not-deployed"
        assert self.model.blobs is not None  # every gcp deployment has its bucket
        return GcsBlobStore(storage.Client(project=project), bucket, self.model.blobs.prefix)

    faults_hint = "--faults applies to --cloud local; on gcp set UNUM_FAULTS in the functions' environment"

    def session_ports(self) -> SessionPorts:
        """The app's ports for the one session loop (Target.invoke / result): the entry
        message published to the entry function's topic (`<app>-<stage>-<region>-<entry>`), the result read from Firestore; an input too
        large for one Eventarc event goes to GCS, as the engine passes large values (the
        bucket is only looked up then: emulator runs may have none)."""
        project = self._clients()
        from runtime.gcp.invoker import PubSubInvoker
        entry = self.app.workflow.entry.name

        def send(payload: dict[str, Any]) -> None:
            from google.api_core import exceptions as gexc
            from google.cloud import pubsub_v1
            invoker = PubSubInvoker(pubsub_v1.PublisherClient(), project, self.app.name, timeout=30,
                                    topic_prefix=params(self.model).topic_prefix)
            try:
                invoker.invoke_many([(entry, payload)])
            except gexc.NotFound:
                topic = self.model.entry_function.topic
                raise TargetError(f"topic {topic.name if topic else entry} does not exist in {project}; run: "
                                  f"unumctl apply {self.app.root} --cloud gcp --yes") from None

        def no_result(session: str, timeout: float) -> str:
            return (f"session {session}: no result after {timeout:.0f}s; check later with: "
                    f"unumctl result {self.app.root} {session} --cloud gcp")

        return SessionPorts(lambda: (self._datastore(project), self._blobs(project)), send,
                            PubSubInvoker.max_payload_bytes, lambda: self._blobs(project), no_result)

    def observe_ports(self) -> dict[str, Any]:
        """What the history reader needs (unumctl/gcp/history.py): {"project", "datastore"
        (FirestoreDatastore of the app's collection), "blobs", "emulated" (bool)}; the same
        project, database and emulator settings as invoke/result. TargetError as `invoke`."""
        project = self._clients()
        return {"project": project, "datastore": self._datastore(project), "blobs": self._blobs(project),
                "emulated": self._emulated()}

    def reopen(self, ds, session):
        """Target.reopen: `result` and the history's end record go (unumctl/gcp/redrive.py)."""
        from .redrive import reopen
        reopen(ds, session)

    def callback_ports(self):
        """The deployed app's Firestore datastore and Pub/Sub invoker (send-task-*)."""
        from google.cloud import pubsub_v1

        from runtime.gcp.invoker import PubSubInvoker
        project = self._clients()
        return (self._datastore(project),
                PubSubInvoker(pubsub_v1.PublisherClient(), project, self.app.name, timeout=30,
                                 topic_prefix=params(self.model).topic_prefix))
