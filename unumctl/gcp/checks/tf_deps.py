"""Offline check of the dependency graph of rendered GCP Terraform: every google resource
(and data source) whose API must be enabled is created after the `google_project_service`
that enables it.

Why: on a fresh project an API is off until `google_project_service` enables it; Terraform
creates resources in parallel unless one depends on another, so a topic or service account
that does not depend on the enablement races it and the first apply fails with
SERVICE_DISABLED (a second apply works). The google provider cannot be installed here, so
`terraform graph` cannot run; this builds the part of Terraform's graph that decides the
order, from the configuration alone
(https://developer.hashicorp.com/terraform/language/resources/behavior#resource-dependencies):

- a node is a resource, a data source, a local value, an output, an input variable or a
  module call, per module instance (the root module and the local modules it calls,
  `source = "./..."` or `"../..."`, at any depth);
- a node depends on every node its expressions reference (`var.x`, `local.x`,
  `module.m.out`, `module.m`, `data.T.N`, `T.N`) and on its `depends_on`; an input
  variable depends on the expression its module call gives it (in the caller), an output
  on its value and its `depends_on`; a resource in a module called with `depends_on`
  depends on those too;
- dependencies are transitive, per resource (not per instance: `google_project_service.this`
  with `for_each` is one node that enables every service of its set).

`REQUIRED_APIS` says which services each google resource type calls; a type it does not
know is a finding (add it), so a new resource cannot slip by. The services a
`google_project_service` node enables are read from its `service` literal or from the
`*.googleapis.com` literals of the local value or list its `for_each` names; a
`google_project_service_identity` needs the services it names (the same reading).

Propagation (a first apply that needs no second try, docs/gcp.md "First apply"): an API just
enabled, a service agent just created and an IAM grant just made take minutes to take effect
(https://cloud.google.com/iam/docs/access-change-propagation: "typically 2 minutes,
potentially 7 minutes or longer"). So the check also finds, per google resource R:

- R reaches a `google_project_service` not behind a wait: every enabler R depends on must
  also be reached through a `time_sleep` R depends on (the time_sleep depends on it);
- for the types in `REQUIRED_AGENTS` (a Cloud Functions gen2 function's Eventarc trigger and
  its Pub/Sub push): R does not depend on the `google_project_service_identity` of each
  service agent it needs, or not behind a wait;
- for those types, an IAM grant (`*_iam_member`) R depends on (its build account's roles)
  that is not behind a wait.
"Behind a wait" means: some `time_sleep` T with R -> T -> the node, so R is created after
T has slept, which starts after the node exists.

Findings are strings `<address>: <problem>`, address like
`module.fn_A.google_pubsub_topic.this`; an empty list means the files pass. Files are
parsed with python-hcl2 (the schema check's parser, unumctl/gcp/checks/tf_schema.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import hcl2

__all__ = ["Graph", "check"]

# The service each google resource type calls (Google's API of the resource: the provider
# docs' "API" reference of each resource). google_cloudfunctions2_function deploys through
# Cloud Build into Artifact Registry, runs on Cloud Run and triggers through Eventarc
# (Cloud Run functions, "Enable APIs": https://cloud.google.com/functions/docs/create-deploy-gcloud).
REQUIRED_APIS: dict[str, tuple[str, ...]] = {
    "google_cloudfunctions2_function": ("cloudfunctions.googleapis.com", "run.googleapis.com",
                                        "cloudbuild.googleapis.com", "artifactregistry.googleapis.com",
                                        "eventarc.googleapis.com"),
    "google_cloud_run_service_iam_member": ("run.googleapis.com",),
    # a ByTime window's timer (unumctl/deploy/windows.py; https://cloud.google.com/scheduler/docs/setup)
    "google_cloud_scheduler_job": ("cloudscheduler.googleapis.com",),
    "google_firestore_database": ("firestore.googleapis.com",),
    "google_firestore_field": ("firestore.googleapis.com",),
    "google_pubsub_topic": ("pubsub.googleapis.com",),
    "google_pubsub_subscription": ("pubsub.googleapis.com",),
    "google_pubsub_topic_iam_member": ("pubsub.googleapis.com",),
    "google_service_account": ("iam.googleapis.com",),
    "google_service_account_iam_member": ("iam.googleapis.com",),
    "google_storage_bucket": ("storage.googleapis.com",),
    "google_storage_bucket_object": ("storage.googleapis.com",),
    # a storage trigger's Cloud Storage service agent (unumctl/gcp/sources.py)
    "data.google_storage_project_service_account": ("storage.googleapis.com",),
    "google_storage_bucket_iam_member": ("storage.googleapis.com",),
    "google_project_iam_member": ("cloudresourcemanager.googleapis.com",),
    "data.google_project": ("cloudresourcemanager.googleapis.com",),
    # the services it names, read from the resource (see _needs); Service Usage itself is on
    "google_project_service_identity": (),
}
ENABLER = "google_project_service"
IDENTITY = "google_project_service_identity"
WAIT = "time_sleep"
# The Google-managed service agents a resource type needs before it is created: a gen2
# function's Eventarc trigger (the Eventarc agent manages its subscription: "Permission denied
# while using the Eventarc Service Agent" on a fresh project, hashicorp/terraform-provider-google
# #25294) and its push (the Pub/Sub agent mints the token; Eventarc, "Roles and permissions
# for Cloud Run functions targets", https://cloud.google.com/eventarc/standard/docs/functions/roles-permissions).
REQUIRED_AGENTS: dict[str, tuple[str, ...]] = {
    "google_cloudfunctions2_function": ("eventarc.googleapis.com", "pubsub.googleapis.com"),
}
_HCL_KEYS = {"__is_block__", "__comments__", "__start_line__", "__end_line__"}
# a reference in an expression, not preceded by a name character or '.' (so the
# `google_project.this` inside `data.google_project.this` is not read twice)
_REF = re.compile(r"(?<![\w.\-])(data\.[a-z][a-z0-9_]*\.[A-Za-z_][\w-]*|var\.[A-Za-z_][\w-]*|local\.[A-Za-z_][\w-]*"
                  r"|module\.[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)?|(?:google|random|time)_[a-z0-9_]+\.[A-Za-z_][\w-]*)")
_SERVICE = re.compile(r"\b([a-z0-9-]+\.googleapis\.com)\b")

Node = tuple[tuple[str, ...], str]  # (module path, "kind:name"): ((), "resource:google_pubsub_topic.t")


def _unquote(s: str) -> str:
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s


def _strings(value: Any) -> Iterable[str]:
    """Every string inside a parsed HCL value (expressions come as '${...}' strings), but
    not a `description` (a literal: an address named in its prose is no dependency)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in _HCL_KEYS and k != "description":
                yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def references(value: Any) -> list[str]:
    """The references (`var.x`, `local.x`, `module.m[.out]`, `data.T.N`, `T.N`) in `value`."""
    return [m.group(1) for s in _strings(value) for m in _REF.finditer(s)]


