"""Plain typed records of what one app's deployment consists of (after Chalice's
chalice/deploy/models.py): built once by deploy.appgraph.build, read by the renderers and the
targets. Archives are placeholders (`Archive()` with no path) until deploy.appgraph.package
fills them. Values only known once deployed (the table's name as Terraform created it, the
project) are `Ref`s, which each renderer maps to its own expression (a Terraform output) and
a test harness to a concrete value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

__all__ = ["Archive", "BlobStore", "Datastore", "Deployment", "Function", "Ref", "Role", "Topic"]


@dataclass(frozen=True)
class Ref:
    """A value known only at deployment time, by logical name: "table", "bucket" (AWS);
    "project", "database", "collection", "bucket", "dead_letter_topic" (GCP)."""

    name: str


EnvValue = Union[str, Ref]


@dataclass
class Archive:
    """A function's code archive: `path` (zip) and `sha256` (hex), None until packaged.
    `kind`: "function" (user code + runtime, unumctl.build.build_app) or "support" (runtime
    only: the AWS error handler, unumctl.build.build_support); a trigger function holds the
    entry function's Archive itself (one object, filled once)."""

    kind: str = "function"
    path: Path | None = None
    sha256: str | None = None


@dataclass
class Role:
    """What a function may do: `permissions` (AWS: resource name -> IAM actions, from the
    runtime's table runtime/aws/iam.py; terraform/modules/aws-unum-function maps each name to
    ARNs), `service_account` (GCP account id; None on AWS, where the module names the role
    after the function). Invocation rights follow `Function.successors` and the error path.
    `integrations` (AWS): the statements of the Step Functions integration Tasks the function
    runs, [{"sid", "actions", "resources"}] (runtime/aws/iam.py integration_statements).
    `invoke` (AWS): the deployed function names, or the stage's name pattern
    `<app>-<stage>_*`, its InvokeSuccessors statement lists (unumctl/aws/policies.py
    invoke_names). `name` (AWS): the execution role's name (account-global: it carries the
    region, unumctl/aws/names.py role)."""

    permissions: dict[str, list[str]] = field(default_factory=dict)
    service_account: str | None = None
    integrations: list[dict[str, Any]] = field(default_factory=list)
    invoke: list[str] = field(default_factory=list)
    name: str | None = None  # AWS: the execution role's name (unumctl/aws/names.py role)


@dataclass
class Topic:
    """A Pub/Sub topic: `name`; `function`: the unum name it triggers (None: dead letters)."""

    name: str
    function: str | None = None


@dataclass
class Function:
    """One deployed function. `unum_name`: IR name; `name`: deployed name; `memory` (MB),
    `timeout` (s); `environment`: variable -> value or Ref; `successors`: unum names it may
    invoke (IR Next targets, fan-in targets included; for the AWS error handler: every
    function); `topic`: its trigger topic (GCP) or None; `secrets` (GCP): environment
    variable -> the Secret Manager secret id whose latest version it holds."""

    unum_name: str
    name: str
    handler: str
    memory: int
    timeout: int
    environment: dict[str, EnvValue] = field(default_factory=dict)
    successors: list[str] = field(default_factory=list)
    archive: Archive = field(default_factory=Archive)
    role: Role = field(default_factory=Role)
    topic: Topic | None = None
    is_error_handler: bool = False
    # AWS: unum names of the functions running a callback Task (`.waitForTaskToken`) that
    # user code here may resume (runtime.asl.callback re-invokes the waiting function)
    resumes: list[str] = field(default_factory=list)
    secrets: dict[str, str] = field(default_factory=dict)
    # the trigger (manifest `triggers:`, unumctl/triggers.py) a trigger function serves, else None
    trigger: str | None = None

    @property
    def invokes(self) -> list[str]:
        """Unum names this function may invoke: its successors, then the callback Tasks'
        functions it may resume (no duplicates)."""
        return list(dict.fromkeys(self.successors + self.resumes))

    @property
    def zip_path(self) -> Path:
        """The packaged archive; RuntimeError before deploy.appgraph.package."""
        if self.archive.path is None:
            raise RuntimeError(f"{self.name}: archive not built yet (deploy.appgraph.package)")
        return self.archive.path

    @property
    def zip_sha256(self) -> str:
        """sha256 (hex) of the packaged archive; RuntimeError before packaging."""
        self.zip_path  # noqa: B018  (raises before packaging)
        return self.archive.sha256 or ""

    def resolved_environment(self, values: dict[str, str]) -> dict[str, str]:
        """The environment with every Ref replaced by `values[ref.name]` (KeyError if absent)."""
        return {k: values[v.name] if isinstance(v, Ref) else v for k, v in self.environment.items()}


