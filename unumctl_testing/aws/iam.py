"""IAM on moto for the AWS tests: moto's IAM enforcement, the functions' execution roles as
the rendered Terraform makes them, and the check of every AWS call the deployed runtime made
against its role's policy.

moto 5.2.5's enforcement and its gaps worked around here (docs/architecture.md §8, docs/aws.md
"IAM enforcement on moto"):
- it is switched on by `POST /moto-api/reset-auth` with a `text/plain` body (the number of
  requests still let through; a form body answers 500): `enforce` first creates an admin
  user (`*` on `*`) whose keys the harness and Terraform then use;
- assuming a role whose trust policy names a *service* principal (lambda.amazonaws.com)
  crashes moto: each function gets a twin role (`twin_role_credentials`) with the same
  permission policy, trusted by the admin user, and the emulated Lambda signs with the
  credentials of assuming it;
- moto authorises every DynamoDB call against resource `*` (a table-scoped statement denies
  everything) and asks for `dynamodb:TransactWriteItems`, an action real IAM does not use
  (it authorises a transaction by the writes inside it): the twin's DynamoDB statement has
  resource `*` and that action added (`moto_twin`); so do the statements of SNS,
  EventBridge and Step Functions (integration Tasks), which moto authorises against `*`
  too (SQS it authorises against the queue's ARN). Resource scoping of those, and Lambda
  Invoke (served by the local emulator, which moto does not see), are checked by
  `check_calls` against the policy as rendered instead;
- moto answers NoSuchKey for a missing S3 key whatever the policy (real S3: AccessDenied
  without s3:ListBucket), so the 404 grant is checked on the policy, not by moto.

`policy_document` is the execution role's policy as terraform/modules/aws-unum-function/
iam.tf renders it from the runtime's table (runtime/aws/iam.py); tests/aws/test_terraform_aws.py
compares it with the policy Terraform applied.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import urllib.request
from pathlib import Path
from typing import Any, Iterable

from runtime.aws.iam import (BLOBS, BUCKET, DATASTORE, FAILURE_QUEUE, INVOKE, KMS, LOGS, PERMISSIONS,
                             PLATFORM, actions_of)
from unumctl.deploy.models import Deployment, Function

ADMIN_USER = "unum-test-admin"
ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


def set_enforcement(url: str, on: bool) -> None:
    """Switch moto_server's IAM enforcement on (every request authenticated and authorised
    from now on) or off. Raises urllib's errors when moto does not answer."""
    body = b"0" if on else b"inf"
    req = urllib.request.Request(url + "/moto-api/reset-auth", data=body, method="POST",
                                 headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(req, timeout=10).read()


def enforce(url: str, region: str) -> dict[str, str]:
    """Create the admin user (its keys: the returned AWS_ACCESS_KEY_ID /
    AWS_SECRET_ACCESS_KEY) on moto at `url`, then switch enforcement on. Call once per
    moto_server, before enforcement."""
    import boto3

    iam = boto3.client("iam", endpoint_url=url, region_name=region, aws_access_key_id="bootstrap",
                       aws_secret_access_key="bootstrap")
    iam.create_user(UserName=ADMIN_USER)
    iam.put_user_policy(UserName=ADMIN_USER, PolicyName="all", PolicyDocument=json.dumps(ALL))
    key = iam.create_access_key(UserName=ADMIN_USER)["AccessKey"]
    set_enforcement(url, True)
    return {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}


# ---------------------------------------------------------------------------- policies
def resource_arns(dep: Deployment, f: Function, table: str, bucket: str, region: str, account: str,
                  failure_queue_arn: str | None = None) -> dict[str, list[str]]:
    """Resource name (runtime/aws/iam.py) -> the ARNs iam.tf gives it for function `f`."""
    fn_arn = f"arn:aws:lambda:{region}:{account}:function:"
    invokes = f.role.invoke  # names, or the app's pattern `<app>_*` (unumctl/aws/policies.py)
    return {DATASTORE: [f"arn:aws:dynamodb:{region}:{account}:table/{table}"],
            BLOBS: [f"arn:aws:s3:::{bucket}/{dep.blobs.prefix}*"],
            BUCKET: [f"arn:aws:s3:::{bucket}"],
            INVOKE: [fn_arn + n for n in invokes],
            LOGS: [f"arn:aws:logs:{region}:{account}:log-group:/aws/lambda/{f.name}:log-stream:*"],
            FAILURE_QUEUE: [failure_queue_arn] if f.is_error_handler and failure_queue_arn else [],
            KMS: [dep.params.kms_key_arn] if dep.params.kms_key_arn else []}


def policy_document(dep: Deployment, f: Function, table: str, bucket: str, region: str, account: str,
                    failure_queue_arn: str | None = None) -> dict[str, Any]:
    """The inline policy of `f`'s execution role as iam.tf renders it: one Allow statement per
    resource of `f.role.permissions` that the function has, Sid = the resource name, then
    the statements of its integration Tasks (`f.role.integrations`, their ARN templates
    filled in with partition `aws`, `region` and `account`)."""
    arns = resource_arns(dep, f, table, bucket, region, account, failure_queue_arn)
    fill = {"{partition}": "aws", "{region}": region, "{account}": account}

    def filled(r: str) -> str:
        for k, v in fill.items():
            r = r.replace(k, v)
        return r
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": r, "Effect": "Allow", "Action": sorted(actions), "Resource": arns[r]}
        for r, actions in sorted(f.role.permissions.items()) if arns[r] and actions] + [
        {"Sid": st["sid"], "Effect": "Allow", "Action": sorted(st["actions"]),
         "Resource": [filled(r) for r in st["resources"]]} for st in f.role.integrations]}