@dataclass
class _Module:
    """One module instance: its blocks by node name and the module calls it makes."""

    path: tuple[str, ...]
    directory: Path
    bodies: dict[str, Any] = field(default_factory=dict)       # "kind:name" -> body or value
    calls: dict[str, tuple[Path, dict]] = field(default_factory=dict)  # call name -> (dir, body)


def _load(directory: Path) -> list[dict]:
    docs = []
    for path in sorted(directory.glob("*.tf")):
        with open(path) as fh:
            docs.append(hcl2.load(fh))
    return docs


def _module(path: tuple[str, ...], directory: Path) -> _Module:
    m = _Module(path, directory)
    for doc in _load(directory):
        for kind in ("resource", "data"):
            for entry in doc.get(kind, []):
                for rtype, named in entry.items():
                    for name, body in named.items():
                        if name not in _HCL_KEYS:
                            prefix = "data." if kind == "data" else ""
                            m.bodies[f"{kind}:{prefix}{_unquote(rtype)}.{_unquote(name)}"] = body
        for entry in doc.get("locals", []):
            for name, value in entry.items():
                if name not in _HCL_KEYS:
                    m.bodies[f"local:{name}"] = value
        for entry in doc.get("output", []):
            for name, body in entry.items():
                if name not in _HCL_KEYS:
                    m.bodies[f"output:{_unquote(name)}"] = body
        for entry in doc.get("variable", []):
            for name in entry:
                if name not in _HCL_KEYS:
                    m.bodies[f"var:{_unquote(name)}"] = None
        for entry in doc.get("module", []):
            for name, body in entry.items():
                source = _unquote(str(body.get("source", ""))) if name not in _HCL_KEYS else ""
                if source.startswith(("./", "../")):
                    m.calls[_unquote(name)] = ((directory / source).resolve(), body)
    return m


