"""The optimized Bedrock integration (runtime/asl/integrations/bedrock.py):
`bedrock:invokeModel` walked in place against moto's in-process bedrock-runtime, the S3
forms refused naming the state, and the grant on the foundation model."""

from __future__ import annotations

import pytest

from runtime.asl.integrations import registry
from tests.runtime.asl.conftest import walk


def test_bedrock_invoke_model_sends_the_body_as_json_and_parses_the_response(moto):
    """bedrock:invokeModel against moto's bedrock-runtime: {Body, ContentType}; moto answers
    `{}` for any model, so the parsed Body is an object."""
    out, _ = walk("arn:aws:states:::bedrock:invokeModel",
                  {"ModelId": "anthropic.claude-v2", "Body": {"prompt": "Hello", "max_tokens_to_sample": 20}})
    assert out == {"Body": {}, "ContentType": "application/json"}


def test_bedrock_s3_input_is_refused_naming_the_state(moto):
    from runtime.asl.errors import AslError
    with pytest.raises(AslError) as err:
        walk("arn:aws:states:::bedrock:invokeModel", {"ModelId": "m", "Input": {"S3Uri": "s3://b/k"}})
    assert err.value.error == "States.Runtime" and "state 'Job': bedrock:invokeModel's Input" in err.value.cause


def test_bedrock_grant_names_the_foundation_model():
    from runtime.asl.integrations.iam import statements
    target = registry.find("arn:aws:states:::bedrock:invokeModel")
    st = statements(target, {"Parameters": {"ModelId": "anthropic.claude-v2"}}, False)
    assert [(s.actions, s.resources) for s in st] == [
        (("bedrock:InvokeModel",), ("arn:{partition}:bedrock:{region}::foundation-model/anthropic.claude-v2",))]
    st = statements(target, {"Parameters": {"ModelId.$": "$.model"}}, False)
    assert st[0].resources == ("*",)
