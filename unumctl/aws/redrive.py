"""Redrive on the aws target: reopening a session whose `result` lives in its history record.

The DynamoDB datastore keeps a session's `result` inside the session's record of the session
index (runtime/aws/datastore.py "layout", runtime/aws/history.py `index_key`), beside the
start (function, started_at, input) and, for a failure, the end (ended_at, status, error,
cause) that the history writes first-wins (`attribute_not_exists(ended_at)`). Deleting item
`result` would delete the whole record, and the history its start; a redrive
(runtime/redrive.py) therefore removes only the result's value and the end.
"""

from __future__ import annotations

from typing import Any

from runtime.aws.history import index_key

__all__ = ["reopen_record"]

# the result's value (`j`, or `z` compressed: runtime/aws/datastore.py) and the end's attributes
REOPENED = ("j", "z", "ended_at", "status", "error", "cause")


def reopen_record(client: Any, table: str, session: str) -> None:
    """Remove `session`'s result value and end from its record in DynamoDB table `table`
    (`client`: a boto3 DynamoDB client); the start and the expiry stay."""
    names = {f"#a{i}": a for i, a in enumerate(REOPENED)}
    client.update_item(TableName=table, Key=index_key(session),
                       UpdateExpression="REMOVE " + ", ".join(names), ExpressionAttributeNames=names)
