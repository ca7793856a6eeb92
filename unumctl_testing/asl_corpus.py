"""Compile (and, where their Tasks can be served here, run) the public state machines that
tests/asl_corpus/corpus.json indexes (see its README.md for each one's source).

The definitions themselves are not in the repository: they are read from a cache directory
(`corpus_dir`: `--dir`, else `$UNUM_ASL_CORPUS`, else ~/.cache/unumctl/asl-corpus/), one file
per index entry under the entry's `file` name. Used by `python tools/asl_corpus_stats.py`
(the corpus's numbers: how many compile, how many run, the refusals by reason) and, on
machines written in the test itself, by tests/unumctl/asl/test_corpus.py."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from runtime.asl import paths
from runtime.asl.machine import LAMBDA_INVOKE, Machine
from runtime.asl.wrapper import lambda_name
from runtime.errors import IRError
from unumctl.asl import compile_definition, resolver

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "asl_corpus"  # the index and its README, no definitions
INDEX = CORPUS / "corpus.json"
CACHE_ENV = "UNUM_ASL_CORPUS"
_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\.asl\.json$")
PLACEHOLDER_ARN = "arn:aws:lambda:us-east-1:123456789012:function:"
COMPILES = "compiles"
REFUSED = "refused: "
REGION = "us-east-1"
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


def substitute(text: str, values: dict[str, str] | None = None) -> str:
    """Replace each SAM DefinitionSubstitution / Terraform template placeholder `${X}` with
    `values[X]` when given (a table name, a queue URL, a Resource the template fills in...),
    else with the Lambda ARN of a function named after X (what the template renders on
    deploy for a function); one outside a JSON string becomes a quoted string."""
    values = values or {}

    def repl(m: re.Match) -> str:
        if m.group(1) in values:
            value = values[m.group(1)]
        else:
            value = PLACEHOLDER_ARN + re.sub(r"[^A-Za-z0-9_-]", "_", m.group(1))
        inside = text.count('"', 0, m.start()) % 2 == 1
        return value if inside else json.dumps(value)
    return _PLACEHOLDER.sub(repl, text)


def lambda_refs(doc: Any) -> list[str]:
    """Every Lambda function a definition names: Lambda ARN Resources and the static
    FunctionName of lambda:invoke Tasks (Parameters or Arguments), nested states included."""
    out: list[str] = []
    todo = [doc]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            res = node.get("Resource")
            if node.get("Type") == "Task" and isinstance(res, str):
                if res.startswith("arn:aws:lambda:"):
                    out.append(res)
                elif res.startswith(LAMBDA_INVOKE):
                    for f in ("Parameters", "Arguments"):
                        fn = (node.get(f) or {}).get("FunctionName") if isinstance(node.get(f), dict) else None
                        if isinstance(fn, str) and not fn.startswith("{%"):
                            out.append(fn)
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return out


def all_paths(doc: Any) -> list[str]:
    """Every JSONPath string value of the definition (`.$` fields and *Path fields)."""
    out: list[str] = []
    todo = [doc]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(v, str) and (k.endswith(".$") or k.endswith("Path") or k == "Variable") \
                        and paths.is_path(v):
                    out.append(v)
                else:
                    todo.append(v)
        elif isinstance(node, list):
            todo.extend(node)
    return out


def state_names(doc: Any) -> set[str]:
    """The names of every state of a definition, nested Map/Parallel states included."""
    out: set[str] = set()
    todo = [doc]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if isinstance(node.get("States"), dict) and "StartAt" in node:
                out.update(node["States"])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return out


def features(doc: Any) -> list[str]:
    """What a definition uses, in the issue's terms (issue 24 "Why"): `lambda` (a Lambda
    Task), `aws-sdk`, `dynamodb`, `sns`, `sqs`, `events`, `startExecution`, `.sync`,
    `.waitForTaskToken`, `activity`, `other-integration` (an optimized integration of another
    service: Batch, ECS, Bedrock, API Gateway...), `distributed-map`, `map`, `parallel`,
    `choice`, `wait`, `jsonata` (QueryLanguage JSONata on the machine or a state)."""
    found: set[str] = set()
    todo = [doc]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            t = node.get("Type")
            if node.get("QueryLanguage") == "JSONata":
                found.add("jsonata")
            if t == "Task" and isinstance(node.get("Resource"), str):
                found.update(_resource_features(node["Resource"]))
            elif t == "Map":
                mode = ((node.get("ItemProcessor") or {}).get("ProcessorConfig") or {}).get("Mode")
                found.add("distributed-map" if mode == "DISTRIBUTED" or "ItemReader" in node else "map")
            elif t in ("Parallel", "Choice", "Wait"):
                found.add(t.lower())
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return sorted(found)


def _resource_features(res: str) -> set[str]:
    out: set[str] = set()
    for suffix in (".waitForTaskToken", ".sync:2", ".sync"):
        if res.endswith(suffix):
            out.add(".sync" if suffix.startswith(".sync") else suffix)
            res = res[:-len(suffix)]
            break
    m = re.match(r"arn:[^:]*:states:::([^:]+)(?::(.*))?$", res)
    if res.startswith("arn:aws:lambda:") or (m and m.group(1) == "lambda"):
        out.add("lambda")
    elif re.match(r"arn:[^:]*:states:[^:]*:[^:]*:activity:", res):
        out.add("activity")
    elif m and m.group(1) == "aws-sdk":
        out.add("aws-sdk")
    elif m and m.group(1) in ("dynamodb", "sns", "sqs", "events"):
        out.add(m.group(1))
    elif m and m.group(1) == "states":
        out.add("startExecution")
    elif m:
        out.add("other-integration")
    else:
        out.add("lambda")  # a function name: the Task calls Lambda
    return out


def entries() -> list[dict[str, Any]]:
    """The corpus index (asl_corpus/corpus.json): `file`, `source` (repository, path and
    commit), `functions` (the Lambda functions the manifest hosts), optional `forms` (what
    the entry was picked for, in our words), optional `substitutions` (template placeholder
    -> value, see `substitute`), `features` (`features` of the definition, recorded),
    `outcome` ("compiles" or "refused: <the one-line error>") and optional `run` (see
    `run_entry`)."""
    return json.loads(INDEX.read_text())


SOURCE = re.compile(r"^[\w.-]+/[\w.-]+ \S+ @ [0-9a-f]{40}$")
_ENTRY_FIELDS = {"file", "source", "forms", "functions", "substitutions", "features", "outcome", "run"}


def index_problems(index: list[dict[str, Any]]) -> list[str]:
    """What is wrong with an index (empty: fine), one line each naming the entry: a `file`
    that is not a plain `<name>.asl.json` name or is indexed twice, no `source`, an
    aws-samples `source` without `repository path @ <40-hex commit>` (whoever fetches the
    definitions needs all three), `functions` or `features` not a list, an `outcome` that is
    neither "compiles" nor "refused: <file>: <one line>", an object with StartAt and States
    (a definition copied into the index), a field the harness does not know."""
    problems: list[str] = []
    seen: set[str] = set()
    for i, e in enumerate(index):
        name = e.get("file") if isinstance(e, dict) else None
        where = f"entry {i} ({name})"
        if not isinstance(e, dict):
            problems.append(f"{where}: not an object")
            continue
        try:
            machine_path(e, Path("."))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
        if name in seen:
            problems.append(f"{where}: indexed twice")
        seen.add(str(name))
        source = e.get("source")
        if not isinstance(source, str) or not source.strip():
            problems.append(f"{where}: names no source")
        elif source.startswith("aws-samples/") and not SOURCE.match(source):
            problems.append(f"{where}: source {source!r} is not 'repository path @ <40-hex commit>'")
        for f in ("functions", "features"):
            if not isinstance(e.get(f), list):
                problems.append(f"{where}: {f} is not a list")
        outcome = e.get("outcome")
        if not isinstance(outcome, str) or not (outcome == COMPILES or outcome.startswith(REFUSED)):
            problems.append(f"{where}: outcome is neither {COMPILES!r} nor {REFUSED!r}...")
        elif "\n" in outcome:
            problems.append(f"{where}: outcome is more than one line")
        elif outcome.startswith(REFUSED) and not outcome.startswith(f"{REFUSED}{name}: "):
            problems.append(f"{where}: the refusal does not start with the file's name")
        if state_names(e):
            problems.append(f"{where}: embeds a state-machine definition (StartAt and States); "
                            f"definitions belong in the cache directory, not the index")
        if set(e) - _ENTRY_FIELDS:
            problems.append(f"{where}: unknown field(s) {sorted(set(e) - _ENTRY_FIELDS)}")
    return problems


def definitions_in(directory: Path) -> list[str]:
    """The files under `directory` (recursively) other than corpus.json and README.md at its
    top: what must not be there, since the public definitions stay out of the repository
    (empty: fine)."""
    allowed = {directory / "corpus.json", directory / "README.md"}
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*")
                  if not p.is_dir() and p not in allowed)


def jsonpaths(definition: Any) -> list[str]:
    """`all_paths` of a JSONPath definition; [] for one whose QueryLanguage is JSONata."""
    if not isinstance(definition, dict) or definition.get("QueryLanguage") == "JSONata":
        return []
    return all_paths(definition)


def corpus_dir(override: str | Path | None = None) -> Path:
    """The directory holding the corpus's definitions: `override` (the stats command's
    `--dir`), else $UNUM_ASL_CORPUS, else ~/.cache/unumctl/asl-corpus (need not exist)."""
    chosen = override or os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "unumctl" / "asl-corpus"
    return Path(chosen).expanduser()


def machine_path(entry: dict[str, Any], root: Path) -> Path:
    """Where `entry`'s definition lives under `root`. ValueError (one line naming the index
    and the entry) when its `file` is not a plain `<name>.asl.json` file name."""
    name = entry.get("file")
    if not isinstance(name, str) or not _FILE.match(name):
        raise ValueError(f"{INDEX}: entry file {name!r} is not a plain <name>.asl.json file name "
                         f"(letters, digits, '_', '.', '-'); fix the entry")
    return root / name


def missing(index: list[dict[str, Any]], root: Path) -> list[dict[str, Any]]:
    """The entries of `index` whose definition is not a file under `root`."""
    return [e for e in index if not machine_path(e, root).is_file()]


def load(entry: dict[str, Any], root: Path) -> tuple[Any, str | None]:
    """(definition, None) read from `root` (see `corpus_dir`), or (None, the one-line
    error) when the file is not valid JSON. OSError when it cannot be read."""
    text = machine_path(entry, root).read_text()
    try:
        return json.loads(substitute(text, entry.get("substitutions"))), None
    except ValueError as exc:
        return None, f"{entry['file']}: not valid JSON: {str(exc).splitlines()[0]}"


def compile_entry(entry: dict[str, Any], root: Path) -> tuple[Any, str]:
    """(definition or None, "compiles" or "refused: <error>") for `entry`, read from `root`
    and compiled with the API `unumctl compile` uses against a manifest of the entry's
    `functions`."""
    definition, error = load(entry, root)
    if definition is None:
        return None, REFUSED + str(error)
    functions = {n: {} for n in entry["functions"]}
    try:
        compile_definition(definition, resolver(functions), sorted(functions), source=entry["file"])
    except IRError as exc:
        return definition, REFUSED + str(exc)
    return definition, COMPILES


def refusal_problems(file: str, outcome: str, definition: Any) -> list[str]:
    """What is wrong with the shape of a refusal (empty: fine): it must be ONE line that
    starts with the file's name and names a state of the definition (`States.<state>.` or,
    nested, `...States.<state>.`), or, for a file that is not JSON, its line and column."""
    error = outcome[len(REFUSED):] if outcome.startswith(REFUSED) else outcome
    problems = []
    if "\n" in error:
        problems.append("more than one line")
    if not error.startswith(file + ": "):
        problems.append("does not start with the file's name")
    if definition is None:
        if not re.search(r"line \d+ column \d+", error):
            problems.append("names no line and column")
    elif not any(f"States.{name}." in error for name in state_names(definition)):
        problems.append("names no state")
    return problems


def run_entry(definition: Any, run: dict[str, Any]) -> Any:
    """Run a compiled definition in the ASL interpreter (runtime.asl.machine, inline mode:
    every state in this process, Waits on a virtual clock) with `run["input"]`; Lambda
    function `f` returns `run["returns"][f]`. Returns the execution's output, or
    {"Error", "Cause"} when it fails. With `run["aws"]`, integration Tasks call moto's
    in-process AWS (`MotoAWS`)."""
    from runtime.asl.errors import AslError

    returns = run.get("returns", {})

    def invoke(ref: str, event: Any) -> Any:
        return json.loads(json.dumps(returns[lambda_name(ref)]))
    m = Machine(definition, {"Id": "arn:aws:states:us-east-1:123456789012:execution:corpus:x",
                             "Name": "x", "StartTime": "2024-01-01T00:00:00Z", "Input": run["input"],
                             "StateMachine": {"Id": "arn:aws:states:us-east-1:123456789012:stateMachine:corpus",
                                              "Name": "corpus"}},
                clock=lambda: 0.0, sleep=lambda s: None, start_time=0.0)
    try:
        return m.run_inline("", definition["StartAt"], run["input"], invoke)
    except AslError as exc:
        return {"Error": exc.error, "Cause": exc.cause}


class MotoAWS:
    """moto's in-process AWS (moto.mock_aws) for corpus runs, entered once for many runs:
    `create(spec)` makes the resources a run names (`tables` {name: hash key attribute, type
    S}, `topics`, `queues`, `buses`), empty but for the items of `seed` {table: [item]};
    `side_effects(spec)` reads what a run left. The integration modules' cached boto3 clients are dropped on entry and exit, and the AWS
    environment is moto's in between, so their calls reach this moto and nothing else."""

    _ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION}
    _UNSET = ("UNUM_AWS_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_PROFILE")

    def __enter__(self) -> "MotoAWS":
        import boto3
        from moto import mock_aws
        from runtime.asl.integrations import sdk

        self._saved = {k: os.environ.get(k) for k in (*self._ENV, *self._UNSET)}
        os.environ.update(self._ENV)
        for k in self._UNSET:
            os.environ.pop(k, None)
        sdk.forget_clients()
        self._mock = mock_aws()
        self._mock.start()
        self._session = boto3.session.Session(region_name=REGION)
        self._clients: dict[str, Any] = {}
        return self

    def __exit__(self, *exc: Any) -> None:
        from runtime.asl.integrations import sdk

        self._mock.stop()
        sdk.forget_clients()
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def client(self, service: str) -> Any:
        """A boto3 client of this moto (one per service)."""
        if service not in self._clients:
            self._clients[service] = self._session.client(service)
        return self._clients[service]

    def create(self, spec: dict[str, Any]) -> None:
        """Create the resources `spec` names, empty (a table or queue left by an earlier run
        is emptied: moto's state is process-wide)."""
        ddb = self.client("dynamodb")
        for name, key in spec.get("tables", {}).items():
            if name in ddb.list_tables()["TableNames"]:
                ddb.delete_table(TableName=name)
            ddb.create_table(
                TableName=name, BillingMode="PAY_PER_REQUEST",
                KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}])
        for name, items in spec.get("seed", {}).items():
            for item in items:
                ddb.put_item(TableName=name, Item=item)
        for name in spec.get("topics", []):
            self.client("sns").create_topic(Name=name)
        for name in spec.get("queues", []):
            url = self.client("sqs").create_queue(QueueName=name)["QueueUrl"]
            self.client("sqs").purge_queue(QueueUrl=url)
        buses = {b["Name"] for b in self.client("events").list_event_buses()["EventBuses"]}
        for name in set(spec.get("buses", [])) - buses:
            self.client("events").create_event_bus(Name=name)

    def side_effects(self, spec: dict[str, Any]) -> dict[str, Any]:
        """What a run left: {"items": {table: item count}, "messages": {queue: count}} for
        the tables and queues `spec` names."""
        out: dict[str, Any] = {}
        if spec.get("tables"):
            out["items"] = {t: self.client("dynamodb").scan(TableName=t)["Count"] for t in spec["tables"]}
        if spec.get("queues"):
            sqs = self.client("sqs")
            out["messages"] = {}
            for q in spec["queues"]:
                url = sqs.get_queue_url(QueueName=q)["QueueUrl"]
                attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
                out["messages"][q] = int(attrs["Attributes"]["ApproximateNumberOfMessages"])
        return out


