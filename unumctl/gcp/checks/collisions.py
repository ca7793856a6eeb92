"""Offline check that deployments of one app in several stages and regions cannot take each
other's names (issue 34 item 1): read each rendered GCP root module (main.tf, python-hcl2),
collect the names it gives Google resources, and report every name two deployments share in
the same namespace.

Namespaces (unumctl/gcp/names.py): project-global names (Pub/Sub topics and subscriptions,
service accounts, the Firestore database, bucket prefixes: a project holds each once whatever
the region, and buckets are global) must differ between any two deployments; regional names
(Cloud Functions, Cloud Scheduler jobs) between two deployments in the same region. Input:
{(stage, region): rendered directory}. Nothing is contacted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hcl2

__all__ = ["collisions", "names_of"]

# module argument -> namespace, for the module calls of the rendered root
GLOBAL_ARGS = {"datastore": ("dead_letter_topic", "runtime_service_account_id", "build_service_account_id",
                             "database_id", "bucket_prefix"),
               "function": ("topic", "service_account_id")}
REGIONAL_ARGS = {"function": ("function_name",)}


def _value(v: Any) -> str:
    return str(v).strip('"')  # python-hcl2 keeps the quotes of string literals


def names_of(root: Path) -> dict[str, set[str]]:
    """{"global": names, "regional": names} of the rendered root module in `root`. A function
    module that runs as the shared account (`service_account_email` given) creates none: its
    service_account_id is not counted; the dead-letter subscription is `<topic>-hold`."""
    with open(root / "main.tf") as fh:
        doc = hcl2.load(fh)
    out: dict[str, set[str]] = {"global": set(), "regional": set()}
    for call in doc.get("module", []):
        for name, body in call.items():
            kind = "datastore" if name.strip('"') == "datastore" else "function"
            for arg in GLOBAL_ARGS[kind]:
                if arg not in body or (arg == "service_account_id" and "service_account_email" in body):
                    continue
                out["global"].add(_value(body[arg]))
                if arg == "dead_letter_topic":
                    out["global"].add(_value(body[arg]) + "-hold")
            for arg in REGIONAL_ARGS.get(kind, ()):
                out["regional"].add(_value(body[arg]))
    for res in doc.get("resource", []):
        for body in res.get('"google_cloud_scheduler_job"', res.get("google_cloud_scheduler_job", {})).values():
            out["regional"].add(_value(body["name"]))
    return out


def collisions(roots: dict[tuple[str, str], Path]) -> list[str]:
    """One line per name two deployments share: `<name>: <namespace> name of stage/region and
    stage/region`. [] when every project-global name is unique across `roots` and every
    regional name within its region."""
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    found = []
    for (stage, region), root in sorted(roots.items()):
        names = names_of(root)
        for scope, values in names.items():
            for n in sorted(values):
                key = (scope, n if scope == "global" else f"{region}/{n}")
                if key in seen:
                    other = seen[key]
                    found.append(f"{n}: {scope} name of {other[0]}/{other[1]} and {stage}/{region}")
                else:
                    seen[key] = (stage, region)
    return found
