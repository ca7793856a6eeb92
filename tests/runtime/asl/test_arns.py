"""The region and account the ASL context object reports (runtime/asl/arns.py)."""

from runtime.asl.arns import (DEFAULT_STATES_ARN, STATES_ARN_ENV, role_arn, states_arn_of_function,
                              states_arn_prefix)


def test_states_arn_from_a_lambda_function_arn():
    assert states_arn_of_function("arn:aws:lambda:eu-west-1:123456789012:function:F") == \
        "arn:aws:states:eu-west-1:123456789012"
    assert states_arn_of_function("arn:aws-cn:lambda:cn-north-1:123456789012:function:F:live") == \
        "arn:aws-cn:states:cn-north-1:123456789012"
    for bad in (None, 42, "", "arn:aws:lambda:eu-west-1:1234:function:F",
                "arn:aws:s3:::bucket", "arn:aws:lambda:eu-west-1:123456789012:function:F:a:b"):
        assert states_arn_of_function(bad) is None, bad


def test_prefix_from_the_environment_or_the_default(monkeypatch):
    monkeypatch.delenv(STATES_ARN_ENV, raising=False)
    assert states_arn_prefix() == DEFAULT_STATES_ARN
    monkeypatch.setenv(STATES_ARN_ENV, "arn:aws:states:eu-west-2:123456789012")
    assert states_arn_prefix() == "arn:aws:states:eu-west-2:123456789012"
    assert role_arn(states_arn_prefix()) == "arn:aws:iam::123456789012:role/unum"
    monkeypatch.setenv(STATES_ARN_ENV, "arn:aws:states:eu-west-2:123456789012:execution:x")  # not a prefix
    assert states_arn_prefix() == DEFAULT_STATES_ARN
