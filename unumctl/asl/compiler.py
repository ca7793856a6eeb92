"""Compile an Amazon States Language state machine into Unum IR (one node per function).

Source: seed 001 §4 (front-end compiler: a Step Functions state machine becomes per-function
IR), seed 000 Appendix A (IR edges Scalar / Map / Fan-in, Values, Payload Modifiers).
The rule (docs/stepfunctions.md):

* An integration Task (runtime.asl.integrations: DynamoDB, SNS, SQS, EventBridge, aws-sdk)
  is no function: it runs in the function that reaches it, as Pass and Choice do. One with
  `.waitForTaskToken` is a function of its own (no user code), as a timed Wait is: what
  precedes it is committed by the previous function's checkpoint, so resuming it after the
  callback replays only that Task, never an earlier Lambda Task or integration call.
* Every other Task state (a Lambda call) is a function (a Task whose `FunctionName.$`, or JSONata
  `Arguments.FunctionName` expression, is chosen at run time gets one variant per manifest
  function). Its wrapper runs the Task's I/O processing, Retry and
  Catch, then *walks* the following Pass/Choice/Wait/Succeed/Fail states in its egress, so
  they cost no invocation, and routes (`$route`) to the next Task, a fan-out or the end.
* A scope (the machine, a Parallel branch, a Map iterator) starts at its StartAt. When
  StartAt is a Task, or a chain of Pass states leading to one, that Task's function is the
  scope's entry (the Pass states run in its ingress). Otherwise a function `<Scope>Start`
  is synthesized (e.g. a machine that begins with a Choice or has only Pass states).
* Map and Parallel compile to fan-out + fan-in: the state before them computes the branch
  inputs (ItemsPath, ItemSelector/Parameters) and sends them along a Map edge (or one
  Scalar edge per Parallel branch); the function that ends each branch has a Fan-in edge to
  the join, which is the function of the Map/Parallel state's Next Task (its ingress applies
  ResultSelector/ResultPath/OutputPath), or a synthesized `<State>Join`. The state's input,
  needed by ResultPath at the join, is stored once in the datastore, not in each branch.
  When several functions can end a branch, a `<Scope>End` function is synthesized so the
  fan-in names one invocation per branch. Nested fan-outs name their contributors with the
  outer indexes (`$1`, `$2`, ...), so naming stays correct at any depth.
* A Map or Parallel state whose branches hold only Pass/Choice/Succeed/Fail states (or,
  with Retry or Catch, no Task) runs in-process in the function that reaches it. With
  Task states inside, Retry and Catch compile to an extra edge from every branch function
  to the join (which applies the Retry or the Catch); for Retry the join has a back edge
  marked Iterate that re-runs the fan-out as a new attempt under new invocation names.
* Loops through Tasks inside branches compile as at the top level (back edges iterate;
  the engine names a looping branch by its frame's base, docs/ir.md).
* A Map with MaxConcurrency/MaxConcurrencyPath is laned (runtime.asl.fanout): the fan-out
  starts N items and the end of each branch has a Scalar edge back to the iterator's
  entry that starts item $0+N.
* A Distributed Map (ProcessorConfig.Mode DISTRIBUTED) compiles exactly as above; its
  ItemReader / ItemBatcher run in the function that reaches it, its ResultWriter and failure
  threshold in the join (runtime.asl.distributed). When it tolerates failed items, every
  function of its item processor gets the scope-end edge, which carries a failed item.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from runtime.asl import distributed, jsonata
from runtime.asl.integrations import registry as integrations
from runtime.asl.machine import LAMBDA_INVOKE, scope_states
from runtime.asl.wrapper import lambda_name, stop_key
from runtime.ir import FunctionIR, Workflow, build_workflow, load_function

from .validate import AslValidationError, validate

__all__ = ["Compiled", "Compiler", "compile_definition", "to_workflow"]


@dataclass
class Fn:
    """A compiled function: `lambda_fn` is the manifest function whose code it runs (None
    for synthesized functions)."""

    name: str
    scope: str
    lambda_fn: str | None = None
    task: str | None = None
    join: str | None = None
    wait: str | None = None               # the Wait state this function resumes after its timer
    end: bool = False
    start: bool = False
    entry_state: str | None = None        # synthesized scope entry: where it starts walking
    stops: list[tuple] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Compiled:
    """The result: IR nodes (canonical dicts) and, per function, its manifest function."""

    nodes: dict[str, dict[str, Any]]
    code: dict[str, str | None]
    start: str


def walked_in_place(st: dict[str, Any]) -> bool:
    """True for a Task state walked in place by the function that reaches it: an integration
    Task (runtime.asl.integrations) without `.waitForTaskToken` (a callback Task gets a
    function of its own, so that its resumption replays nothing before it)."""
    res = st["Resource"]
    return (integrations.inline(res) and not res.endswith(integrations.CALLBACK_SUFFIX)
            and not integrations.suspends(integrations.find(res)))


def _sanitize(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not s or not s[0].isalpha():
        s = "S" + s
    return s[:60]


class Compiler:
    """One compilation. `resolve(lambda_name)` returns the manifest function for a Lambda
    name (or None); `candidates` are the manifest functions a run-time FunctionName may
    name; `prefix` is prepended to every function name."""

    def __init__(self, definition: dict[str, Any], resolve: Callable[[str], str | None],
                 candidates: list[str], source: str = "statemachine", prefix: str = "",
                 machine: str = "statemachine"):
        self.d = definition
        self.resolve = resolve
        self.candidates = candidates
        self.source = source
        self.prefix = prefix
        self.machine = machine
        self.fns: dict[str, Fn] = {}
        self.hosts: dict[str, str] = {}          # t-stop key -> function
        self.entries: dict[str, tuple[str, str]] = {}   # scope -> (function, state to start at)
        self.joins: dict[str, str] = {}          # m/p stop key -> join function
        self.inline: set[str] = set()            # m/p stop keys run in-process
        self.waits: dict[str, str] = {}          # w stop key -> function resuming after the timer
        self.catching: set[str] = set()          # m/p stop keys of fan-outs with Catch or Retry
        self.retrying: set[str] = set()          # m/p stop keys of fan-outs with Retry
        self.laned: set[str] = set()             # m stop keys of Maps with MaxConcurrency lanes
        self.tolerant: set[str] = set()          # m stop keys of Distributed Maps tolerating failures
        self.fan_states: dict[str, tuple[str, str]] = {}  # m/p stop key -> (scope, state)
        self.depth: dict[str, int] = {"": 0}
        self.labels: dict[str, str] = {}
        self.scopes: dict[str, dict[str, Any]] = {}
        self._terminals: dict[str, str] = {}

    # ------------------------------------------------------------------ helpers
    def fail(self, where: str, msg: str):
        raise AslValidationError(f"{self.source}: {where}: {msg}")

    def new_fn(self, base: str, scope: str, **kw) -> Fn:
        name = self.prefix + _sanitize(base)
        n, k = name, 2
        while n in self.fns:
            n, k = f"{name}_{k}", k + 1
        fn = Fn(n, scope, **kw)
        self.fns[n] = fn
        return fn

    def label(self, key: str) -> str:
        if key not in self.labels:
            self.labels[key] = f"r{len(self.labels)}"
        return self.labels[key]

    @staticmethod
    def _sub(st: dict[str, Any]) -> list[Any]:
        if st["Type"] == "Map":
            return [st.get("ItemProcessor") or st.get("Iterator")]
        return list(st["Branches"])

    def _has_task(self, doc: dict[str, Any], kinds: tuple[str, ...] = ("Task",)) -> bool:
        """True when a state of one of `kinds` is in `doc`, nested Map/Parallel included."""
        for st in doc["States"].values():
            if st["Type"] in kinds and not (st["Type"] == "Task" and self.in_place(st)):
                return True
            if st["Type"] in ("Map", "Parallel") and any(self._has_task(b, kinds) for b in self._sub(st)):
                return True
        return False

    def is_external(self, st: dict[str, Any]) -> bool:
        """True for a request-response `lambda:invoke` Task whose static FunctionName names
        no manifest function (a function outside the app): it is walked in place by the
        function that reaches it and calls Lambda's Invoke API through the integration
        endpoint (runtime.asl.integrations.lambda_.invoke_external), as an integration Task
        does. A FunctionName chosen at run time still means one of the app's functions."""
        if st.get("Type") != "Task" or st.get("Resource") != LAMBDA_INVOKE:
            return False
        if (st.get("QueryLanguage") or self.d.get("QueryLanguage")) == "JSONata":
            args = st.get("Arguments")
            ref = args.get("FunctionName") if isinstance(args, dict) else None
            if jsonata.is_expr(ref):
                return False
        else:
            ref = (st.get("Parameters") or {}).get("FunctionName")
        return isinstance(ref, str) and self.resolve(lambda_name(ref)) is None

    def in_place(self, st: dict[str, Any]) -> bool:
        """True for a Task walked in place: an integration Task (walked_in_place) or a
        lambda:invoke of a function outside the app (is_external)."""
        return walked_in_place(st) or self.is_external(st)

    def external_tasks(self, doc: dict[str, Any] | None = None, scope: str = "") -> list[list[str]]:
        """[scope, state] of every is_external Task, nested Map/Parallel branches included
        (scopes as runtime.asl.machine.scope_states names them); the wrappers carry them as
        `External`."""
        doc = self.d if doc is None else doc
        out: list[list[str]] = []
        for name, st in doc["States"].items():
            if self.is_external(st):
                out.append([scope, name])
            elif st["Type"] == "Map":
                out += self.external_tasks(st.get("ItemProcessor") or st.get("Iterator"), f"{scope}/{name}")
            elif st["Type"] == "Parallel":
                for k, b in enumerate(st["Branches"]):
                    out += self.external_tasks(b, f"{scope}/{name}#{k}")
        return out

    # ------------------------------------------------------------------ passes
    def collect(self, scope: str, doc: dict[str, Any], where: str) -> None:
        self.scopes[scope] = doc
        for name, st in doc["States"].items():
            t = st["Type"]
            if t == "Task" and self.in_place(st):
                continue  # an integration Task runs in the function that reaches it
            if t == "Task" and integrations.inline(st["Resource"]):  # a callback: its own function
                self.hosts[stop_key("t", scope, name)] = self.new_fn(name, scope, task=name).name
            elif t == "Task":
                self.task_fns(scope, name, st, f"{where}States.{name}")
            elif t == "Wait":
                self.waits[stop_key("w", scope, name)] = self.new_fn(name, scope, wait=name).name
            elif t in ("Map", "Parallel"):
                key = stop_key("m" if t == "Map" else "p", scope, name)
                subs = self._sub(st)
                # branches of only Pass/Choice/Succeed/Fail states (nested ones included) cost
                # no invocation: run them in the function that reaches the state; so do
                # branches without Task under a Retry/Catch (Waits then wait in place)
                if not any(self._has_task(b, ("Task", "Wait")) for b in subs) or (
                        ("Retry" in st or "Catch" in st) and not any(self._has_task(b) for b in subs)):
                    self.inline.add(key)
                    continue
                if "Retry" in st or "Catch" in st:
                    self.catching.add(key)
                if "Retry" in st:
                    self.retrying.add(key)
                self.fan_states[key] = (scope, name)
                if t == "Map" and (st.get("MaxConcurrency") or "MaxConcurrencyPath" in st):
                    self.laned.add(key)
                if t == "Map" and distributed.tolerant(st):
                    self.tolerant.add(key)
                if t == "Map":
                    sub = f"{scope}/{name}"
                    self.depth[sub] = self.depth[scope] + 1
                    pk = "ItemProcessor" if "ItemProcessor" in st else "Iterator"
                    self.collect(sub, st[pk], f"{where}States.{name}.{pk}.")
                else:
                    for k, b in enumerate(st["Branches"]):
                        sub = f"{scope}/{name}#{k}"
                        self.depth[sub] = self.depth[scope] + 1
                        self.collect(sub, b, f"{where}States.{name}.Branches[{k}].")

    def task_fns(self, scope: str, name: str, st: dict[str, Any], where: str) -> None:
        res = st["Resource"]
        ref: Any
        if res.startswith(LAMBDA_INVOKE):
            if (st.get("QueryLanguage") or self.d.get("QueryLanguage")) == "JSONata":
                args = st.get("Arguments")
                ref = args.get("FunctionName") if isinstance(args, dict) else None
                static = isinstance(ref, str) and not jsonata.is_expr(ref)
                field_ = "Arguments.FunctionName"
            else:
                params = st.get("Parameters") or {}
                static, ref = "FunctionName" in params, params.get("FunctionName")
                field_ = "Parameters.FunctionName" if static else "Parameters.FunctionName.$"
            if not static:  # chosen at run time: one variant per manifest function
                if not self.candidates:
                    self.fail(f"{where}.{field_}", "the function is chosen at run time but the "
                              "manifest lists no functions")
                for cand in self.candidates:
                    fn = self.new_fn(f"{name}_{cand}", scope, lambda_fn=cand, task=name)
                    self.hosts[stop_key("t", scope, name, cand)] = fn.name
                return
        else:
            ref, field_ = res, "Resource"
        lname = lambda_name(ref)
        target = self.resolve(lname)
        if target is None:
            self.fail(f"{where}.{field_}", f"Lambda function {lname!r} is not one of the manifest's "
                      f"functions ({', '.join(self.candidates) or 'none'}); add it under functions:")
        fn = self.new_fn(name, scope, lambda_fn=target, task=name)
        self.hosts[stop_key("t", scope, name)] = fn.name

    def entry_of(self, scope: str) -> tuple[str, str]:
        if scope in self.entries:
            return self.entries[scope]
        doc = self.scopes[scope]
        states, start = doc["States"], doc["StartAt"]
        cur, seen = start, set()
        while cur not in seen:
            seen.add(cur)
            st = states[cur]
            key = stop_key("t", scope, cur)
            if st["Type"] == "Task" and key in self.hosts:
                self.entries[scope] = (self.hosts[key], start)
                return self.entries[scope]
            if st["Type"] == "Pass" and "Next" in st:
                cur = st["Next"]
                continue
            break
        base = "Start" if scope == "" else scope.rsplit("/", 1)[-1].replace("#", "_B") + "_Start"
        fn = self.new_fn(base, scope, entry_state=start)
        self.entries[scope] = (fn.name, start)
        return self.entries[scope]

    def join_of(self, scope: str, name: str, st: dict[str, Any]) -> str:
        key = stop_key("m" if st["Type"] == "Map" else "p", scope, name)
        if key in self.joins:
            return self.joins[key]
        nxt = st.get("Next")
        host = self.hosts.get(stop_key("t", scope, nxt)) if nxt else None
        if host is not None and self.fns[host].join is None:
            self.fns[host].join = name
            self.joins[key] = host
        else:
            self.joins[key] = self.new_fn(f"{name}_Join", scope, join=name).name
        return self.joins[key]

    def explore(self, scope: str, starts: list[str]) -> list[tuple]:
        """Stops reachable from `starts` through non-invoking states (static walk)."""
        states = self.scopes[scope]["States"]
        out: list[tuple] = []
        seen: set[str] = set()
        todo = list(starts)
        while todo:
            n = todo.pop(0)
            if n in seen:
                continue
            seen.add(n)
            st = states[n]
            t = st["Type"]
            if t == "Task" and self.in_place(st):  # walked in place
                todo.extend(self._after(st, out))
                todo.extend(c["Next"] for c in st.get("Catch", []))
                continue
            if t == "Task":
                out.append(("t", n))
                continue
            if t in ("Map", "Parallel"):
                key = stop_key("m" if t == "Map" else "p", scope, n)
                if key not in self.inline:
                    out.append(("m" if t == "Map" else "p", n))
                    # an empty Map finishes in place and continues after it
                    if t == "Map":
                        todo.extend(self._after(st, out))
                    continue
                todo.extend(self._after(st, out))
                todo.extend(c["Next"] for c in st.get("Catch", []))
                continue
            if t == "Wait":
                out.append(("w", n))  # a timer where the platform has them; else waits in place
            if t == "Succeed":
                out.append(("e",))
                continue
            if t == "Fail":
                continue
            if t == "Choice":
                todo.extend(r["Next"] for r in st["Choices"])
                if "Default" in st:
                    todo.append(st["Default"])
                continue
            todo.extend(self._after(st, out))
        return list(dict.fromkeys(out))

    @staticmethod
    def _after(st: dict[str, Any], out: list[tuple]) -> list[str]:
        if st.get("End"):
            out.append(("e",))
            return []
        return [st["Next"]]

    def fn_starts(self, fn: Fn) -> list[str]:
        states = self.scopes[fn.scope]["States"]
        if fn.end:
            return []
        if fn.entry_state is not None:
            return [fn.entry_state]
        starts: list[str] = []
        sts = []
        if fn.task is not None:
            sts.append(states[fn.task])
        if fn.join is not None:
            sts.append(states[fn.join])
        if fn.wait is not None:
            sts.append(states[fn.wait])
        for st in sts:
            if "Next" in st:
                starts.append(st["Next"])
            starts.extend(c["Next"] for c in st.get("Catch", []))
        return starts

    def fn_ends_scope(self, fn: Fn) -> bool:
        states = self.scopes[fn.scope]["States"]
        for s in ([states[fn.task]] if fn.task else []) + ([states[fn.join]] if fn.join else []) + \
                ([states[fn.wait]] if fn.wait else []):
            if s.get("End"):
                return True
        return False

    # ------------------------------------------------------------------ main
    def compile(self) -> Compiled:
        self.collect("", self.d, "")
        for scope in list(self.scopes):
            self.entry_of(scope)
        # joins and stops need a fixpoint: synthesized functions add stops
        done: set[str] = set()
        while True:
            pending = [f for f in self.fns.values() if f.name not in done]
            if not pending:
                break
            for fn in pending:
                done.add(fn.name)
                stops = self.explore(fn.scope, self.fn_starts(fn))
                if self.fn_ends_scope(fn):
                    stops.append(("e",))
                fn.stops = list(dict.fromkeys(stops))
                for s in fn.stops:
                    if s[0] in ("m", "p"):
                        st = self.scopes[fn.scope]["States"][s[1]]
                        self.join_of(fn.scope, s[1], st)
                        sub = [f"{fn.scope}/{s[1]}"] if s[0] == "m" else \
                            [f"{fn.scope}/{s[1]}#{k}" for k in range(len(st["Branches"]))]
                        for sc in sub:
                            self.entry_of(sc)
        # a Map/Parallel with Retry: its join re-runs the fan-out as a new attempt
        for key in sorted(self.retrying):
            if key in self.joins:
                state = self.fan_states[key][1]
                self.fns[self.joins[key]].stops.append(("r", state))
        # uncaught errors in a branch escalate to the join of the nearest enclosing fan-out
        # with a Catch (one Scalar edge per enclosing catching state, popping its levels)
        for fn in self.fns.values():
            scope, level = fn.scope, 0
            while scope:
                parent, _, last = scope.rpartition("/")
                state, _, _ = last.partition("#")
                level += 1
                kind = self.scopes[parent]["States"][state]["Type"]
                key = stop_key("m" if kind == "Map" else "p", parent, state)
                if key in self.catching and key in self.joins:
                    fn.stops.append(("x", parent, state, level))
                scope = parent
        # a Distributed Map tolerating failures: any function of its item processor can end
        # the branch (a failed item ends it with a FAILED marker, runtime.asl.distributed)
        for fn in self.fns.values():
            parent, _, last = fn.scope.rpartition("/")
            if fn.scope and "#" not in last and stop_key("m", parent, last) in self.tolerant \
                    and ("e",) not in fn.stops:
                fn.stops.append(("e",))
        # scope ends: one terminal function per non-top scope
        terminal: dict[str, str] = {}
        for scope in self.scopes:
            if scope == "":
                continue
            enders = [f for f in self.fns.values() if f.scope == scope and ("e",) in f.stops]
            if not enders and not any(f.scope == scope for f in self.fns.values() if f.end):
                # every path fails: the fan-in is never reached; name the entry anyway
                terminal[scope] = self.entries[scope][0]
            elif len(enders) == 1:
                terminal[scope] = enders[0].name
            else:
                end = self.new_fn(scope.rsplit("/", 1)[-1].replace("#", "_B") + "_End", scope, end=True)
                end.stops = [("e",)]
                terminal[scope] = end.name
        self._terminals = terminal
        for fn in list(self.fns.values()):
            self.edges(fn, terminal)
        start_fn = self.entries[""][0]
        self.fns[start_fn].start = True
        text = json.dumps(self.d)
        uses_input = "$$" in text or jsonata.reads_context(text)
        tasks = self.integration_tasks()
        external = self.external_tasks()
        nodes = {}
        for fn in self.fns.values():
            wrapper: dict[str, Any] = {"Kind": "asl", "Definition": self.d, "Machine": self.machine,
                       "Scope": fn.scope, "Task": fn.task, "Join": fn.join, "Wait": fn.wait, "End": fn.end,
                       "Start": fn.start, "Labels": self.labels, "Joins": self.joins,
                       "Inline": sorted(self.inline), "Catching": sorted(self.catching),
                       "Laned": sorted(self.laned), "Tolerant": sorted(self.tolerant),
                       "Terminal": terminal.get(fn.scope) == fn.name,
                       "UsesInput": uses_input}
            if tasks.get(fn.name):
                wrapper["Integrations"] = tasks[fn.name]
            if external:
                wrapper["External"] = external
            node: dict[str, Any] = {"Name": fn.name, "Wrapper": wrapper}
            if fn.start:
                node["Start"] = True
            if fn.edges:
                node["Next"] = fn.edges
            nodes[fn.name] = node
        return Compiled(nodes, {f.name: f.lambda_fn for f in self.fns.values()}, start_fn)

    def integration_tasks(self) -> dict[str, list[list[str]]]:
        """Function name -> the integration Tasks (runtime.asl.integrations; of Lambda, only
        calls of functions outside the app: is_external) it runs, as [scope, state] pairs in
        a stable order: those it walks in place and the callback or `.sync` Task it hosts;
        and a Distributed Map's S3 reads and writes as [scope, Map state, "ItemReader" |
        "ResultWriter"] (the function reaching the Map reads, its join writes).
        The AWS target grants their IAM actions to that function's role (runtime/aws/iam.py
        integration_statements); the wrapper carries them as `Integrations`."""
        out: dict[str, list[list[str]]] = {}
        for (scope, name), runs in sorted(_where(self).items()):
            st = scope_states(self.d, scope).get(name)  # inline branches included
            if st is not None and st.get("Type") == "Map":
                # a Distributed Map reads its items where the fan-out runs and writes its
                # results where the join runs (runtime.asl.distributed)
                for fn, role in runs:
                    for part, kinds in (("ItemReader", ("fan-out in", "in-process in", "in")),
                                        ("ResultWriter", ("join in", "in-process in", "in"))):
                        if isinstance(st.get(part), dict) and role in kinds \
                                and [scope, name, part] not in out.setdefault(fn, []):
                            out[fn].append([scope, name, part])
                continue
            if st is None or st.get("Type") != "Task" or not (
                    integrations.inline(st.get("Resource")) or self.is_external(st)):
                continue
            for fn, role in runs:
                if role == "in" and [scope, name] not in out.setdefault(fn, []):
                    out[fn].append([scope, name])
        return out

    def edges(self, fn: Fn, terminal: dict[str, str]) -> None:
        scope = fn.scope
        states = self.scopes[scope]["States"]
        routes: list[dict[str, Any]] = []
        branches: list[tuple[dict[str, Any], int, int]] = []
        others: list[dict[str, Any]] = []
        lanes: list[dict[str, Any]] = []
        for s in fn.stops:
            if s[0] == "t":
                key = stop_key("t", scope, s[1])
                if key in self.hosts:
                    routes.append({"Name": self.hosts[key], "Type": "Scalar",
                                   "Conditional": f"$route == '{self.label(key)}'"})
                else:
                    for cand in self.candidates:
                        k2 = stop_key("t", scope, s[1], cand)
                        routes.append({"Name": self.hosts[k2], "Type": "Scalar",
                                       "Conditional": f"$route == '{self.label(k2)}'"})
            elif s[0] == "w":
                key = stop_key("w", scope, s[1])
                routes.append({"Name": self.waits[key], "Type": "Scalar", "Delay": "$out['AslDelay']",
                               "Conditional": f"$route == '{self.label(key)}'"})
            elif s[0] in ("m", "p", "r"):
                # a fan-out; "r": the join re-running it for a Retry (a back edge that
                # increments the iteration counter, so the new attempt's names are new)
                kind = "m" if states[s[1]]["Type"] == "Map" else "p"
                key = stop_key(kind, scope, s[1])
                label = self.label(key if s[0] != "r" else "r" + key[1:])
                retry = {"Iterate": True} if s[0] == "r" else {}
                if kind == "m":
                    e = {"Name": self.entries[f"{scope}/{s[1]}"][0], "Type": "Map",
                         "Conditional": f"$route == '{label}'", **retry}
                    if key in self.laned:  # every branch gets the full size (fanout.py)
                        e["Payload Modifiers"] = ["$size=$out['Size']", "$out=$out['Env']"]
                    others.append(e)
                else:
                    n = len(states[s[1]]["Branches"])
                    for k in range(n):
                        e = {"Name": self.entries[f"{scope}/{s[1]}#{k}"][0], "Type": "Scalar",
                             "Conditional": f"$route == '{label}'", **retry}
                        branches.append((e, k, n))
            elif s[0] == "e" and scope != "":
                key = stop_key("e", scope)
                cond = f"$route == '{self.label(key)}'"
                if terminal[scope] == fn.name:
                    others.append(self.fanin_edge(scope, cond))
                    parent, _, last = scope.rpartition("/")
                    if stop_key("m", parent, last) in self.laned:
                        # the lane: this branch's end starts item $0 + MaxConcurrency
                        lanes.append({"Name": self.entries[scope][0], "Type": "Scalar",
                                      "Conditional": f"{cond} and $out['AslNext'] != None"})
                else:
                    routes.append({"Name": terminal[scope], "Type": "Scalar", "Conditional": cond})
        escalations: list[tuple[dict[str, Any], int]] = []
        for s in fn.stops:
            if s[0] == "x":
                _, parent, state, level = s
                kind = self.scopes[parent]["States"][state]["Type"]
                key = stop_key("m" if kind == "Map" else "p", parent, state)
                lab = self.label("x" + key[1:])
                escalations.append(({"Name": self.joins[key], "Type": "Scalar",
                                     "Conditional": f"$route == '{lab}'"}, level))
        n_scalar = len(routes) + len(branches) + len(escalations) + len(lanes)
        out = list(routes)
        for e in lanes:
            e["Payload Modifiers"] = (["Pop"] if n_scalar >= 2 else []) + [
                "$0=$0+$out['AslStride']", "$out=$out['AslNext']"]
            out.append(e)
        if n_scalar >= 2:
            for e in routes:
                e["Payload Modifiers"] = ["Pop"]  # routing edges are not fan-out branches
        for e, level in escalations:  # back to the join's frames
            e["Payload Modifiers"] = ["Pop"] * (level + (1 if n_scalar >= 2 else 0))
            out.append(e)
        for e, k, n in branches:
            if n_scalar == 1:  # a one-branch Parallel alone: a Map edge makes its frame
                e["Type"] = "Map"
            else:
                e["Payload Modifiers"] = [f"$0={k}", f"$size={n}", f"$out=$out[{k}]"]
            out.append(e)
        fn.edges = out + others

    def fanin_edge(self, scope: str, cond: str) -> dict[str, Any]:
        parent, _, last = scope.rpartition("/")
        state = last.partition("#")[0]
        d = self.depth[scope]
        outer = [f"${i}" for i in range(d - 1, 0, -1)]
        st = self.scopes[parent]["States"][state]
        if st["Type"] == "Map":
            term = self._terminal_of(scope)
            values = [f"{term}-UnumIndex-" + ".".join(outer + ["*"])]
            key = stop_key("m", parent, state)
        else:
            values = [f"{self._terminal_of(f'{parent}/{state}#{k}')}-UnumIndex-" + ".".join(outer + [str(k)])
                      for k in range(len(st["Branches"]))]
            key = stop_key("p", parent, state)
        return {"Name": self.joins[key], "Type": "Fan-in", "Values": values,
                "Conditional": cond, "Payload Modifiers": ["Pop"]}

    def _terminal_of(self, scope: str) -> str:
        return self._terminals[scope]


