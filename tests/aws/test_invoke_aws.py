"""`AwsTarget.invoke` starts a session with the payload of the session contract
(runtime.session.entry_payload) that the deployed entry decodes: a small input inline, one
over Lambda's async payload limit by reference through S3 (`payload/input`). DynamoDB and
S3 are moto_server's; the entry function is the BUILT aws archive run by the local Lambda
Invoke emulator (runtime/aws unpatched); only the Terraform outputs are given directly. The
emulator does not enforce Lambda's async limit (1 MB, runtime/aws/invoker.py), so the test
reads what was sent from the real boto3 client's request events: values up to
`LambdaInvoker.max_payload_bytes` (1 MB less a 16 KB envelope; 240 KB before 2026-11)
go inline, one byte more goes by reference."""

from __future__ import annotations

import json
import uuid

from runtime.aws.invoker import ASYNC_PAYLOAD_LIMIT, LambdaInvoker
from unumctl.pipeline import deployment
from unumctl.aws.target import AwsTarget
from unumctl.pipeline import load as load_app
from unumctl_testing.aws.deployment import create_datastore_for_tests, local_specs
from unumctl.aws.emulate.local_lambda import LocalLambda

from unumctl_testing.apps import make_app
from .conftest import aws_env

SIZE = """
def handler(event, context):
    return {"n": len(event), "head": event[:3]}
"""


def test_invoke_passes_small_inputs_inline_and_large_ones_by_reference(moto_env, tmp_path, monkeypatch):
    app = load_app(make_app(tmp_path / "app", "inv-aws", {"Size": ({"Start": True}, SIZE)}))
    dep = deployment(app, "aws")
    table = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(table, bucket)
    specs = local_specs(dep, table, bucket, tmp_path / "bundles")
    limit = LambdaInvoker.max_payload_bytes
    # JSON strings: the value's payload bytes are its length + 2 quotes
    mid = "abc" + "x" * (600_000 - 3)               # 600 KB: by reference under the former 256 KB
    edge = "abc" + "x" * (limit - 2 - 3)            # exactly at the limit: inline
    large = "abc" + "x" * (limit - 2 - 3 + 1)       # one byte over: by reference
    values = ("abcd", mid, edge, large)
    with LocalLambda(specs, aws_env(moto_env)) as emu:
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", emu.url)
        target = AwsTarget(app)
        monkeypatch.setattr(target, "outputs", lambda: {"entry_function": dep.entry, "table": table,
                                                         "bucket": bucket})
        sent: list[bytes] = []
        make_client = target.client

        def client(service):
            c = make_client(service)
            if service == "lambda":
                c.meta.events.register("provide-client-params.lambda.Invoke",
                                       lambda params, **kw: sent.append(params["Payload"]))
            return c
        monkeypatch.setattr(target, "client", client)
        results = [target.invoke(value, True, 120) for value in values]
        emu.wait_idle(60)
    assert len(sent) == 4 and len(sent[3]) < 1024, [len(s) for s in sent]
    assert [json.loads(s)["Data"]["Source"] for s in sent] == ["http", "http", "http", "blob"]
    assert max(len(s) for s in sent) <= ASYNC_PAYLOAD_LIMIT
    assert 1_000_000 - 16 * 1024 <= limit < 1_000_000  # Lambda Invoke, asynchronous: 1 MB
    for (session, item), value in zip(results, values):
        assert item is not None, f"no result for session {session}"
        assert item["status"] == "SUCCEEDED", item
        assert item["v"] == {"n": len(value), "head": "abc"}
