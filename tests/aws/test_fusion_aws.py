"""Issue 25: fused and batched bundles run on the AWS adapter (moto_server for DynamoDB and
S3, Lambda Invoke served by the local emulator running each BUILT aws archive through its
Lambda handler): the fused head's archive carries its members' code (unum_fused/<Member>/)
and the result equals the expected output."""

from __future__ import annotations

from unumctl.pipeline import load as load_app
from unumctl.tuning import colocate

from unumctl_testing.apps import ROOT, expected_of, matches_expected
from .test_examples_aws import run_example


def test_fused_and_batched_wordcount_on_aws_adapter(moto_env, tmp_path):
    example = ROOT / "examples" / "wordcount"
    app = colocate.apply(load_app(example), [["Split", "Mapper", "Partition"]], {"Reducer": 3})
    _, items, sids, left, stats = run_example(example, moto_env, tmp_path, app=app)
    assert items[0]["status"] == "SUCCEEDED", items[0]
    assert matches_expected(items[0]["v"], expected_of(example))
    assert left == [(sids[0], "result")]
    # Split (its 8 Mappers and Partition inside), 2 batched Reducer branches (4 items by 3), Summary
    assert stats.get("executions") == 4, stats


def test_fused_parallel_region_text_processing_on_aws_adapter(moto_env, tmp_path):
    """The whole Parallel region of text-processing (and Publish) in one invocation of Ingest
    on the AWS adapter: the expected result, one execution, only the result left."""
    example = ROOT / "examples" / "text-processing"
    app = colocate.apply(load_app(example),
                         [["Ingest", "UserMention", "FindUrl", "ShortenUrl", "CreatePost", "Publish"]])
    _, items, sids, left, stats = run_example(example, moto_env, tmp_path, app=app)
    assert items[0]["status"] == "SUCCEEDED", items[0]
    assert matches_expected(items[0]["v"], expected_of(example))
    assert left == [(sids[0], "result")]
    assert stats.get("executions") == 1, stats