def check_run(definition: Any, run: dict[str, Any], aws: MotoAWS | None = None) -> list[str]:
    """Run `definition` as `run` says and compare: `output` (the whole output), `expect`
    ({JSONPath: value} read from the output), `keys` (the output object's keys, sorted: for
    results that carry ids the services make up) and with `aws`, `after` (side_effects).
    Returns the differences (empty: as recorded). A run with `aws` uses `aws` (an entered
    MotoAWS shared by runs whose resource names differ) or a MotoAWS of its own."""
    unknown = set(run) - {"input", "returns", "aws", "output", "expect", "keys", "after"}
    if unknown or not {"output", "expect", "keys"} & set(run):
        return [f"a run records input, returns, aws and at least one of output, expect, keys "
                f"(and after with aws); not {sorted(unknown)}"]
    problems: list[str] = []
    if "aws" in run:
        if aws is None:
            with MotoAWS() as own:
                return check_run(definition, run, own)
        aws.create(run["aws"])
        out = run_entry(definition, run)
        after = aws.side_effects(run["aws"])
        if "after" in run and after != run["after"]:
            problems.append(f"left {after}, recorded {run['after']}")
    else:
        out = run_entry(definition, run)
    if "output" in run and out != run["output"]:
        problems.append(f"output {json.dumps(out)}, recorded {json.dumps(run['output'])}")
    if "keys" in run and (not isinstance(out, dict) or sorted(out) != run["keys"]):
        problems.append(f"output {json.dumps(out)[:300]} has not the keys {run['keys']}")
    for path, want in run.get("expect", {}).items():
        try:
            got = paths.read(path, out)
        except Exception as exc:  # a path the output lacks
            problems.append(f"{path}: {exc} in {json.dumps(out)[:300]}")
            continue
        if got != want:
            problems.append(f"{path} = {json.dumps(got)}, recorded {json.dumps(want)}")
    return problems
