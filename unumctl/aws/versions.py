"""The versions of an app's deployment on AWS (docs/versions.md "On AWS"): Lambda's own
function versions, a stage alias for new sessions, and each app version's record in the
app's table; when an old one is retired, and how it is collected.

An app version is one published version of every function (PublishVersion,
https://docs.aws.amazon.com/lambda/latest/api/API_PublishVersion.html: "Creates a version from
the current code and configuration of a function"; a version's code and configuration cannot
be changed). Its id is the local target's (unumctl/deploy/versions.py `deployment_version`:
the bundles' digests and the settings Lambda enforces), and every function of it carries the
id in its environment (runtime/aws ENV_APP_VERSION). A deploy

1. updates each function's code and configuration and publishes a version of it (Terraform:
   `aws_lambda_function` `publish = true`), with the on-failure destination and retries on
   that version (PutFunctionEventInvokeConfig with `Qualifier`);
2. `register`s the app version: item (VERSIONS, id) = {"functions": {function: version
   number}, "deployed_at"} (runtime/aws/pins.py reads it when it pins a session);
3. `promote`s it: the stage alias of every function (CreateAlias / UpdateAlias,
   https://docs.aws.amazon.com/lambda/latest/api/API_UpdateAlias.html) now names its version,
   so new sessions start on it, after its record exists.

Sessions pin themselves (runtime/aws/pins.py) and list themselves in their version's roster.
A version is retired (unumctl/deploy/versions.py `retirable`, the one rule) when it is not the
current one (the newest `deployed_at`), it stopped being current at least `grace` seconds ago
(an entry started through the alias just before the alias moved pins within its own run: the
grace is Lambda's longest function timeout, 900 s, https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html)
and none of its rostered sessions can still run (no result, or FAILED and redrivable:
runtime/redrive.py; a roster entry expires with the result's retention). `collect` then deletes
each of its function versions no kept app version uses (DeleteFunction with `Qualifier`,
https://docs.aws.amazon.com/lambda/latest/api/API_DeleteFunction.html), its roster, and its record.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

from runtime.aws.datastore import DynamoDBDatastore
from runtime.aws.pins import VERSIONS, roster_partition
from runtime.payload import RESULT_KEY, VersionId
from runtime.redrive import REDRIVABLE, describe

from ..deploy.versions import retirable

__all__ = ["GRACE_SECONDS", "AwsVersions"]

GRACE_SECONDS = 900.0   # Lambda's maximum function timeout (module docstring)
_NEVER = 2 ** 40        # expiry of a version record: kept until collected


class AwsVersions:
    """The app versions of one deployment (app + stage + region): its table `ds`
    (runtime/aws/datastore.py DynamoDBDatastore) and Lambda client `lam`, function names
    `prefix` + IR name (unumctl/aws/names.py function_prefix), alias `alias` (the stage).
    botocore's ClientError propagates."""

    def __init__(self, ds: DynamoDBDatastore, lam: Any, prefix: str, alias: str):
        self.ds, self.lam, self.prefix, self.alias = ds, lam, prefix, alias

    def records(self) -> list[dict[str, Any]]:
        """Every app version's record, {"version", "functions", "deployed_at"}, the current
        (newest) first."""
        names = self.ds.names(VERSIONS)
        items = self.ds.get_many(VERSIONS, names)
        out = [{"version": VersionId(n), **it} for n, it in zip(names, items) if it is not None]
        return sorted(out, key=lambda r: (-float(r["deployed_at"]), r["version"]))

    def current(self) -> dict[str, Any] | None:
        """The record of the version new sessions start on, None for an app deployed without versions."""
        every = self.records()
        return every[0] if every else None

    def register(self, version: VersionId, functions: Mapping[str, str], now: float | None = None) -> None:
        """Record app `version` ({IR function name: published version number}) as deployed
        at `now`; a version registered before becomes current again (a rollback)."""
        now = time.time() if now is None else now
        self.ds.put(VERSIONS, VersionId(version), {"functions": {k: str(v) for k, v in functions.items()},
                                                   "deployed_at": now}, _NEVER)

    def promote(self, functions: Mapping[str, str]) -> None:
        """Point the stage alias of every function at its version (`functions`: IR name ->
        version number), creating the alias where it does not exist yet."""
        for fn, number in functions.items():
            name = self.prefix + fn
            try:
                self.lam.update_alias(FunctionName=name, Name=self.alias, FunctionVersion=str(number))
            except self.lam.exceptions.ResourceNotFoundException:
                self.lam.create_alias(FunctionName=name, Name=self.alias, FunctionVersion=str(number))

    def running(self, version: str, now: float | None = None) -> int:
        """How many sessions pinned to `version` can still run (module docstring)."""
        now = time.time() if now is None else now
        part = roster_partition(version)
        count = 0
        for session in self.ds.names(part):
            result = self.ds.get(session, RESULT_KEY)
            if result is None or describe(self.ds, session, None, now).status == REDRIVABLE:
                count += 1
        return count

    def listing(self, now: float | None = None) -> list[dict[str, Any]]:
        """[{"version", "deployed_at", "running", "current", "functions"}], the current
        first: what `unumctl versions --cloud aws` prints."""
        return [{"version": r["version"], "deployed_at": float(r["deployed_at"]),
                 "running": self.running(r["version"], now), "current": i == 0,
                 "functions": sorted(r["functions"])} for i, r in enumerate(self.records())]

    def collect(self, now: float | None = None, grace: float = GRACE_SECONDS) -> list[VersionId]:
        """Retire and collect every version the rule allows (module docstring); returns
        their ids. Function versions a kept app version also uses stay."""
        now = time.time() if now is None else now
        every = self.records()
        if len(every) < 2:
            return []
        # a version stopped being current when the next newer one was deployed
        since = {r["version"]: float(every[i - 1]["deployed_at"]) for i, r in enumerate(every) if i}
        young = [v for v, t in since.items() if now - t < grace]
        running = {r["version"]: self.running(r["version"], now) for r in every[1:]}
        gone = retirable([r["version"] for r in every], every[0]["version"], running, held=young)
        kept = {(fn, str(n)) for r in every if r["version"] not in gone for fn, n in r["functions"].items()}
        for r in every:
            if r["version"] not in gone:
                continue
            for fn, number in sorted(r["functions"].items()):
                if (fn, str(number)) in kept:
                    continue
                try:
                    self.lam.delete_function(FunctionName=self.prefix + fn, Qualifier=str(number))
                except self.lam.exceptions.ResourceNotFoundException:
                    pass  # deleted by an earlier, interrupted collect
            part = roster_partition(r["version"])
            self.ds.delete(part, self.ds.names(part))
            self.ds.delete(VERSIONS, [r["version"]])
        return [VersionId(v) for v in gone]
