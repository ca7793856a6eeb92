"""The emulated Lambda (unumctl/aws/emulate/: MotoLambda in front of moto_server) runs a
function with the memory its CreateFunction configured: context.memory_limit_in_mb and the
REPORT line's `Memory Size` in its CloudWatch log say 256 for a 256 MB function, as Lambda's
AWS_LAMBDA_FUNCTION_MEMORY_SIZE does, and 128 (Lambda's default) for one created without."""

from __future__ import annotations

import io
import json
import time
import zipfile
from pathlib import Path

import boto3

from unumctl.aws.emulate.lambda_front import MotoLambda
from unumctl.aws.emulate.moto_local import aws_env, moto_server
from unumctl.pipeline import deployment
from unumctl.pipeline import load as load_app
from unumctl_testing.apps import make_app

HANDLER = "import os\ndef handler(e, c):\n    return {'ctx': c.memory_limit_in_mb, 'env': os.environ['AWS_LAMBDA_FUNCTION_MEMORY_SIZE']}\n"


def _zip(tmp_path) -> bytes:
    """A built function archive (runtime/ bundled, as `unumctl apply` uploads it) plus mem.py."""
    app = load_app(make_app(tmp_path / "app", "emu-mem", {"Mem": ({"Start": True}, HANDLER)}))
    base = Path(deployment(app, "aws").function("Mem").zip_path).read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(base)) as src, zipfile.ZipFile(buf, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item))
        dst.writestr("mem.py", HANDLER)
    return buf.getvalue()


def _report_lines(logs, name: str, timeout: float = 30) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            events = logs.filter_log_events(logGroupName=f"/aws/lambda/{name}")["events"]
        except logs.exceptions.ResourceNotFoundException:
            events = []
        lines = [e["message"] for e in events if e["message"].startswith("REPORT RequestId: ")]
        if lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.2)


def test_emulated_lambda_reports_the_configured_memory_size(tmp_path):
    archive = _zip(tmp_path)
    with moto_server() as url, MotoLambda(url, tmp_path / "emu") as front:
        kw = {k.lower(): v for k, v in aws_env(url).items() if k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
        iam = boto3.client("iam", endpoint_url=url, region_name="us-east-1", **kw)
        role = iam.create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        lam = boto3.client("lambda", endpoint_url=front.url, region_name="us-east-1", **kw)
        logs = boto3.client("logs", endpoint_url=url, region_name="us-east-1", **kw)
        lam.create_function(FunctionName="big", Runtime="python3.11", Role=role, Handler="mem.handler",
                            MemorySize=256, Code={"ZipFile": archive})
        lam.create_function(FunctionName="plain", Runtime="python3.11", Role=role, Handler="mem.handler",
                            Code={"ZipFile": archive})
        big = json.loads(lam.invoke(FunctionName="big", Payload=b"{}")["Payload"].read())
        plain = json.loads(lam.invoke(FunctionName="plain", Payload=b"{}")["Payload"].read())
        front.wait_idle(30)
        big_report, plain_report = _report_lines(logs, "big"), _report_lines(logs, "plain")
    assert big == {"ctx": "256", "env": "256"}
    assert plain == {"ctx": "128", "env": "128"}
    assert len(big_report) == 1 and "\tMemory Size: 256 MB\t" in big_report[0], big_report
    assert len(plain_report) == 1 and "\tMemory Size: 128 MB\t" in plain_report[0], plain_report
