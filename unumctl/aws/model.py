"""The one data model of an AWS deployment, built once from the app and consumed by the
renderer (Terraform), the target (invoke/result) and the local Lambda emulator (tests).

Names: functions `<app>-<Function>`, the error handler `<app>-UnumErrorHandler`, the table
`unum-<app>`, the bucket `unum-<app>-<random suffix>` (Terraform `bucket_prefix`), blobs under
the key prefix `s/`. Lambda function names are at most 64 characters.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.aws import (ENV_BLOB_PREFIX, ENV_BUCKET, ENV_FUNCTION_PREFIX, ENV_HISTORY, ENV_MAX_ATTEMPTS,
                         ENV_RESULT_RETENTION, ENV_TABLE, LAMBDA_RUNTIME)

from runtime.engine import Options

from ..build import RUNTIME_DIR, Artifact, _files, build_app, state_dir, zip_bytes
from ..manifest import App, AppError
from ..render.hcl import HclValueError, hcl_identifier, hcl_value
from .package import architecture, lambda_bundle_hook

ERROR_HANDLER = "UnumErrorHandler"
BLOB_PREFIX = "s/"
FUNCTION_HANDLER = "unum_entry.lambda_handler"
ERROR_HANDLER_HANDLER = "runtime.aws.entry.error_handler"


@dataclass
class AwsFunction:
    """One Lambda function: `unum_name` (IR name), `name` (deployed), its archive,
    `successors` (deployed names it may invoke: IR Next targets, fan-in targets included)."""

    unum_name: str
    name: str
    handler: str
    memory: int
    timeout: int
    zip_path: Path
    zip_sha256: str
    successors: list[str] = field(default_factory=list)
    is_error_handler: bool = False


@dataclass
class AwsDeployment:
    """Everything that will exist for one app on AWS."""

    app: str
    table: str
    bucket_prefix: str
    functions: list[AwsFunction]
    error_handler: AwsFunction
    entry: str                    # deployed name of the entry function
    runtime: str                  # Lambda runtime identifier, e.g. python3.11
    architecture: str             # x86_64 | arm64
    max_retry_attempts: int       # Lambda async retries (0..2)
    max_delivery_attempts: int    # total attempts, the error handler re-invokes up to this
    result_retention_seconds: int
    blob_expiry_days: int
    point_in_time_recovery: bool
    log_retention_days: int
    reserved_concurrency: int = -1   # clouds.aws.reserved_concurrency: per function, -1 = unreserved
    kms_key_arn: str | None = None   # clouds.aws.kms_key_arn: customer-managed key, None = AWS-owned
    history: str = "full"         # runtime.history (the error handler records its events by it)

    @property
    def function_prefix(self) -> str:
        return f"{self.app}-"

    def environment(self, table: str, bucket: str, error_handler: bool = False) -> dict[str, str]:
        """Environment variables of a function (the rendered Terraform sets the same)."""
        env = {ENV_TABLE: table, ENV_BUCKET: bucket, ENV_BLOB_PREFIX: BLOB_PREFIX,
               ENV_FUNCTION_PREFIX: self.function_prefix}
        if error_handler:
            env[ENV_MAX_ATTEMPTS] = str(self.max_delivery_attempts)
            env[ENV_RESULT_RETENTION] = str(self.result_retention_seconds)
            env[ENV_HISTORY] = self.history
        return env


def build_error_handler(app: App) -> Artifact:
    """The app's error-handler archive: the runtime core and AWS adapter plus requirements
    (no user code), deterministic like every bundle."""
    entries: dict[str, bytes] = {}
    for rel, p in _files(RUNTIME_DIR):
        if rel.split("/")[0] in ("local", "gcp"):
            continue
        if rel.endswith(".py") or rel.endswith(".txt"):
            entries[f"runtime/{rel}"] = p.read_bytes()
    for rel, data in lambda_bundle_hook(app, None):
        entries[rel] = data
    data = zip_bytes(sorted(entries.items()))
    digest = hashlib.sha256(data).hexdigest()
    out = state_dir(app) / "build" / "aws"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{ERROR_HANDLER}-{digest[:16]}.zip"
    rebuilt = not path.exists()
    if rebuilt:
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    for old in out.glob(f"{ERROR_HANDLER}-*.zip"):
        if old != path:
            old.unlink(missing_ok=True)
    return Artifact(ERROR_HANDLER, path, digest, rebuilt)


# the values CloudWatch Logs accepts for a log group's retention (0 = never expire)
LOG_RETENTION_DAYS = (0, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096,
                      1827, 2192, 2557, 2922, 3288, 3653)


def int_setting(cfg: dict[str, Any], key: str, default: int, mpath: Path,
                allowed: tuple[int, ...] | None = None) -> int:
    """The integer `clouds.aws.<key>` (or `default` when absent). Raises AppError naming the
    manifest and the field when it is not an integer, or not one of `allowed`."""
    v = cfg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise AppError(f"{mpath}: clouds.aws.{key}: {str(v)[:40]!r} must be an integer, e.g. {default}")
    if allowed is not None and v not in allowed:
        raise AppError(f"{mpath}: clouds.aws.{key}: {v} is not one of CloudWatch's values "
                       f"({', '.join(map(str, allowed))})")
    return v


# Terraform's built-in backends (https://developer.hashicorp.com/terraform/language/backend):
# `clouds.aws.backend.type` must be one of them, so no text of the manifest becomes HCL syntax
BACKEND_TYPES = ("azurerm", "consul", "cos", "gcs", "http", "kubernetes", "local", "oss", "pg",
                 "remote", "s3")


def backend_setting(cfg: dict[str, Any], mpath: Path) -> dict[str, Any] | None:
    """`clouds.aws.backend` checked: {"type": one of BACKEND_TYPES, "config": {identifier:
    JSON-like value}} or None. Values are rendered as quoted literals (render/hcl.py); the type
    and keys are Terraform syntax, so anything but a known type and identifier keys raises
    AppError naming the field."""
    be = cfg.get("backend")
    if be is None:
        return None
    where = f"{mpath}: clouds.aws.backend"
    if not isinstance(be, dict) or set(be) - {"type", "config"}:
        raise AppError(f"{where}: expected {{type: s3, config: {{bucket: ..., key: ...}}}}")
    if be.get("type") not in BACKEND_TYPES:
        raise AppError(f"{where}.type: {str(be.get('type'))[:40]!r} is not a Terraform backend "
                       f"({', '.join(BACKEND_TYPES)})")
    conf = be.get("config") or {}
    if not isinstance(conf, dict):
        raise AppError(f"{where}.config: expected a mapping of backend settings")
    for k, v in conf.items():
        if not hcl_identifier(k):
            raise AppError(f"{where}.config: key {str(k)[:40]!r} is not an identifier "
                           "(letters, digits and '_')")
        try:
            hcl_value(v)
        except HclValueError as exc:
            raise AppError(f"{where}.config.{k}: {exc}") from None
    return {"type": be["type"], "config": dict(conf)}


def bool_setting(cfg: dict[str, Any], key: str, default: bool, mpath: Path) -> bool:
    """The boolean `clouds.aws.<key>` (or `default` when absent). A YAML boolean only (true /
    false); a string such as 'no' raises AppError naming the field (bool('no') is True)."""
    v = cfg.get(key, default)
    if not isinstance(v, bool):
        raise AppError(f"{mpath}: clouds.aws.{key}: {str(v)[:40]!r} must be true or false "
                       "(unquoted)")
    return v


def reserved_concurrency_setting(cfg: dict[str, Any], mpath: Path) -> int:
    """`clouds.aws.reserved_concurrency`: concurrent executions reserved for each function of
    the app (Lambda reserved concurrency; -1, the default, reserves none). AppError below -1."""
    v = int_setting(cfg, "reserved_concurrency", -1, mpath)
    if v < -1:
        raise AppError(f"{mpath}: clouds.aws.reserved_concurrency: {v} must be -1 (unreserved) or >= 0")
    return v


def kms_setting(cfg: dict[str, Any], mpath: Path) -> str | None:
    """`clouds.aws.kms_key_arn`: a customer-managed KMS key ARN (arn:<partition>:kms:...) for the
    table, bucket, queue, logs and environment, or None (AWS-owned keys). A key ARN, not an
    alias: Lambda and CloudWatch Logs take key ARNs only. AppError otherwise."""
    v = cfg.get("kms_key_arn")
    if v is not None and not (isinstance(v, str) and re.fullmatch(r"arn:[a-z-]+:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+", v)):
        raise AppError(f"{mpath}: clouds.aws.kms_key_arn: {str(v)[:40]!r} must be a KMS key ARN, "
                       "e.g. arn:aws:kms:us-east-1:123456789012:key/<id>")
    return v


def check_settings(app: App) -> None:
    """Check the integer, boolean and backend `clouds.aws` settings without building anything
    (for `validate`); AppError naming the field, as build_deployment raises."""
    cfg = app.manifest.clouds.get("aws") or {}
    mpath = app.root / "unumctl.yaml"
    retries = int_setting(cfg, "max_retry_attempts", min(2, app.manifest.runtime.max_delivery_attempts - 1), mpath)
    if not 0 <= retries <= 2:
        raise AppError(f"{mpath}: clouds.aws.max_retry_attempts: {retries} must be 0, 1 or 2 (Lambda's range)")
    int_setting(cfg, "log_retention_days", 14, mpath, LOG_RETENTION_DAYS)
    reserved_concurrency_setting(cfg, mpath)
    kms_setting(cfg, mpath)
    bool_setting(cfg, "point_in_time_recovery", False, mpath)
    if "s3_use_path_style" in cfg:
        bool_setting(cfg, "s3_use_path_style", False, mpath)
    backend_setting(cfg, mpath)


def build_deployment(app: App) -> AwsDeployment:
    """Build every archive and the deployment model. Raises AppError for names or settings
    AWS would reject (function name > 64 characters, bad clouds.aws values)."""
    cfg = app.manifest.clouds.get("aws") or {}
    mpath = app.root / "unumctl.yaml"
    arts = build_app(app, "aws")
    eh_art = build_error_handler(app)
    prefix = f"{app.name}-"
    fns = []
    for name, art in arts.items():
        spec = app.manifest.functions[name]
        ir = app.workflow.functions[name]
        succ = sorted({prefix + e.target for e in ir.next})
        fns.append(AwsFunction(name, prefix + name, FUNCTION_HANDLER, spec.memory, spec.timeout,
                               art.path, art.sha256, succ))
    for f in fns + [AwsFunction(ERROR_HANDLER, prefix + ERROR_HANDLER, "", 0, 0, Path(), "")]:
        if len(f.name) > 64:
            raise AppError(f"{mpath}: functions.{f.unum_name}: deployed name {f.name!r} is longer than "
                           "Lambda's 64 characters; shorten the app or function name")
    rt = app.manifest.runtime
    eh = AwsFunction(ERROR_HANDLER, prefix + ERROR_HANDLER, ERROR_HANDLER_HANDLER, 128, 60,
                     eh_art.path, eh_art.sha256, sorted(f.name for f in fns), True)
    retries = int_setting(cfg, "max_retry_attempts", min(2, rt.max_delivery_attempts - 1), mpath)
    if not 0 <= retries <= 2:
        raise AppError(f"{mpath}: clouds.aws.max_retry_attempts: {retries} must be 0, 1 or 2 (Lambda's range)")
    return AwsDeployment(
        app=app.name, table=f"unum-{app.name}", bucket_prefix=f"unum-{app.name}-"[:37],
        functions=fns, error_handler=eh, entry=prefix + app.workflow.entry.name,
        runtime=LAMBDA_RUNTIME, architecture=architecture(app), max_retry_attempts=retries,
        max_delivery_attempts=rt.max_delivery_attempts,
        result_retention_seconds=rt.result_retention_seconds,
        blob_expiry_days=Options.from_mapping(app.runtime_options()).retention.blob_expiry_days,
        point_in_time_recovery=bool_setting(cfg, "point_in_time_recovery", False, mpath),
        log_retention_days=int_setting(cfg, "log_retention_days", 14, mpath, LOG_RETENTION_DAYS),
        reserved_concurrency=reserved_concurrency_setting(cfg, mpath), kms_key_arn=kms_setting(cfg, mpath),
        history=rt.history)
