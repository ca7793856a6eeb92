"""Statelint-style validation of an Amazon States Language definition (JSONPath and JSONata).

Source: ASL spec (https://states-language.net/spec.html) "Structure of a State Machine",
"Common State Fields", "Choice State", "Map State", "Parallel State", "Paths",
"QueryLanguage"; AWS developer guide "Transforming data with JSONata in Step Functions"
(which fields each query language takes) and "Passing data between states with variables"
(`Assign`, variable names). Every error is an AslValidationError whose message is one line
naming the state and the field, e.g.
`statemachine.json: States.Check.Choices[0]: rule has no comparison operator`.
"""

from __future__ import annotations

from typing import Any

import re

from runtime.asl import jsonata, paths
from runtime.asl.choice import OPERATORS
from runtime.asl.errors import AslError
from runtime.asl.machine import LAMBDA_INVOKE
from runtime.errors import IRError

STATE_TYPES = ("Task", "Pass", "Choice", "Wait", "Succeed", "Fail", "Parallel", "Map")
_PATH_FIELDS = ("InputPath", "OutputPath", "ItemsPath", "SecondsPath", "TimestampPath",
                "MaxConcurrencyPath", "ErrorPath", "CausePath", "ToleratedFailureCountPath",
                "ToleratedFailurePercentagePath")
QUERY_LANGUAGES = ("JSONPath", "JSONata")
# fields only a JSONPath state may have (AWS: "not supported in JSONata states")
JSONPATH_ONLY = ("InputPath", "Parameters", "ResultSelector", "ResultPath", "OutputPath",
                 "ItemsPath", "SecondsPath", "TimestampPath", "MaxConcurrencyPath",
                 "ToleratedFailureCountPath", "ToleratedFailurePercentagePath", "ErrorPath",
                 "CausePath", "TimeoutSecondsPath", "HeartbeatSecondsPath")
# fields only a JSONata state may have
JSONATA_ONLY = ("Arguments", "Output", "Items")
# fields whose value may be a {% %} expression in a JSONata state (besides the templates)
_JSONATA_SCALARS = ("Seconds", "Timestamp", "Error", "Cause", "TimeoutSeconds", "HeartbeatSeconds",
                    "MaxConcurrency", "ToleratedFailureCount", "ToleratedFailurePercentage")
_JSONATA_TEMPLATES = ("Arguments", "Output", "Items", "ItemSelector")
_ASSIGN_TYPES = ("Task", "Pass", "Choice", "Wait", "Parallel", "Map")
_VARIABLE_NAME = re.compile(r"^[^\W\d]\w*$")
RESERVED_VARIABLES = ("states",)


class AslValidationError(IRError):
    """An invalid state machine; the message names the file, the state and the field."""