# services whose calls moto 5.2.5 authorises against resource `*` (its responses have no
# `_determine_resource`; S3 and SQS do name the bucket/object and the queue ARN)
MOTO_ANY_RESOURCE = ("dynamodb", "sns", "events", "states")


def moto_twin(policy: dict[str, Any]) -> dict[str, Any]:
    """`policy` as moto 5.2.5 can enforce it (module docstring): the statements of the
    services moto authorises against `*` (MOTO_ANY_RESOURCE: DynamoDB, and SNS,
    EventBridge, Step Functions of the integration Tasks) on resource `*`, with
    `dynamodb:TransactWriteItems` when one grants PutItem or UpdateItem."""
    out = json.loads(json.dumps(policy))
    for st in out["Statement"]:
        if any(a.split(":", 1)[0] in MOTO_ANY_RESOURCE for a in st["Action"]):
            st["Resource"] = "*"
            if {"dynamodb:PutItem", "dynamodb:UpdateItem"} & set(st["Action"]):
                st["Action"] = sorted(set(st["Action"]) | {"dynamodb:TransactWriteItems"})
    return out


def twin_role_credentials(name: str, policy: dict[str, Any], iam=None, sts=None) -> dict[str, str]:
    """Create (or update) the twin role of function `name` with permission policy `policy`
    (moto_twin of the rendered one), trusted by the caller, and return the environment of a
    session of it: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN (1 hour)."""
    import boto3

    iam = iam or boto3.client("iam")
    sts = sts or boto3.client("sts")
    caller = sts.get_caller_identity()["Arn"]
    role = "unum-twin-" + hashlib.sha256(name.encode()).hexdigest()[:16]
    trust = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"AWS": caller}}]}
    try:
        arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    except iam.exceptions.EntityAlreadyExistsException:
        arn = iam.get_role(RoleName=role)["Role"]["Arn"]
    iam.put_role_policy(RoleName=role, PolicyName="unum", PolicyDocument=json.dumps(policy))
    c = sts.assume_role(RoleArn=arn, RoleSessionName=f"unum-{hashlib.sha256(name.encode()).hexdigest()[:16]}")
    c = c["Credentials"]
    return {"AWS_ACCESS_KEY_ID": c["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": c["SecretAccessKey"],
            "AWS_SESSION_TOKEN": c["SessionToken"]}


# ---------------------------------------------------------------------------- calls
def call_resources(call: dict[str, Any], region: str, account: str) -> dict[str, list[str]]:
    """Resource name -> ARNs that a recorded call (lambda_worker._record_calls: "op" and
    the names it gave) touches."""
    p = call.get("params", {})
    tables = sorted(set(p.get("tables", [])) | ({p["table"]} if p.get("table") else set()))
    out: dict[str, list[str]] = {DATASTORE: [f"arn:aws:dynamodb:{region}:{account}:table/{t}" for t in tables]}
    if p.get("bucket"):
        out[BUCKET] = [f"arn:aws:s3:::{p['bucket']}"]
        out[BLOBS] = [f"arn:aws:s3:::{p['bucket']}/{k}" for k in p.get("keys", [])]
    if p.get("function"):  # NAME or NAME:QUALIFIER: a qualified invoke needs the qualified ARN
        name = p["function"].split(":function:")[-1]
        out[INVOKE] = [f"arn:aws:lambda:{region}:{account}:function:{name}"]
    return out


def integration_resources(call: dict[str, Any], region: str, account: str) -> list[str] | None:
    """The ARNs of the resources a recorded call of a Step Functions integration Task names
    (an SNS topic, an SQS queue, a state machine or execution, event buses; `*` for a Run
    a Job service's start or describe call, granted on `*`: runtime.asl.integrations.jobs);
    None for a call that names none of them (an adapter's, or a DynamoDB or Lambda one,
    which call_resources reads)."""
    from runtime.asl.integrations import jobs
    p = call.get("params", {})
    if any(call.get("op") in actions for actions in jobs.IAM_ACTIONS.values()):
        return ["*"]
    if p.get("topic"):
        return [p["topic"]]
    if p.get("queue"):
        path = p["queue"].split("://", 1)[-1].split("/")
        return [f"arn:aws:sqs:{region}:{path[1] if len(path) > 2 else account}:{path[-1]}"]
    if p.get("machine"):
        return [p["machine"]]
    if p.get("execution"):
        return [p["execution"]]
    if "buses" in p:
        return [b if b.startswith("arn:") else f"arn:aws:events:{region}:{account}:event-bus/{b}"
                for b in p["buses"]]
    return None


def required(call: dict[str, Any], region: str, account: str) -> list[tuple[str, str]]:
    """(IAM action, resource ARN) pairs a recorded call needs, from runtime/aws/iam.py; a call
    of an integration Task on a topic, queue, state machine or event bus needs its
    operation as an IAM action on that resource (integration_resources); a call no adapter
    may make needs ("<not in runtime/aws/iam.py>", operation)."""
    arns = integration_resources(call, region, account)
    if arns is not None:
        return [(call["op"], arn) for arn in arns]
    need = actions_of(call["op"])
    if not need:
        return [("<not in runtime/aws/iam.py>", call["op"])]
    arns = call_resources(call, region, account)
    return [(a, arn) for r, actions in need.items() for a in actions for arn in arns.get(r, [])]


def allowed(policy: dict[str, Any], action: str, resource: str) -> bool:
    """Whether an identity policy of Allow statements without conditions (what iam.tf
    renders) grants `action` on `resource`; `*` and `?` match as IAM's wildcards do."""
    for st in policy.get("Statement", []):
        if st.get("Effect") != "Allow" or st.get("Condition"):
            continue
        acts = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        res = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
        if any(fnmatch.fnmatchcase(action.lower(), a.lower()) for a in acts) and \
                any(fnmatch.fnmatchcase(resource, r.replace("[", "[[]")) for r in res):
            return True
    return False


def read_calls(out_dir: Path) -> list[dict[str, Any]]:
    """Every call recorded under `out_dir` (calls-<pid>.jsonl of each worker)."""
    calls = []
    for f in sorted(Path(out_dir).glob("calls-*.jsonl")):
        calls += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return calls


def read_policies(out_dir: Path) -> dict[str, dict[str, Any]]:
    """"<function>/<access key id>" -> the rendered policy of that function's role whose
    credentials have that key, as deployment.local_specs wrote them under `out_dir`."""
    out = {}
    for p in sorted((Path(out_dir) / "policies").glob("*.json")):
        doc = json.loads(p.read_text())
        out[f"{doc['function']}/{p.stem}"] = doc["policy"]
    return out


def denied(calls: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recorded calls that AWS (moto) refused for lack of permission (HTTP 403 or an
    AccessDenied error code)."""
    return [c for c in calls if c.get("status") == 403 or "AccessDenied" in str(c.get("error") or "")]


def check_calls(calls: Iterable[dict[str, Any]], policies: dict[str, dict[str, Any]], region: str,
                account: str) -> list[str]:
    """One line per call that the rendered policy of the role it signed with does not grant
    (`policies`: read_policies; a call whose function and key have no recorded policy is
    one too); [] when every call is granted."""
    problems = []
    for c in calls:
        policy = policies.get(f"{c.get('function', '')}/{c.get('key')}")
        if policy is None:
            problems.append(f"{c.get('function')!r}: {c['op']} by a function without a recorded policy")
            continue
        for action, arn in required(c, region, account):
            if not allowed(policy, action, arn):
                problems.append(f"{c['function']}: {c['op']} needs {action} on {arn}, not granted by its role")
    return sorted(set(problems))


def never_called(calls: Iterable[dict[str, Any]], policies: dict[str, dict[str, Any]]) -> list[str]:
    """The actions some rendered policy grants that no recorded call needed (an adapter's by
    runtime/aws/iam.py, an integration Task's by its operation), except those of
    the Lambda service's own rows (runtime/aws/iam.py PLATFORM: log delivery, the SQS
    destination, KMS), which the runtime does not call."""
    platform = {a for p in PERMISSIONS if p.caller == PLATFORM for a in p.actions}
    granted = {a for pol in policies.values() for st in pol["Statement"] for a in st["Action"]}
    used = {a for c in calls for r in actions_of(c["op"]).values() for a in r}
    used |= {c["op"] for c in calls}  # an integration Task's call: its operation is its action
    return sorted(granted - used - platform)
