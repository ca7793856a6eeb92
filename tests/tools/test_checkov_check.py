"""The checkov gate of issue 11 item 6 (tools/checkov_check.py, terraform/checkov-accepted.yaml):
the list is well formed and published unchanged in docs/security.md; the comparison fails on
an unlisted finding, on a stale accepted entry and on a fixed check that fails again; and,
with the real checkov of `make checkov`, a rendered example with a security setting removed
is caught."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tools import checkov_check as cc

from unumctl_testing.apps import EXAMPLES


def test_list_is_well_formed_and_published_in_the_docs():
    lists = cc.load_list()
    assert lists["accepted"] and lists["fixed"]
    for e in lists["accepted"] + lists["fixed"]:
        assert re.fullmatch(r"CKV2?_(AWS|GCP)_\d+", e["check"]), e
        assert re.fullmatch(r"(root|[a-z-]+)/[a-z0-9_]+\.[a-z0-9_]+", e["where"]), e
    text = cc.DOCS.read_text()
    assert cc.docs_text(lists, text) == text, "run: python tools/checkov_check.py --write-docs"
    for e in lists["accepted"]:  # every reason reaches the reader
        assert " ".join(e["reason"].split()) in text


def test_list_refuses_an_entry_without_reason(tmp_path):
    p = tmp_path / "l.yaml"
    p.write_text("accepted:\n  - check: CKV_AWS_1\n    where: root/a.b\n")
    with pytest.raises(ValueError, match=r"accepted\[0\]: missing reason"):
        cc.load_list(p)


def test_where_strips_module_calls_and_names_the_module():
    rec = {"file_path": "/aws/wordcount/modules/aws-unum-function/main.tf",
           "resource": "module.fn_Mapper.aws_lambda_function.this"}
    assert cc.where_of(rec) == "aws-unum-function/aws_lambda_function.this"
    assert cc.where_of({"file_path": "/gcp/x/main.tf", "resource": "google_pubsub_topic_iam_member.p"}) \
        == "root/google_pubsub_topic_iam_member.p"


def test_compare_fails_on_unlisted_stale_and_regressed():
    lists = {"accepted": [{"check": "CKV_A", "where": "m/t.a", "reason": "r"},
                          {"check": "CKV_B", "where": "m/t.b", "reason": "r"}],
             "fixed": [{"check": "CKV_F", "where": "m/t.f", "how": "h"}]}
    ok = cc.compare({("CKV_A", "m/t.a"), ("CKV_B", "m/t.b")}, {("CKV_F", "m/t.f")}, lists)
    assert ok == []
    bad = cc.compare({("CKV_A", "m/t.a"), ("CKV_N", "m/t.n"), ("CKV_F", "m/t.f")}, set(), lists, 1)
    assert len(bad) == 4
    assert "CKV_N on m/t.n: new checkov finding" in bad[0]
    assert "CKV_B on m/t.b: accepted" in bad[1] and "no longer reported" in bad[1]
    assert bad[2] == "CKV_F on m/t.f: listed as fixed but fails"
    assert "could not parse 1" in bad[3]


def _checkov() -> Path:
    if not cc.DEFAULT_CHECKOV.exists():
        pytest.skip("checkov not installed: run `make checkov` (make test does)")
    return cc.DEFAULT_CHECKOV


@pytest.mark.slow  # runs checkov, which `make test` installs (docs/testing.md)
def test_real_checkov_catches_a_removed_setting(tmp_path):
    """One example rendered for both clouds: as rendered, checkov reports only accepted
    findings; with the GCP bucket's public access prevention and the Lambda reserved
    concurrency argument removed, the gate reports the new finding and the regressed fix."""
    checkov = _checkov()
    # wordcount shows every module's findings, window-campaigns the root's window schedule
    cc.render_examples(tmp_path, [EXAMPLES / "wordcount", EXAMPLES / "window-campaigns"])
    lists = cc.load_list()
    failed, passed, errors = cc.findings(cc.run_checkov(checkov, tmp_path))
    assert errors == 0
    assert cc.compare(failed, passed, lists) == []
    assert len(failed) >= 10  # checkov really ran on both clouds
    for cloud in ("aws", "gcp"):  # the rest regresses wordcount alone
        shutil.rmtree(tmp_path / cloud / "window-campaigns")

    gcp_ds = tmp_path / "gcp/wordcount/modules/gcp-unum-datastore/main.tf"
    text = gcp_ds.read_text()
    assert 'public_access_prevention    = "enforced"' in text
    gcp_ds.write_text(text.replace('public_access_prevention    = "enforced"', ""))
    aws_fn = tmp_path / "aws/wordcount/modules/aws-unum-function/main.tf"
    text = aws_fn.read_text()
    assert "reserved_concurrent_executions = var.reserved_concurrent_executions" in text
    aws_fn.write_text(text.replace("reserved_concurrent_executions = var.reserved_concurrent_executions", ""))
    shutil.rmtree(tmp_path / "aws/wordcount/.terraform", ignore_errors=True)
    failed, passed, _ = cc.findings(cc.run_checkov(checkov, tmp_path))
    problems = cc.compare(failed, passed, lists)
    assert any(p.startswith("CKV_GCP_114 on gcp-unum-datastore/google_storage_bucket.")
               and "new checkov finding" in p for p in problems), problems
    assert "CKV_AWS_115 on aws-unum-function/aws_lambda_function.this: listed as fixed but fails" in problems