class Graph:
    """The dependency graph of the configuration rooted at `root` (a directory of .tf files
    and the local modules it calls). `edges[node]`: the nodes it depends on directly."""

    def __init__(self, root: Path):
        self.modules: dict[tuple[str, ...], _Module] = {}
        self.edges: dict[Node, set[Node]] = {}
        self._walk((), Path(root).resolve(), None)

    def _walk(self, path: tuple[str, ...], directory: Path, call: tuple[_Module, dict] | None) -> None:
        if len(path) > 16:
            raise ValueError(f"{'.'.join(path)}: local modules nested more than 16 deep (a cycle?)")
        m = self.modules[path] = _module(path, directory)
        for name, (child_dir, _) in m.calls.items():
            self._walk(path + (name,), child_dir, (m, m.calls[name][1]))
        for key, body in m.bodies.items():
            node = (path, key)
            deps = self.edges.setdefault(node, set())
            if key.startswith("var:"):
                if call is not None and key[4:] in call[1]:  # the caller's argument, in its scope
                    deps |= self._resolve(call[0].path, references(call[1][key[4:]]))
                continue
            deps |= self._resolve(path, references(body))
            if call is not None and key.startswith(("resource:", "data:")) and "depends_on" in call[1]:
                deps |= self._resolve(call[0].path, references(call[1]["depends_on"]))
        for name in m.calls:  # `module.m` as a whole: every node of the call
            self.edges[(path, f"call:{name}")] = {n for n in self.edges if n[0][:len(path) + 1] == path + (name,)}

    def _resolve(self, path: tuple[str, ...], refs: Iterable[str]) -> set[Node]:
        out: set[Node] = set()
        for ref in refs:
            parts = ref.split(".")
            if ref.startswith(("var.", "local.")):  # an input variable or a local value
                out.add((path, f"{parts[0]}:{parts[1]}"))
            elif ref.startswith("module."):
                out.add((path + (parts[1],), f"output:{parts[2]}") if len(parts) > 2 else (path, f"call:{parts[1]}"))
            elif ref.startswith("data."):
                out.add((path, f"data:data.{parts[1]}.{parts[2]}"))
            else:
                out.add((path, f"resource:{parts[0]}.{parts[1]}"))
        return out

    def reachable(self, node: Node) -> set[Node]:
        """Every node `node` depends on, directly or not (call nodes resolved lazily)."""
        seen: set[Node] = set()
        todo = [node]
        while todo:
            n = todo.pop()
            deps = self.edges.get(n)
            if deps is None and n[1].startswith("call:"):
                name = n[1][5:]
                deps = {x for x in self.edges if x[0][:len(n[0]) + 1] == n[0] + (name,)}
            for d in deps or ():
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen

    def enabled_services(self, node: Node) -> set[str]:
        """The services a google_project_service node enables (its `service` literal, or
        the *.googleapis.com literals of what its `for_each` names)."""
        body = self.modules[node[0]].bodies[node[1]]
        services = set(_SERVICE.findall(_unquote(str(body.get("service", "")))))
        if "for_each" in body:
            text = " ".join(_strings(body["for_each"]))
            services |= set(_SERVICE.findall(text))
            for ref in references(body["for_each"]):
                if ref.startswith("local."):
                    services |= set(_SERVICE.findall(" ".join(_strings(
                        self.modules[node[0]].bodies.get(f"local:{ref[6:]}")))))
        return services


