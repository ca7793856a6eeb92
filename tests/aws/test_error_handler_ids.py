"""The AWS on-failure destination handler checks the session id before it reaches a key."""

from runtime.aws.entry import error_handler


def test_error_handler_ignores_an_unsafe_session_id(capsys):
    record = {"requestContext": {"functionArn": "arn:aws:lambda:us-east-1:1:function:app-A",
                                 "approximateInvokeCount": 3},
              "requestPayload": {"Session": "../../etc", "Data": {"Source": "http", "Value": 1}}}
    assert error_handler(record) == {"action": "ignored"}
    assert "is not valid" in capsys.readouterr().err