class _V:
    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, msg: str) -> None:
        raise AslValidationError(f"{self.source}: {where}: {msg}")

    def path(self, where: str, value: Any, reference: bool = False, nullable: bool = True) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, str) or not paths.is_path(value):
            self.fail(where, f"{value!r} is not a JSONPath (it must start with '$')")
        if reference and value.startswith("$$"):
            self.fail(where, f"{value!r}: a ResultPath cannot write into the context object")
        if reference and paths.is_variable(value):
            self.fail(where, f"{value!r}: a ResultPath cannot write into a variable (use Assign)")
        try:
            paths.validate_path(value)
        except AslError as exc:
            self.fail(where, str(exc.cause))

    def template(self, where: str, tmpl: Any) -> None:
        if isinstance(tmpl, dict):
            for k, v in tmpl.items():
                if k.endswith(".$"):
                    if not isinstance(v, str):
                        self.fail(f"{where}.{k}", "a '.$' field needs a path or intrinsic function string")
                    if paths.is_path(v):
                        self.path(f"{where}.{k}", v)
                    elif not v.startswith("States."):
                        self.fail(f"{where}.{k}", f"{v!r} is neither a JSONPath nor an intrinsic function")
                else:
                    self.template(f"{where}.{k}", v)
        elif isinstance(tmpl, list):
            for i, v in enumerate(tmpl):
                self.template(f"{where}[{i}]", v)

    def machine(self, doc: Any, prefix: str = "", top: bool = True) -> None:
        if not isinstance(doc, dict):
            self.fail(prefix or "(top)", "a state machine must be a JSON object with StartAt and States")
        if top:
            ql = doc.get("QueryLanguage", "JSONPath")
            if ql not in QUERY_LANGUAGES:
                self.fail("QueryLanguage", f"{ql!r} is not one of JSONPath, JSONata")
            self.top_ql = ql
        states = doc.get("States")
        if not isinstance(states, dict) or not states:
            self.fail(f"{prefix}States", "must be a non-empty object of states")
        start = doc.get("StartAt")
        if not isinstance(start, str):
            self.fail(f"{prefix}StartAt", "is required and must name a state")
        if start not in states:
            self.fail(f"{prefix}StartAt", f"{start!r} is not a state (states: {', '.join(states)})")
        for name, st in states.items():
            self.state(f"{prefix}States.{name}", name, st, states)
        # reachability
        seen, todo = set(), [start]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            todo.extend(successors(states[n]))
        for name in states:
            if name not in seen:
                self.fail(f"{prefix}States.{name}", f"state is unreachable from StartAt {start!r}")

    def state(self, where: str, name: str, st: Any, states: dict[str, Any]) -> None:
        if not isinstance(st, dict):
            self.fail(where, "a state must be a JSON object")
        t = st.get("Type")
        if t not in STATE_TYPES:
            self.fail(f"{where}.Type", f"{t!r} is not one of {', '.join(STATE_TYPES)}")
        ja = self.query_language(where, t, st)
        if len(name) > 80:
            self.fail(where, "state names are at most 80 characters")
        terminal = t in ("Choice", "Succeed", "Fail")
        if not terminal:
            has_next, has_end = "Next" in st, st.get("End") is True
            if has_next == has_end:
                self.fail(f"{where}.Next", "exactly one of Next or \"End\": true is required"
                          if not has_next else "Next and End cannot both be given")
        elif "Next" in st or "End" in st:
            self.fail(f"{where}.Next", f"a {t} state cannot have Next or End")
        if "Next" in st and st["Next"] not in states:
            self.fail(f"{where}.Next", f"{st['Next']!r} is not a state in this scope")
        for f in _PATH_FIELDS:
            if f in ("ErrorPath", "CausePath") and isinstance(st.get(f), str) and st[f].startswith("States."):
                continue  # an intrinsic function
            if f in st:
                self.path(f"{where}.{f}", st[f], nullable=f in ("InputPath", "OutputPath"))
        if "ResultPath" in st and ja:
            pass  # reported by query_language
        elif "ResultPath" in st:
            self.path(f"{where}.ResultPath", st["ResultPath"], reference=True)
        for f in ("Parameters", "ResultSelector", "ItemSelector"):
            if f in st and not ja:
                self.template(f"{where}.{f}", st[f])
        if t == "Task":
            res = st.get("Resource")
            if not isinstance(res, str) or not res:
                self.fail(f"{where}.Resource", "a Task needs a Resource (a Lambda ARN, a function "
                          "name or arn:aws:states:::lambda:invoke)")
            if res.startswith(LAMBDA_INVOKE) and ja:
                args = st.get("Arguments")
                if not jsonata.is_expr(args) and (not isinstance(args, dict) or "FunctionName" not in args):
                    self.fail(f"{where}.Arguments.FunctionName", "lambda:invoke needs "
                              "Arguments.FunctionName (a function name or ARN, or a {% %} expression)")
            elif res.startswith(LAMBDA_INVOKE):
                params = st.get("Parameters")
                if not isinstance(params, dict) or not ("FunctionName" in params or "FunctionName.$" in params):
                    self.fail(f"{where}.Parameters.FunctionName", "lambda:invoke needs "
                              "Parameters.FunctionName (or FunctionName.$)")
            elif res.startswith("arn:") and not res.startswith("arn:aws:lambda:"):
                self.fail(f"{where}.Resource", f"{res!r}: only Lambda tasks are supported")
        if t in ("Task", "Parallel", "Map"):
            for i, r in enumerate(st.get("Retry", []) or []):
                if not isinstance(r, dict) or not isinstance(r.get("ErrorEquals"), list) or not r["ErrorEquals"]:
                    self.fail(f"{where}.Retry[{i}].ErrorEquals", "must be a non-empty list of error names")
            for i, c in enumerate(st.get("Catch", []) or []):
                if not isinstance(c, dict) or not isinstance(c.get("ErrorEquals"), list) or not c["ErrorEquals"]:
                    self.fail(f"{where}.Catch[{i}].ErrorEquals", "must be a non-empty list of error names")
                if c.get("Next") not in states:
                    self.fail(f"{where}.Catch[{i}].Next", f"{c.get('Next')!r} is not a state in this scope")
                if "ResultPath" in c:
                    if ja:
                        self.fail(f"{where}.Catch[{i}].ResultPath", "ResultPath is a JSONPath field; "
                                  "a JSONata catcher uses Output")
                    self.path(f"{where}.Catch[{i}].ResultPath", c["ResultPath"], reference=True)
                if "Output" in c and not ja:
                    self.fail(f"{where}.Catch[{i}].Output", "Output is a JSONata field; a JSONPath "
                              "catcher uses ResultPath (or set \"QueryLanguage\": \"JSONata\")")
                self.assign(f"{where}.Catch[{i}]", c, ja)
        elif "Retry" in st or "Catch" in st:
            self.fail(f"{where}.{'Retry' if 'Retry' in st else 'Catch'}", f"a {t} state cannot retry or catch")
        if t == "Choice":
            rules = st.get("Choices")
            if not isinstance(rules, list) or not rules:
                self.fail(f"{where}.Choices", "a Choice state needs a non-empty list of rules")
            for i, rule in enumerate(rules):
                if ja:
                    self.condition(f"{where}.Choices[{i}]", rule, states)
                else:
                    self.rule(f"{where}.Choices[{i}]", rule, top=True, states=states)
                    if isinstance(rule, dict):
                        self.assign(f"{where}.Choices[{i}]", rule, False)
            if "Default" in st and st["Default"] not in states:
                self.fail(f"{where}.Default", f"{st['Default']!r} is not a state in this scope")
        if t == "Wait":
            n = sum(1 for f in ("Seconds", "SecondsPath", "Timestamp", "TimestampPath") if f in st)
            if n != 1:
                self.fail(f"{where}.Seconds", "a Wait needs exactly one of Seconds, SecondsPath, "
                          "Timestamp, TimestampPath")
        if t == "Parallel":
            branches = st.get("Branches")
            if not isinstance(branches, list) or not branches:
                self.fail(f"{where}.Branches", "a Parallel state needs a non-empty list of branches")
            for k, b in enumerate(branches):
                self.machine(b, f"{where}.Branches[{k}].", top=False)
        if t == "Map":
            proc_key = "ItemProcessor" if "ItemProcessor" in st else "Iterator"
            proc = st.get(proc_key)
            if proc is None:
                self.fail(f"{where}.ItemProcessor", "a Map state needs ItemProcessor (or Iterator)")
            mode = (proc.get("ProcessorConfig") or {}).get("Mode", "INLINE") if isinstance(proc, dict) else "INLINE"
            if mode != "INLINE":
                self.fail(f"{where}.{proc_key}.ProcessorConfig.Mode", f"{mode!r}: only INLINE Map is supported")
            self.machine(proc, f"{where}.{proc_key}.", top=False)

    # ------------------------------------------------------------------ JSONata, variables
    def query_language(self, where: str, t: str, st: dict[str, Any]) -> bool:
        """Check the state's QueryLanguage and the fields it allows; parse its `{% %}`
        expressions and check its Assign. Returns True for a JSONata state."""
        ql = st.get("QueryLanguage", getattr(self, "top_ql", "JSONPath"))
        if ql not in QUERY_LANGUAGES:
            self.fail(f"{where}.QueryLanguage", f"{ql!r} is not one of JSONPath, JSONata")
        if ql == "JSONPath" and getattr(self, "top_ql", "JSONPath") == "JSONata":
            self.fail(f"{where}.QueryLanguage", "a state cannot use JSONPath when the state machine's "
                      "QueryLanguage is JSONata (set JSONPath at the top and JSONata per state instead)")
        ja = ql == "JSONata"
        for f, types in (("Arguments", ("Task", "Parallel")), ("Items", ("Map",)),
                         ("Output", tuple(x for x in STATE_TYPES if x != "Fail"))):
            if f in st and t not in types:
                self.fail(f"{where}.{f}", f"a {t} state cannot have {f} (only {', '.join(types)})")
        if ja:
            for f in JSONPATH_ONLY:
                if f in st:
                    self.fail(f"{where}.{f}", f"{f} is a JSONPath field, not allowed in a JSONata "
                              f"state (use {'Items' if f == 'ItemsPath' else 'Arguments' if f == 'Parameters' else 'Output'}"
                              " with {% %} expressions)")
            for f in _JSONATA_TEMPLATES + _JSONATA_SCALARS:
                if f in st:
                    self.expressions(f"{where}.{f}", st[f])
            for f in ("Seconds", "TimeoutSeconds", "HeartbeatSeconds", "MaxConcurrency",
                      "ToleratedFailureCount", "ToleratedFailurePercentage"):
                v = st.get(f)
                if f in st and not jsonata.is_expr(v) and (
                        not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0):
                    self.fail(f"{where}.{f}", f"must be a non-negative number or a {{% %}} expression, got {v!r}")
            if "Items" in st and not isinstance(st["Items"], list) and not jsonata.is_expr(st["Items"]):
                self.fail(f"{where}.Items", "must be an array or a {% %} expression giving one")
            if "Timestamp" in st and not isinstance(st["Timestamp"], str):
                self.fail(f"{where}.Timestamp", "must be a timestamp string or a {% %} expression")
        else:
            for f in JSONATA_ONLY:
                if f in st:
                    self.fail(f"{where}.{f}", f"{f} is a JSONata field, not allowed in a JSONPath "
                              "state (set \"QueryLanguage\": \"JSONata\" on the state or the machine)")
        if "Assign" in st:
            if t not in _ASSIGN_TYPES:
                self.fail(f"{where}.Assign", f"a {t} state cannot assign variables")
            self.assign(where, st, ja)
        return ja

    def expressions(self, where: str, value: Any) -> None:
        """Parse every `{% %}` string inside `value` (JSONata state fields)."""
        if isinstance(value, dict):
            for k, v in value.items():
                self.expressions(f"{where}.{k}", v)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.expressions(f"{where}[{i}]", v)
        elif isinstance(value, str) and value.lstrip().startswith("{%") and not jsonata.is_expr(value):
            if value.rstrip().endswith("%}"):
                return  # surrounded by spaces: a literal string on AWS
            self.fail(where, f"{value!r}: a JSONata expression must end with '%}}'")
        elif jsonata.is_expr(value):
            if not jsonata.body(value):
                self.fail(where, "empty JSONata expression '{% %}'")
            err = jsonata.check(value)
            if err is not None:
                self.fail(where, f"invalid JSONata expression {jsonata.body(value)!r}: {err}")

    def assign(self, where: str, holder: dict[str, Any], ja: bool) -> None:
        """`Assign` of a state, Choice rule or catcher: an object whose keys are variable
        names (JSONPath: `name.$` for a path or intrinsic value); `states` is reserved."""
        if "Assign" not in holder:
            return
        spec = holder["Assign"]
        if not isinstance(spec, dict):
            self.fail(f"{where}.Assign", "must be an object of variable names to values")
        seen: set[str] = set()
        for key, v in spec.items():
            name = key[:-2] if key.endswith(".$") else key
            if key.endswith(".$") and ja:
                self.fail(f"{where}.Assign.{key}", "'.$' keys are JSONPath; in a JSONata state write "
                          f"\"{name}\": \"{{% ... %}}\"")
            if not _VARIABLE_NAME.match(name):
                self.fail(f"{where}.Assign.{key}", f"{name!r} is not a valid variable name (letters, "
                          "digits and '_', not starting with a digit)")
            if name in RESERVED_VARIABLES:
                self.fail(f"{where}.Assign.{key}", f"${name} is reserved by Step Functions; choose "
                          "another variable name")
            if name in seen:
                self.fail(f"{where}.Assign.{key}", f"variable {name!r} is assigned twice")
            seen.add(name)
            if ja:
                self.expressions(f"{where}.Assign.{key}", v)
            elif key.endswith(".$"):
                self.template(f"{where}.Assign", {key: v})
            else:
                self.template(f"{where}.Assign.{key}", v)

    def condition(self, where: str, rule: Any, states: dict[str, Any]) -> None:
        """A JSONata Choice rule: {"Condition": bool or {% %}, "Next", "Assign"?, "Output"?}."""
        if not isinstance(rule, dict):
            self.fail(where, "a Choice rule must be an object")
        if rule.get("Next") not in states:
            self.fail(f"{where}.Next", f"{rule.get('Next')!r} is not a state in this scope")
        bad = [k for k in rule if k in OPERATORS or k in ("Variable", "And", "Or", "Not")]
        if bad:
            self.fail(f"{where}.{bad[0]}", f"{bad[0]} is a JSONPath Choice field; a JSONata rule uses "
                      "\"Condition\": \"{% ... %}\"")
        if "Condition" not in rule:
            self.fail(f"{where}.Condition", "a JSONata Choice rule needs a Condition")
        cond = rule["Condition"]
        if not isinstance(cond, bool) and not jsonata.is_expr(cond):
            self.fail(f"{where}.Condition", f"must be true, false or a {{% %}} expression, got {cond!r}")
        self.expressions(f"{where}.Condition", cond)
        if "Output" in rule:
            self.expressions(f"{where}.Output", rule["Output"])
        self.assign(where, rule, True)

    def rule(self, where: str, rule: Any, top: bool, states: dict[str, Any]) -> None:
        if not isinstance(rule, dict):
            self.fail(where, "a Choice rule must be an object")
        if top:
            if rule.get("Next") not in states:
                self.fail(f"{where}.Next", f"{rule.get('Next')!r} is not a state in this scope")
        elif "Next" in rule:
            self.fail(f"{where}.Next", "only top-level Choice rules have Next")
        for f in ("Condition", "Output"):
            if f in rule:
                self.fail(f"{where}.{f}", f"{f} is a JSONata field, not allowed in a JSONPath Choice "
                          "rule (set \"QueryLanguage\": \"JSONata\")")
        if "Assign" in rule and not top:
            self.fail(f"{where}.Assign", "only top-level Choice rules can assign variables")
        for op in ("And", "Or"):
            if op in rule:
                if not isinstance(rule[op], list) or not rule[op]:
                    self.fail(f"{where}.{op}", "must be a non-empty list of rules")
                for i, r in enumerate(rule[op]):
                    self.rule(f"{where}.{op}[{i}]", r, False, states)
                return
        if "Not" in rule:
            self.rule(f"{where}.Not", rule["Not"], False, states)
            return
        ops = [k for k in rule if k in OPERATORS]
        if not ops:
            self.fail(where, "rule has no comparison operator (e.g. StringEquals) and no And/Or/Not")
        if len(ops) > 1:
            self.fail(where, f"rule has several comparison operators {ops}")
        if "Variable" not in rule:
            self.fail(f"{where}.Variable", "a comparison needs a Variable path")
        self.path(f"{where}.Variable", rule["Variable"], nullable=False)
        op, val = ops[0], rule[ops[0]]
        if op.endswith("Path"):
            self.path(f"{where}.{op}", val, nullable=False)
        elif op.startswith("Is"):
            if not isinstance(val, bool):
                self.fail(f"{where}.{op}", f"must be true or false, got {val!r}")
        elif op.startswith("Numeric"):
            if not isinstance(val, (int, float)) or isinstance(val, bool):
                self.fail(f"{where}.{op}", f"must be a number, got {val!r}")
        elif op.startswith("Boolean"):
            if not isinstance(val, bool):
                self.fail(f"{where}.{op}", f"must be true or false, got {val!r}")
        elif not isinstance(val, str):
            self.fail(f"{where}.{op}", f"must be a string, got {val!r}")


def successors(st: dict[str, Any]) -> list[str]:
    """States a state can transition to within its scope (Next, Choice targets, Catch)."""
    out = []
    if "Next" in st:
        out.append(st["Next"])
    for r in st.get("Choices", []) or []:
        if isinstance(r, dict) and "Next" in r:
            out.append(r["Next"])
    if "Default" in st:
        out.append(st["Default"])
    for c in st.get("Catch", []) or []:
        if isinstance(c, dict) and "Next" in c:
            out.append(c["Next"])
    return out


def validate(definition: Any, source: str = "statemachine") -> None:
    """Raise AslValidationError (one line naming state and field) for an invalid machine."""
    _V(source).machine(definition)