def address(node: Node) -> str:
    """Terraform's address of a resource or data node: `module.a.module.b.T.N`."""
    return "".join(f"module.{p}." for p in node[0]) + node[1].split(":", 1)[1]


def _needs(g: Graph, node: Node, rtype: str) -> tuple[str, ...] | None:
    """The services `node` calls (REQUIRED_APIS; an identity: the services it names), None
    for a type REQUIRED_APIS does not know."""
    if rtype == IDENTITY:
        return tuple(sorted(g.enabled_services(node)))
    return REQUIRED_APIS.get(rtype)


def _behind_wait(g: Graph, reach: set[Node], target: Node) -> bool:
    """Whether some time_sleep in `reach` depends on `target`."""
    return any(n[1].startswith(f"resource:{WAIT}.") and target in g.reachable(n) for n in reach)


def _propagation(g: Graph, node: Node, rtype: str, reach: set[Node]) -> list[str]:
    """Findings of the propagation rules (module doc) for one google resource."""
    problems = []
    for dep in sorted(reach):
        if dep[1].startswith(f"resource:{ENABLER}.") and not _behind_wait(g, reach, dep):
            problems.append(f"{address(node)}: depends on {address(dep)} but on no {WAIT} after it "
                            "(an API just enabled may answer SERVICE_DISABLED)")
    agents = REQUIRED_AGENTS.get(rtype, ())
    for service in agents:
        ids = [d for d in reach if d[1].startswith(f"resource:{IDENTITY}.") and service in g.enabled_services(d)]
        if not ids:
            problems.append(f"{address(node)}: does not depend on the {IDENTITY} of {service} "
                            "(its service agent is created lazily, after the first trigger fails)")
        elif not any(_behind_wait(g, reach, d) for d in ids):
            problems.append(f"{address(node)}: depends on the {IDENTITY} of {service} but on no {WAIT} after it")
    if agents:
        for dep in sorted(reach):
            kind = dep[1].split(".", 1)[0]
            if kind.startswith("resource:google_") and kind.endswith("_iam_member") and not _behind_wait(g, reach, dep):
                problems.append(f"{address(node)}: depends on the grant {address(dep)} but on no {WAIT} "
                                "after it (IAM changes take minutes to propagate)")
    return problems


def check(root: Path) -> tuple[list[str], int]:
    """(findings, resources checked) of the configuration at `root`: a google resource or
    data source of a type REQUIRED_APIS does not know, one that does not depend on the
    google_project_service of every service it needs, and the propagation rules of the module
    doc (waits after enablement, service agents and grants). Raises OSError / hcl2's parse
    errors for unreadable files."""
    g = Graph(root)
    problems, checked = [], 0
    for path, m in sorted(g.modules.items()):
        for key in sorted(m.bodies):
            kind, _, name = key.partition(":")
            if kind not in ("resource", "data"):
                continue
            rtype = name.rsplit(".", 1)[0]
            if not rtype.removeprefix("data.").startswith("google_") or rtype == ENABLER:
                continue
            node = (path, key)
            needs = _needs(g, node, rtype)
            if needs is None:
                problems.append(f"{address(node)}: no API known for {rtype} (add it to "
                                "unumctl/gcp/checks/tf_deps.py REQUIRED_APIS)")
                continue
            checked += 1
            reach = g.reachable(node)
            enabled: set[str] = set()
            for dep in reach:
                if dep[1].startswith(f"resource:{ENABLER}."):
                    enabled |= g.enabled_services(dep)
            missing = [s for s in needs if s not in enabled]
            if missing:
                problems.append(f"{address(node)}: needs {', '.join(missing)} but does not depend on the "
                                f"{ENABLER} that enables it (directly or through a module input)")
            problems += _propagation(g, node, rtype, reach)
    return problems, checked
