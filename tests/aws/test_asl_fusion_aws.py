"""Issue 25: a fused compiled Step Functions Task chain runs on the AWS adapter (moto_server
for DynamoDB and S3, Lambda Invoke served by the local emulator running each BUILT aws
archive through its Lambda handler): the head's archive carries the member's code
(unum_fused/<Member>/), runtime.bundle gives its wrapper the member's handler, and the
result equals the expected output with one execution fewer."""

from __future__ import annotations

from unumctl.pipeline import load as load_app
from unumctl.tuning import colocate

from unumctl_testing.apps import ROOT, expected_of, matches_expected
from .test_examples_aws import run_example


def test_fused_compiled_chain_on_aws_adapter(moto_env, tmp_path):
    example = ROOT / "examples" / "text-processing-sfn"
    app = colocate.apply(load_app(example), [["FindUrl", "ShortenUrl"]])
    _, items, sids, left, stats = run_example(example, moto_env, tmp_path, app=app)
    assert items[0]["status"] == "SUCCEEDED", items[0]
    assert matches_expected(items[0]["v"], expected_of(example))
    assert left == [(sids[0], "result")]
    # Ingest, UserMention, FindUrl (running ShortenUrl's Task), CreatePost, Publish
    assert stats.get("executions") == 5, stats