def compile_definition(definition: Any, resolve: Callable[[str], str | None], candidates: list[str],
                       source: str = "statemachine", prefix: str = "",
                       machine: str = "statemachine") -> Compiled:
    """Validate and compile a state machine; raises AslValidationError (an IRError) naming
    the state and field."""
    validate(definition, source)
    return Compiler(definition, resolve, candidates, source, prefix, machine).compile()


def to_workflow(compiled: Compiled, source: str) -> Workflow:
    """Load the compiled nodes through the IR loader (the same checks as hand-written IR)."""
    nodes: list[tuple[FunctionIR, str]] = []
    for name, node in compiled.nodes.items():
        nodes.append((load_function(node, f"{source}#{name}"), f"{source}#{name}"))
    return build_workflow(nodes)


def _branches(st: dict[str, Any]) -> list[Any]:
    if st["Type"] == "Map":
        return [st.get("ItemProcessor") or st.get("Iterator")]
    return list(st["Branches"])


def _where(c: Compiler) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(scope, state) -> [(function, role)]: which compiled function runs each state."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}

    def add(scope: str, name: str, fn: str, role: str = "in") -> None:
        out.setdefault((scope, name), []).append((fn, role))

    def walk(scope: str, starts: list[str], fn: str, everything: bool = False,
             doc: dict[str, Any] | None = None) -> None:
        # an inline fan-out's branches are not compiled scopes: their document is passed in
        states = (doc if doc is not None else c.scopes[scope])["States"]
        seen: set[str] = set()
        todo = list(starts)
        while todo:
            n = todo.pop(0)
            if n in seen or n not in states:
                continue
            seen.add(n)
            st = states[n]
            t = st["Type"]
            nxt = [] if st.get("End") or "Next" not in st else [st["Next"]]
            if t == "Task" and not everything and not c.in_place(st):
                continue  # runs in its own function
            if t in ("Map", "Parallel"):
                key = stop_key("m" if t == "Map" else "p", scope, n)
                if key in c.inline or everything:
                    add(scope, n, fn, "in-process in" if not everything else "in")
                    for k, b in enumerate(_branches(st)):
                        sub = f"{scope}/{n}" if t == "Map" else f"{scope}/{n}#{k}"
                        walk(sub, [b["StartAt"]], fn, everything=True, doc=b)
                    todo += nxt + [cc["Next"] for cc in st.get("Catch", [])]
                else:
                    add(scope, n, fn, "fan-out in")
                    if t == "Map":
                        todo += nxt  # an empty Map finishes in place
                continue
            add(scope, n, fn)
            if t == "Choice":
                todo += [r["Next"] for r in st["Choices"]] + ([st["Default"]] if "Default" in st else [])
            elif t == "Task":
                todo += nxt + [cc["Next"] for cc in st.get("Catch", [])]
            elif t not in ("Succeed", "Fail"):
                todo += nxt

    for f in c.fns.values():
        if f.task is not None:
            add(f.scope, f.task, f.name)
        if f.join is not None:
            add(f.scope, f.join, f.name, "join in")
        if f.wait is not None:
            add(f.scope, f.wait, f.name, "after timer in")
        starts = list(c.fn_starts(f))
        entry = c.entries.get(f.scope)
        if entry is not None and entry[0] == f.name and entry[1] not in starts:
            starts.append(entry[1])
        walk(f.scope, starts, f.name)
    return out
