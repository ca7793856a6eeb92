"""`AwsTarget.invoke` starts a session with the payload of the session contract
(runtime.session.entry_payload) that the deployed entry decodes: a small input inline, one
over Lambda's async payload limit by reference through S3 (`payload/input`). DynamoDB and
S3 are moto_server's; the entry function is the BUILT aws archive run by the local Lambda
Invoke emulator (runtime/aws unpatched); only the Terraform outputs are given directly. The
emulator does not enforce the 256 KB async limit, so the test reads what was sent from the
real boto3 client's request events."""

from __future__ import annotations

import json
import uuid

from runtime.aws.invoker import LambdaInvoker
from unumctl.deploy.appgraph import deployment
from unumctl.aws.target import AwsTarget
from unumctl.manifest import load_app
from unumctl_testing.aws.deployment import create_datastore_for_tests, local_specs
from unumctl.emulate.aws.local_lambda import LocalLambda

from ..helpers import make_app
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
    large = "abc" + "x" * LambdaInvoker.max_payload_bytes
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
        results = [target.invoke(value, True, 120) for value in ("abcd", large)]
        emu.wait_idle(60)
    assert len(sent) == 2 and len(sent[1]) < 1024, [len(s) for s in sent]
    assert [json.loads(s)["Data"]["Source"] for s in sent] == ["http", "blob"]
    for (session, item), value in zip(results, ("abcd", large)):
        assert item is not None, f"no result for session {session}"
        assert item["status"] == "SUCCEEDED", item
        assert item["v"] == {"n": len(value), "head": "abc"}