@dataclass
class Datastore:
    """The session store: `name` (DynamoDB table / Firestore collection `unum-<app>`);
    GCP: `database` (the app's own `unum-<app>` unless `clouds.gcp.database` says otherwise),
    `create_database`, `location`; AWS: `point_in_time_recovery`."""

    name: str
    database: str | None = None
    create_database: bool = False
    location: str | None = None
    point_in_time_recovery: bool = False


@dataclass
class BlobStore:
    """Where large values go: `bucket_prefix` (Terraform completes the name with a random
    suffix), the key `prefix` (AWS `s/`, GCP `payloads/<app>`).
    `expiry_days`: lifecycle expiry of the values."""

    prefix: str
    expiry_days: int
    bucket_prefix: str | None = None


@dataclass
class Deployment:
    """Everything that will exist for one app on one target (`cloud`: a registered target name).

    `stage`: the deployment's stage name (unumctl/deploy/stage.py; default "dev"), part of
    its resource names and of where its state lives (unumctl/deploy/statepath.py);
    `functions`: the workflow's functions (sorted by unum name); `error_handler`: the AWS
    on-failure destination function, else None; `dead_letter`: the GCP dead-letter topic,
    else None; `entry_name`: the entry function's unum name; `settings`: the resolved
    `clouds.<cloud>` section (deploy/settings.py) or None (local); `params`: the target's
    own typed parameters, a frozen dataclass of its package (aws: unumctl/aws/model.py
    AwsParams) or None. The remaining fields are target parameters the renderers format
    (None where a target has none)."""

    app: str
    cloud: str
    # which deployment of the app this is (deploy/stage.py); keyword-only, so it may sit here
    stage: str = field(default="dev", kw_only=True)
    functions: list[Function]
    datastore: Datastore
    blobs: BlobStore | None
    entry_name: str
    max_delivery_attempts: int
    result_retention_seconds: int
    history: str = "full"
    error_handler: Function | None = None
    settings: Any = None
    params: Any = None
    region: str | None = None
    timers: list[Any] = field(default_factory=list)  # ByTime windows' timers (deploy/windows.py WindowTimer)
    # the manifest's triggers (unumctl/triggers.py Trigger) and, on AWS, the function serving
    # each (unumctl/aws/sources.py; its archive is the entry function's)
    triggers: list[Any] = field(default_factory=list)
    trigger_functions: list[Function] = field(default_factory=list)

    # ------------------------------------------------------------------ lookups
    def function(self, unum_name: str) -> Function:
        """The function (or error handler) named `unum_name`; KeyError when there is none."""
        for f in self.all_functions:
            if f.unum_name == unum_name:
                return f
        raise KeyError(unum_name)

    @property
    def all_functions(self) -> list[Function]:
        """The functions, the trigger functions, then the error handler when there is one."""
        return self.functions + self.trigger_functions + ([self.error_handler] if self.error_handler else [])

    @property
    def entry_function(self) -> Function:
        """The function a session starts with."""
        return self.function(self.entry_name)

    @property
    def entry(self) -> str:
        """Deployed name of the entry function."""
        return self.entry_function.name

    @property
    def edges(self) -> list[tuple[str, str]]:
        """(caller, callee) unum names: who may invoke whom (not the error path)."""
        return [(f.unum_name, s) for f in self.functions for s in f.successors]

    # ------------------------------------------------------------------ AWS views
    @property
    def table(self) -> str:
        """AWS: the DynamoDB table name (the datastore's)."""
        return self.datastore.name

    @property
    def bucket_prefix(self) -> str | None:
        """AWS: the S3 bucket_prefix Terraform completes; None elsewhere."""
        return self.blobs.bucket_prefix if self.blobs else None

    @property
    def point_in_time_recovery(self) -> bool:
        """AWS: DynamoDB point-in-time recovery on the table (settable, for tests)."""
        return self.datastore.point_in_time_recovery

    @point_in_time_recovery.setter
    def point_in_time_recovery(self, value: bool) -> None:
        self.datastore.point_in_time_recovery = value

    @property
    def blob_expiry_days(self) -> int | None:
        """Days after which large values expire (bucket lifecycle)."""
        return self.blobs.expiry_days if self.blobs else None

    def environment(self, table: str, bucket: str, error_handler: bool = False) -> dict[str, str]:
        """AWS: a function's (or the error handler's) environment with the table and bucket
        filled in, as the rendered Terraform sets it (for emulator runs)."""
        f = self.error_handler if error_handler else self.functions[0]
        assert f is not None
        return f.resolved_environment({"table": table, "bucket": bucket})
