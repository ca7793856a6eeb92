"""Statelint-style validation of an Amazon States Language definition (JSONPath and JSONata).

Source: ASL spec (https://states-language.net/spec.html) "Structure of a State Machine",
"Common State Fields", "Choice State", "Map State", "Parallel State", "Paths",
"QueryLanguage"; AWS developer guide "Transforming data with JSONata in Step Functions"
(which fields each query language takes) and "Passing data between states with variables"
(`Assign`, variable names); statelint's rules (fields per state type, types of every
field). Every error is an
AslValidationError whose message is one line naming the state and the field, e.g.
`statemachine.json: States.Check.Choices[0]: rule has no comparison operator`; no input,
however malformed, raises another exception (tests/unumctl/asl/test_validate_fuzz.py).
"""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from runtime.asl import distributed, intrinsics, jsonata, paths
from runtime.asl.integrations import registry as integrations
from runtime.asl.choice import OPERATORS, parse_timestamp
from runtime.asl.errors import AslError
from runtime.asl.machine import LAMBDA_INVOKE
from runtime.asl.wrapper import parse_function_name
from runtime.errors import IRError

from . import fields

__all__ = ["AslValidationError", "validate"]

STATE_TYPES = ("Task", "Pass", "Choice", "Wait", "Succeed", "Fail", "Parallel", "Map")
_PATH_FIELDS = ("InputPath", "OutputPath", "ItemsPath", "SecondsPath", "TimestampPath",
                "MaxConcurrencyPath", "ErrorPath", "CausePath", "ToleratedFailureCountPath",
                "ToleratedFailurePercentagePath")
