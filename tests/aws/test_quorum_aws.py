"""examples/quorum-replicas (`Quorum: 2` of 3 replicas, docs/ir.md "Quorum") on the AWS adapter
under faults: DynamoDB and S3 from moto_server with IAM enforcement on, each function's BUILT
aws archive run by the local Lambda emulator with its role's credentials, and every AWS call
checked against the rendered policy (conftest `aws_calls`). The plain run is
tests/aws/test_examples_aws.py::test_example_runs_on_aws_adapter[quorum-replicas]."""

from __future__ import annotations

import pytest

from runtime.faults import FaultSpec

from unumctl_testing.apps import EXAMPLES, expected_of
from .test_examples_aws import run_example


@pytest.mark.aws_long  # 17-27 s on this machine: run by `make test-aws-all`
@pytest.mark.campaign
def test_quorum_under_duplicates_and_kills_on_aws_path(moto_env, tmp_path):
    """Duplicate deliveries and killed executions at the Invoke server (a replica killed after
    claiming its slot is redelivered and fires from its slot): each session's result is the
    agreed answer of two different replicas in quorum order, and only what expires is left.
    (Which two depends on the faults: a fast replica killed before its commit is redelivered
    after Lambda's retry delay, and the slow one may then commit second.)"""
    example = EXAMPLES / "quorum-replicas"
    faults = FaultSpec.parse("seed=3,duplicate=0.3,kill=0.2,max_kill_ms=40")
    _, items, sids, left, stats = run_example(example, moto_env, tmp_path, faults, sessions=3)
    assert stats.get("duplicated", 0) > 0 and stats.get("crashes", 0) > 0, stats
    answer = {k: v for k, v in expected_of(example).items() if k not in ("$ignore", "replicas", "order")}
    for item in items:
        assert item["status"] == "SUCCEEDED", item
        v = item["v"]
        assert {k: v[k] for k in answer} == answer, v
        assert len(set(v["replicas"])) == 2 and sorted(v["order"]) == v["replicas"], v
    assert left == sorted((s, "result") for s in sids)