MAX_NESTING = 32        # Map/Parallel inside Map/Parallel
MAX_RULE_DEPTH = 64     # And/Or/Not inside one Choice rule
MAX_TEMPLATE_DEPTH = 128  # objects/arrays inside a payload template
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
        self.language = "JSONPath"  # the machine's QueryLanguage (states may override it)
        self.map_labels: set[str] = set()  # Distributed Map Labels seen (unique per machine)

    def fail(self, where: str, msg: str) -> NoReturn:
        text = f"{self.source}: {where}: {msg}"
        raise AslValidationError(" ".join(text.split()) if "\n" in text or "\r" in text else text)

    def known_fields(self, where: str, obj: dict, allowed: frozenset[str], what: str) -> None:
        """statelint: every field must belong to the object's kind."""
        bad = fields.unknown(obj, allowed)
        if bad:
            self.fail(bad[0] if where == "(top)" else f"{where}.{bad[0]}", f"is not a field of {what} "
                      f"(remove it; allowed: {', '.join(sorted(allowed))})")

    def target(self, where: str, value: Any, states: dict[str, Any]) -> None:
        """A transition (Next, Default, a rule's or catcher's Next) names a state of the scope."""
        if not isinstance(value, str):
            self.fail(where, f"must be the name of a state (a string), got {_show(value)}")
        if value not in states:
            self.fail(where, f"{value!r} is not a state in this scope")

    def integer(self, where: str, value: Any, minimum: int, ja: bool = False) -> None:
        if ja and _expression(value):
            return
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            self.fail(where, f"must be an integer >= {minimum}, got {_show(value)}")

    def string(self, where: str, value: Any) -> None:
        if not isinstance(value, str):
            self.fail(where, f"must be a string, got {_show(value)}")

    def path(self, where: str, value: Any, reference: bool = False, nullable: bool = True) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, str) or not paths.is_path(value):
            self.fail(where, f"{_show(value)} is not a JSONPath (it must start with '$')")
        if reference and value.startswith("$$"):
            self.fail(where, f"{_show(value)}: a ResultPath cannot write into the context object")
        if reference and paths.is_variable(value):
            self.fail(where, f"{_show(value)}: a ResultPath cannot write into a variable (use Assign)")
        try:
            paths.validate_path(value)
        except AslError as exc:
            self.fail(where, str(exc.cause))

    def function_name(self, where: str, value: str) -> None:
        """A Lambda FunctionName or function ARN, qualified or not (wrapper.parse_function_name;
        Lambda API Reference, Invoke, "FunctionName")."""
        if parse_function_name(value) is None:
            self.fail(where, f"{_show(value)} is not a Lambda function name or ARN (NAME, NAME:QUALIFIER "
                      "such as MyFn:$LATEST, MyFn:prod or MyFn:3, 123456789012:function:NAME[:QUALIFIER] "
                      "or arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER])")

    def template(self, where: str, tmpl: Any) -> None:
        """A payload template (Parameters, ResultSelector, ItemSelector): `.$` values are
        paths or intrinsic calls that parse; walked iteratively, at most MAX_TEMPLATE_DEPTH
        levels deep."""
        todo = [(where, tmpl, 1)]
        while todo:
            at, node, depth = todo.pop()
            if depth > MAX_TEMPLATE_DEPTH and isinstance(node, (dict, list)):
                self.fail(at, f"the template nests more than {MAX_TEMPLATE_DEPTH} levels")
            if isinstance(node, dict):
                for k, v in node.items():
                    if not isinstance(k, str):
                        self.fail(at, f"field names must be strings, got {_show(k)}")
                    if k.endswith(".$"):
                        if not isinstance(v, str):
                            self.fail(f"{at}.{k}", "a '.$' field needs a path or intrinsic function string")
                        if paths.is_path(v):
                            self.path(f"{at}.{k}", v)
                        elif not v.startswith("States."):
                            self.fail(f"{at}.{k}", f"{_show(v)} is neither a JSONPath nor an intrinsic function")
                        else:
                            self.intrinsic(f"{at}.{k}", v)
                    else:
                        todo.append((f"{at}.{k}", v, depth + 1))
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    todo.append((f"{at}[{i}]", v, depth + 1))

    def intrinsic(self, where: str, text: str) -> None:
        try:
            intrinsics.check(text)
        except AslError as exc:
            self.fail(where, str(exc.cause))

    def machine(self, doc: Any, prefix: str = "", allowed: frozenset[str] = fields.MACHINE_FIELDS,
                depth: int = 0) -> None:
        if not isinstance(doc, dict):
            self.fail(prefix.rstrip(".") or "(top)", "a state machine must be a JSON object with StartAt and States")
        if depth > MAX_NESTING:
            self.fail(prefix.rstrip("."), f"Map/Parallel states nest more than {MAX_NESTING} levels")
        self.known_fields(prefix.rstrip(".") or "(top)", doc, allowed,
                          "a state machine" if not prefix else "a branch / item processor")
        if "Comment" in doc:
            self.string(f"{prefix}Comment", doc["Comment"])
        if not prefix:
            ql = doc.get("QueryLanguage", "JSONPath")
            if ql not in QUERY_LANGUAGES:
                self.fail("QueryLanguage", f"{_show(ql)} is not one of JSONPath, JSONata")
            self.language = ql
        states = doc.get("States")
        if not isinstance(states, dict) or not states:
            self.fail(f"{prefix}States", "must be a non-empty object of states")
        for name in states:
            if not isinstance(name, str) or not name:
                self.fail(f"{prefix}States", f"state names must be non-empty strings, got {_show(name)}")
        start = doc.get("StartAt")
        if not isinstance(start, str):
            self.fail(f"{prefix}StartAt", "is required and must name a state")
        if start not in states:
            names = list(states)
            shown = ", ".join(names[:10]) + (f", ... ({len(names)} states)" if len(names) > 10 else "")
            self.fail(f"{prefix}StartAt", f"{start!r} is not a state (states: {shown})")
        for name, st in states.items():
            self.state(f"{prefix}States.{name}", name, st, states, depth)
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

    def state(self, where: str, name: str, st: Any, states: dict[str, Any], depth: int = 0) -> None:
        if not isinstance(st, dict):
            self.fail(where, f"a state must be a JSON object, got {_show(st)}")
        t = st.get("Type")
        if not isinstance(t, str) or t not in STATE_TYPES:
            self.fail(f"{where}.Type", f"{_show(t)} is not one of {', '.join(STATE_TYPES)}")
        if len(name) > 80:
            self.fail(where, "state names are at most 80 characters")
        if t in ("Map", "Parallel"):
            # Step Functions takes any string unique in the machine as a state name (developer
            # guide, "Discovering workflow states"; 1-80 characters: API Reference,
            # StateEnteredEventDetails), but unumctl names a Map/Parallel scope by the path
            # "/<Map>" / "/<Parallel>#<branch>"
            # (runtime.asl.machine.scope_states): a `#` or `/` in the name would be misread.
            for ch in "#/":
                if ch in name:
                    fixed = name.replace("#", "_").replace("/", "_")
                    self.fail(where, f"a {t} state's name cannot contain {ch!r} (unumctl uses '#' and"
                              f" '/' to name its branches); rename the state, e.g. to {fixed!r}")
        self.known_fields(where, st, fields.STATE_FIELDS[t], f"a {t} state")
        ja = self.query_language(where, t, st)
        if "Comment" in st:
            self.string(f"{where}.Comment", st["Comment"])
        terminal = t in ("Choice", "Succeed", "Fail")
        if not terminal:
            if "End" in st and not isinstance(st["End"], bool):
                self.fail(f"{where}.End", f"must be true or false, got {_show(st['End'])}")
            has_next, has_end = "Next" in st, st.get("End") is True
            if has_next == has_end:
                self.fail(f"{where}.Next", "exactly one of Next or \"End\": true is required"
                          if not has_next else "Next and End cannot both be given")
        if "Next" in st:
            self.target(f"{where}.Next", st["Next"], states)
        for f in _PATH_FIELDS:
            if f in ("ErrorPath", "CausePath") and isinstance(st.get(f), str) and st[f].startswith("States."):
                self.intrinsic(f"{where}.{f}", st[f])
                continue
            if f in st:
                self.path(f"{where}.{f}", st[f], nullable=f in ("InputPath", "OutputPath"))
        if "ResultPath" in st and not ja:  # in a JSONata state: reported by query_language
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
                fn = args.get("FunctionName") if isinstance(args, dict) else None
                if isinstance(fn, str) and not jsonata.is_expr(fn):
                    self.function_name(f"{where}.Arguments.FunctionName", fn)
            elif res.startswith(LAMBDA_INVOKE):
                params = st.get("Parameters")
                if not isinstance(params, dict) or not ("FunctionName" in params or "FunctionName.$" in params):
                    self.fail(f"{where}.Parameters.FunctionName", "lambda:invoke needs "
                              "Parameters.FunctionName (or FunctionName.$)")
                if "FunctionName" in params:
                    self.string(f"{where}.Parameters.FunctionName", params["FunctionName"])
                    if not params["FunctionName"]:
                        self.fail(f"{where}.Parameters.FunctionName", "must not be empty")
                    self.function_name(f"{where}.Parameters.FunctionName", params["FunctionName"])
            elif res.startswith("arn:aws:lambda:"):
                self.function_name(f"{where}.Resource", res)
            else:
                self.integration(where, res, st, ja)
        if t in ("Task", "Parallel", "Map"):
            self.retriers(where, st.get("Retry", []))
            self.catchers(where, st.get("Catch", []), states, ja)
        if t == "Choice":
            rules = st.get("Choices")
            if not isinstance(rules, list) or not rules:
                self.fail(f"{where}.Choices", "a Choice state needs a non-empty list of rules")
            for i, rule in enumerate(rules):
                if ja:
                    self.condition(f"{where}.Choices[{i}]", rule, states)
                else:
                    self.rule(f"{where}.Choices[{i}]", rule, top=True, states=states)
                    self.assign(f"{where}.Choices[{i}]", rule, False)
            if "Default" in st:
                self.target(f"{where}.Default", st["Default"], states)
        if t == "Wait":
            n = sum(1 for f in ("Seconds", "SecondsPath", "Timestamp", "TimestampPath") if f in st)
            if n != 1:
                self.fail(f"{where}.Seconds", "a Wait needs exactly one of Seconds, SecondsPath, "
                          "Timestamp, TimestampPath")
            if "Seconds" in st:
                self.integer(f"{where}.Seconds", st["Seconds"], 0, ja)
            if "Timestamp" in st and not (ja and _expression(st["Timestamp"])) and parse_timestamp(st["Timestamp"]) is None:
                self.fail(f"{where}.Timestamp", f"{_show(st['Timestamp'])} is not an RFC 3339 "
                          "timestamp such as '2026-01-01T00:00:00Z'")
        if t == "Fail":
            for f in ("Error", "Cause"):
                if f in st:
                    self.string(f"{where}.{f}", st[f])
                    if f + "Path" in st:
                        self.fail(f"{where}.{f}Path", f"give {f} or {f}Path, not both")
        if t == "Parallel":
            branches = st.get("Branches")
            if not isinstance(branches, list) or not branches:
                self.fail(f"{where}.Branches", "a Parallel state needs a non-empty list of branches")
            for k, b in enumerate(branches):
                self.machine(b, f"{where}.Branches[{k}].", fields.BRANCH_FIELDS, depth + 1)
        if t == "Map":
            if "ItemProcessor" in st and "Iterator" in st:
                self.fail(f"{where}.Iterator", "give ItemProcessor or the legacy Iterator, not both")
            proc_key = "ItemProcessor" if "ItemProcessor" in st else "Iterator"
            proc = st.get(proc_key)
            if proc is None:
                self.fail(f"{where}.ItemProcessor", "a Map state needs ItemProcessor (or Iterator)")
            if not isinstance(proc, dict):
                self.fail(f"{where}.{proc_key}", f"must be an object with StartAt and States, got {_show(proc)}")
            config = proc.get("ProcessorConfig", {})
            if not isinstance(config, dict):
                self.fail(f"{where}.{proc_key}.ProcessorConfig", f"must be an object, got {_show(config)}")
            mode = config.get("Mode", "INLINE")
            if mode not in ("INLINE", distributed.MODE):
                self.fail(f"{where}.{proc_key}.ProcessorConfig.Mode", f"{_show(mode)} is not INLINE or DISTRIBUTED")
            if mode == distributed.MODE:
                if proc_key != "ItemProcessor":
                    self.fail(f"{where}.Iterator", "a DISTRIBUTED Map needs ItemProcessor (not the legacy Iterator)")
                self.distributed_map(where, st, config, ja)
            else:
                for f in ("ItemReader", "ItemBatcher", "ResultWriter", "Label"):
                    if f in st:
                        self.fail(f"{where}.{f}", f"{f} needs a Distributed Map (set "
                                  f"{proc_key}.ProcessorConfig.Mode to DISTRIBUTED)")
            if "MaxConcurrency" in st:
                self.integer(f"{where}.MaxConcurrency", st["MaxConcurrency"], 0, ja)
            for f in ("ToleratedFailureCount", "ToleratedFailurePercentage"):
                if f in st and not (ja and _expression(st[f])) and (not isinstance(st[f], (int, float)) or isinstance(st[f], bool) or st[f] < 0):
                    self.fail(f"{where}.{f}", f"must be a non-negative number, got {_show(st[f])}")
            self.machine(proc, f"{where}.{proc_key}.", fields.PROCESSOR_FIELDS, depth + 1)

    # ------------------------------------------------------------------ Distributed Map
    def distributed_map(self, where: str, st: dict[str, Any], config: dict[str, Any], ja: bool) -> None:
        """A DISTRIBUTED Map's fields, as the developer guide's pages "ItemReader (Map)",
        "ItemBatcher (Map)", "ResultWriter (Map)" and "Using Map state in Distributed mode"
        define them (runtime.asl.distributed)."""
        et = config.get("ExecutionType", "STANDARD")
        if et not in ("STANDARD", "EXPRESS"):
            self.fail(f"{where}.ItemProcessor.ProcessorConfig.ExecutionType", f"{_show(et)} is not STANDARD or EXPRESS")
        unknown = set(config) - {"Mode", "ExecutionType"}
        if unknown:
            self.fail(f"{where}.ItemProcessor.ProcessorConfig.{sorted(unknown)[0]}",
                      "is not a field of ProcessorConfig (allowed: ExecutionType, Mode)")
        if "Label" in st:
            why = distributed.label_error(st["Label"])
            if why:
                self.fail(f"{where}.Label", why)
            if st["Label"] in self.map_labels:
                self.fail(f"{where}.Label", f"{st['Label']!r} labels another Map state (a label is "
                          "unique within the state machine)")
            self.map_labels.add(st["Label"])
        params = "Arguments" if ja else "Parameters"
        if "ItemReader" in st:
            r = st["ItemReader"]
            at = f"{where}.ItemReader"
            if not isinstance(r, dict):
                self.fail(at, f"must be an object with Resource and {params}, got {_show(r)}")
            self.known_fields(at, r, frozenset({"Resource", params, "ReaderConfig"}), "an ItemReader")
            target = integrations.find(str(r.get("Resource")))
            if target is None or target.family is not integrations.s3 or target.action not in integrations.s3.READERS:
                self.fail(f"{at}.Resource", f"{_show(r.get('Resource'))} is not a supported reader "
                          "(arn:aws:states:::s3:getObject, arn:aws:states:::s3:listObjectsV2)")
            self.s3_params(f"{at}.{params}", r.get(params), target, ja)
            for f in ("ItemsPath", "Items"):
                if f in st:
                    self.fail(f"{where}.{f}", f"a Map with an ItemReader reads its items from S3 "
                              f"(remove {f})")
            rc = r.get("ReaderConfig", {})
            if not isinstance(rc, dict):
                self.fail(f"{at}.ReaderConfig", f"must be an object, got {_show(rc)}")
            self.known_fields(f"{at}.ReaderConfig", rc, frozenset({
                "InputType", "CSVHeaderLocation", "CSVHeaders", "CSVDelimiter", "MaxItems",
                "MaxItemsPath", "ManifestType"}), "a ReaderConfig")
            kind = rc.get("InputType")
            if target.action == "getObject":
                if "ManifestType" in rc and rc["ManifestType"] != "S3_INVENTORY":
                    self.fail(f"{at}.ReaderConfig.ManifestType", f"{_show(rc['ManifestType'])}: only an "
                              "S3_INVENTORY manifest is supported")
                if kind not in distributed.INPUT_TYPES:
                    self.fail(f"{at}.ReaderConfig.InputType", f"{_show(kind)}: getObject needs InputType "
                              f"{', '.join(distributed.INPUT_TYPES)}")
            elif kind is not None:
                self.fail(f"{at}.ReaderConfig.InputType", "listObjectsV2 takes no InputType")
            loc = rc.get("CSVHeaderLocation", "FIRST_ROW")
            if loc not in ("FIRST_ROW", "GIVEN"):
                self.fail(f"{at}.ReaderConfig.CSVHeaderLocation", f"{_show(loc)} is not FIRST_ROW or GIVEN")
            if loc == "GIVEN":
                h = rc.get("CSVHeaders")
                if not isinstance(h, list) or not h or not all(isinstance(x, str) for x in h):
                    self.fail(f"{at}.ReaderConfig.CSVHeaders", "CSVHeaderLocation GIVEN needs CSVHeaders, "
                              "a non-empty list of strings")
            elif "CSVHeaders" in rc:
                self.fail(f"{at}.ReaderConfig.CSVHeaders", "CSVHeaders needs CSVHeaderLocation GIVEN")
            if not isinstance(rc.get("CSVDelimiter", "COMMA"), str) or \
                    rc.get("CSVDelimiter", "COMMA") not in distributed.DELIMITERS:
                self.fail(f"{at}.ReaderConfig.CSVDelimiter", f"{_show(rc['CSVDelimiter'])} is not one of "
                          f"{', '.join(distributed.DELIMITERS)}")
            if kind != "CSV" and ({"CSVHeaderLocation", "CSVHeaders", "CSVDelimiter"} & set(rc)):
                self.fail(f"{at}.ReaderConfig", "CSV fields need InputType CSV")
            self.limit(f"{at}.ReaderConfig", rc, "MaxItems", 0, distributed.MAX_ITEMS, ja)
        if "ItemBatcher" in st:
            b = st["ItemBatcher"]
            at = f"{where}.ItemBatcher"
            if not isinstance(b, dict):
                self.fail(at, f"must be an object, got {_show(b)}")
            self.known_fields(at, b, frozenset({
                "MaxItemsPerBatch", "MaxItemsPerBatchPath", "MaxInputBytesPerBatch",
                "MaxInputBytesPerBatchPath", "BatchInput"}), "an ItemBatcher")
            if not {"MaxItemsPerBatch", "MaxItemsPerBatchPath", "MaxInputBytesPerBatch",
                    "MaxInputBytesPerBatchPath"} & set(b):
                self.fail(at, "needs MaxItemsPerBatch or MaxInputBytesPerBatch (or their *Path)")
            self.limit(at, b, "MaxItemsPerBatch", 1, None, ja)
            self.limit(at, b, "MaxInputBytesPerBatch", 1, distributed.MAX_BATCH_BYTES, ja)
            if "BatchInput" in b:
                if not isinstance(b["BatchInput"], dict) and not (ja and _expression(b["BatchInput"])):
                    self.fail(f"{at}.BatchInput", f"must be an object, got {_show(b['BatchInput'])}")
                if ja:
                    self.expressions(f"{at}.BatchInput", b["BatchInput"])
                else:
                    self.template(f"{at}.BatchInput", b["BatchInput"])
        if "ResultWriter" in st:
            w = st["ResultWriter"]
            at = f"{where}.ResultWriter"
            if not isinstance(w, dict):
                self.fail(at, f"must be an object with Resource and {params}, got {_show(w)}")
            if "WriterConfig" in w:
                self.fail(f"{at}.WriterConfig", "WriterConfig (Transformation, OutputType) is not "
                          "supported yet (remove it: results are written as JSON with their metadata)")
            self.known_fields(at, w, frozenset({"Resource", params}), "a ResultWriter")
            target = integrations.find(str(w.get("Resource")))
            if target is None or target.family is not integrations.s3 or target.action not in integrations.s3.WRITERS:
                self.fail(f"{at}.Resource", f"{_show(w.get('Resource'))} is not a supported writer "
                          "(arn:aws:states:::s3:putObject)")
            self.s3_params(f"{at}.{params}", w.get(params), target, ja)

    def s3_params(self, at: str, params: Any, target: Any, ja: bool) -> None:
        """An ItemReader's / ResultWriter's Parameters (JSONPath template) or Arguments
        (JSONata) with the fields S3 requires."""
        if ja and _expression(params):
            return
        if not isinstance(params, dict):
            self.fail(at, f"must be an object, got {_show(params)}")
        if ja:
            self.expressions(at, params)
        else:
            self.template(at, params)
        given = {k[:-2] if isinstance(k, str) and k.endswith(".$") else k for k in params}
        for alts in integrations.required(target):
            if not given & set(alts):
                self.fail(f"{at}.{alts[0]}", f"{target.resource} requires {alts[0]}")

    def limit(self, at: str, obj: dict[str, Any], f: str, low: int, high: int | None, ja: bool) -> None:
        """`f` (an integer in [low, high]) or `f`Path (a JSONPath), not both."""
        if f in obj and f + "Path" in obj:
            self.fail(f"{at}.{f}Path", f"give {f} or {f}Path, not both")
        if f + "Path" in obj:
            if ja:
                self.fail(f"{at}.{f}Path", f"{f}Path is JSONPath; in a JSONata state write {f} as a {{% %}} expression")
            self.path(f"{at}.{f}Path", obj[f + "Path"], nullable=False)
        if f in obj and not (ja and _expression(obj[f])):
            v = obj[f]
            if not isinstance(v, int) or isinstance(v, bool) or v < low or (high is not None and v > high):
                self.fail(f"{at}.{f}", f"must be an integer >= {low}{f' and <= {high}' if high else ''}, "
                          f"got {_show(v)}")

    # ------------------------------------------------------------------ JSONata, variables
    def integration(self, where: str, res: str, st: dict[str, Any], ja: bool) -> None:
        """A Task's Resource must name an integration the registry serves
        (runtime.asl.integrations); its Parameters/Arguments must hold the fields AWS
        requires (JSONPath `Field.$` counts; a JSONata `{% %}` Arguments is checked at run
        time)."""
        target = integrations.find(res)
        if target is not None and not getattr(target.family, "TASK", True):
            self.fail(f"{where}.Resource", f"{res!r} names a Distributed Map's ItemReader/ResultWriter, "
                      f"not a Task (a Task calls S3 with arn:aws:states:::aws-sdk:s3:{target.action})")
        if target is None:
            refused = integrations.callback_refusal(res)
            if refused is not None:
                self.fail(f"{where}.Resource", f"{res!r}: {refused}")
            activity = integrations.activity_refusal(res)
            if activity is not None:
                self.fail(f"{where}.Resource", f"{res!r} {activity}")
            if res.startswith("arn:"):
                self.fail(f"{where}.Resource", f"{res!r} is not a supported integration "
                          f"(supported: {integrations.supported()})")
            return
        if target.name == "lambda":
            return
        field_ = "Arguments" if ja else "Parameters"
        params = st.get(field_)
        if ja and (jsonata.is_expr(params) or params is None and "Arguments" not in st):
            return
        if not isinstance(params, dict):
            self.fail(f"{where}.{field_}", f"{res} needs {field_} (an object)")
        given = {k[:-2] if isinstance(k, str) and k.endswith(".$") else k for k in params}
        try:
            needed = integrations.required(target)
        except AslError as err:
            self.fail(f"{where}.Resource", err.cause or str(err))
        for alts in needed:
            if not given & set(alts):
                self.fail(f"{where}.{field_}.{alts[0]}", f"{res} requires "
                          f"{' or '.join(alts)} (as the AWS API reference names it)")

    def query_language(self, where: str, t: str, st: dict[str, Any]) -> bool:
        """Check the state's QueryLanguage and the fields it allows; parse its `{% %}`
        expressions and check its Assign. Returns True for a JSONata state."""
        ql = st.get("QueryLanguage", self.language)
        if ql not in QUERY_LANGUAGES:
            self.fail(f"{where}.QueryLanguage", f"{_show(ql)} is not one of JSONPath, JSONata")
        if ql == "JSONPath" and self.language == "JSONata":
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
            if not isinstance(key, str):
                self.fail(f"{where}.Assign", f"variable names must be strings, got {_show(key)}")
            name = key[:-2] if key.endswith(".$") else key
            if key.endswith(".$") and ja:
                self.fail(f"{where}.Assign.{key}", "'.$' keys are JSONPath; in a JSONata state write "
                          f"\"{name}\": \"{{% ... %}}\"")
            if not _VARIABLE_NAME.fullmatch(name):
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
        self.known_fields(where, rule, fields.RULE_FIELDS, "a Choice rule")
        self.target(f"{where}.Next", rule.get("Next"), states)
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

    def handlers(self, where: str, name: str, items: Any, allowed: frozenset[str],
                 what: str, shape: str):
        """The common checks of a Retry or Catch list (ASL spec "Errors"): a list of objects
        with only `allowed` fields and a valid ErrorEquals; yields (path, object) of each."""
        if not isinstance(items, list):
            self.fail(f"{where}.{name}", f"must be a list of {what}s, got {_show(items)}")
        for i, obj in enumerate(items):
            at = f"{where}.{name}[{i}]"
            if not isinstance(obj, dict):
                self.fail(at, f"a {what} must be an object with {shape}, got {_show(obj)}")
            self.known_fields(at, obj, allowed, f"a {what}")
            self.error_equals(f"{at}.ErrorEquals", obj.get("ErrorEquals"), i == len(items) - 1)
            yield at, obj

    def retriers(self, where: str, retry: Any) -> None:
        """Retry: a list of retriers (ASL spec "Retrying after error")."""
        for at, r in self.handlers(where, "Retry", retry, fields.RETRIER_FIELDS, "retrier", "ErrorEquals"):
            if "IntervalSeconds" in r:
                self.integer(f"{at}.IntervalSeconds", r["IntervalSeconds"], 1)
            if "MaxAttempts" in r:
                self.integer(f"{at}.MaxAttempts", r["MaxAttempts"], 0)
            if "MaxDelaySeconds" in r:
                self.integer(f"{at}.MaxDelaySeconds", r["MaxDelaySeconds"], 1)
            if "BackoffRate" in r:
                b = r["BackoffRate"]
                if not isinstance(b, (int, float)) or isinstance(b, bool) or not 1.0 <= b < 1e6:
                    self.fail(f"{at}.BackoffRate", f"must be a number >= 1.0, got {_show(b)}")
            if "JitterStrategy" in r and r["JitterStrategy"] not in ("FULL", "NONE"):
                self.fail(f"{at}.JitterStrategy", f"must be FULL or NONE, got {_show(r['JitterStrategy'])}")

    def catchers(self, where: str, catch: Any, states: dict[str, Any], ja: bool = False) -> None:
        """Catch: a list of catchers (ASL spec "Fallback states")."""
        for at, c in self.handlers(where, "Catch", catch, fields.CATCHER_FIELDS, "catcher",
                                   "ErrorEquals and Next"):
            self.target(f"{at}.Next", c.get("Next"), states)
            if "ResultPath" in c:
                if ja:
                    self.fail(f"{at}.ResultPath", "ResultPath is a JSONPath field; a JSONata catcher "
                              "uses Output")
                self.path(f"{at}.ResultPath", c["ResultPath"], reference=True)
            if "Output" in c and not ja:
                self.fail(f"{at}.Output", "Output is a JSONata field; a JSONPath catcher uses "
                          "ResultPath (or set \"QueryLanguage\": \"JSONata\")")
            if "Output" in c:
                self.expressions(f"{at}.Output", c["Output"])
            self.assign(at, c, ja)

    def error_equals(self, where: str, names: Any, last: bool = True) -> None:
        """ASL spec "Error names": a non-empty list of strings; States.ALL must appear alone
        and only in the last retrier/catcher."""
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            self.fail(where, "must be a non-empty list of error names")
        if "States.ALL" in names:
            if len(names) > 1:
                self.fail(where, "States.ALL must appear alone in ErrorEquals")
            if not last:
                self.fail(where, "States.ALL must be in the last retrier/catcher of the list")

    def rule(self, where: str, rule: Any, top: bool, states: dict[str, Any], depth: int = 0) -> None:
        if not isinstance(rule, dict):
            self.fail(where, f"a Choice rule must be an object, got {_show(rule)}")
        if depth > MAX_RULE_DEPTH:
            self.fail(where, f"And/Or/Not nest more than {MAX_RULE_DEPTH} levels")
        self.known_fields(where, rule, fields.RULE_FIELDS, "a Choice rule")
        if "Comment" in rule:
            self.string(f"{where}.Comment", rule["Comment"])
        if top:
            self.target(f"{where}.Next", rule.get("Next"), states)
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
                    self.rule(f"{where}.{op}[{i}]", r, False, states, depth + 1)
                return
        if "Not" in rule:
            self.rule(f"{where}.Not", rule["Not"], False, states, depth + 1)
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
                self.fail(f"{where}.{op}", f"must be true or false, got {_show(val)}")
        elif op.startswith("Numeric"):
            if not isinstance(val, (int, float)) or isinstance(val, bool):
                self.fail(f"{where}.{op}", f"must be a number, got {_show(val)}")
        elif op.startswith("Boolean"):
            if not isinstance(val, bool):
                self.fail(f"{where}.{op}", f"must be true or false, got {_show(val)}")
        elif not isinstance(val, str):
            self.fail(f"{where}.{op}", f"must be a string, got {_show(val)}")


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


def _expression(value: Any) -> bool:
    """A JSONata `{% ... %}` string, which numeric and timestamp fields of JSONata states
    take instead of a literal (checked by the JSONata rules, not by the type checks here)."""
    return isinstance(value, str) and value.startswith("{%") and value.endswith("%}")


def _show(value: Any) -> str:
    """A short one-line JSON-ish rendering of a bad value for an error message."""
    try:
        text = json.dumps(value, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(type(value).__name__)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(definition: Any, source: str = "statemachine") -> None:
    """Raise AslValidationError (one line naming state and field) for an invalid machine.

    Accepts any parsed JSON/YAML value; the only exception it raises is
    AslValidationError."""
    try:
        _V(source).machine(definition)
    except RecursionError:  # guarded by the depth limits above; a last resort
        raise AslValidationError(f"{source}: (top): the definition nests too deeply") from None
