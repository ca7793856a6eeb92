"""`integrations.resources`: the AWS resources a local run creates on the embedded emulator
(unumctl.local.emulator) before its first session, so that an app's service integration
Tasks find them (moto's server starts empty with every emulator). Created by
unumctl/local/resources.py; docs/local.md "Resources on the embedded emulator".

    integrations:
      resources:
        dynamodb_tables:
          - TableName: orders
            KeySchema: [{AttributeName: pk, KeyType: HASH}]
            AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
        s3_buckets: [orders-archive]
        sqs_queues: [orders-events]

A table is written as DynamoDB's CreateTable request writes it, the members unumctl accepts
being the key (the table is created on-demand, BillingMode PAY_PER_REQUEST): `TableName`,
`KeySchema` (one or two KeySchemaElement: AttributeName and KeyType, exactly one HASH,
the partition key, and at most one RANGE, the sort key) and `AttributeDefinitions` (one
AttributeDefinition per key attribute: AttributeName and AttributeType S, N or B; every
KeySchema attribute defined there). Sources (Amazon DynamoDB API Reference):
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_CreateTable.html,
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_KeySchemaElement.html,
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_AttributeDefinition.html.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

__all__ = ["LocalResources"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _name(v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise ValueError(f"{str(v)[:40]!r} must be a non-empty string")
    return v


Name = Annotated[str, BeforeValidator(_name)]


class KeySchemaElement(_Strict):
    """One key attribute (API_KeySchemaElement: AttributeName, KeyType HASH | RANGE)."""

    AttributeName: Name
    KeyType: Literal["HASH", "RANGE"]


class AttributeDefinition(_Strict):
    """A key attribute's type (API_AttributeDefinition: AttributeType S | N | B)."""

    AttributeName: Name
    AttributeType: Literal["S", "N", "B"]


class DynamoDBTable(_Strict):
    """A table to create (the CreateTable members TableName, KeySchema, AttributeDefinitions).
    Raises ValueError naming the fix for a key schema CreateTable would refuse."""

    TableName: Name
    KeySchema: list[KeySchemaElement] = Field(min_length=1, max_length=2)
    AttributeDefinitions: list[AttributeDefinition] = Field(min_length=1)

    @model_validator(mode="after")
    def _keys(self) -> "DynamoDBTable":
        kinds = [k.KeyType for k in self.KeySchema]
        if kinds.count("HASH") != 1 or kinds[0] != "HASH":
            raise ValueError(f"table {self.TableName!r}: KeySchema must start with exactly one "
                             "KeyType HASH (the partition key), then at most one RANGE (the sort key)")
        defined = {a.AttributeName for a in self.AttributeDefinitions}
        missing = [k.AttributeName for k in self.KeySchema if k.AttributeName not in defined]
        if missing:
            raise ValueError(f"table {self.TableName!r}: key attribute {missing[0]!r} has no entry in "
                             f"AttributeDefinitions (add {{AttributeName: {missing[0]}, AttributeType: S}})")
        return self

    def request(self) -> dict[str, Any]:
        """boto3 `create_table` keyword arguments (on-demand billing)."""
        return {"TableName": self.TableName, "BillingMode": "PAY_PER_REQUEST",
                "KeySchema": [k.model_dump() for k in self.KeySchema],
                "AttributeDefinitions": [a.model_dump() for a in self.AttributeDefinitions]}


class LocalResources(_Strict):
    """`integrations.resources`: DynamoDB tables, S3 bucket names and SQS queue names."""

    dynamodb_tables: list[DynamoDBTable] = Field(default_factory=list)
    s3_buckets: list[str] = Field(default_factory=list)
    sqs_queues: list[str] = Field(default_factory=list)

    @field_validator("s3_buckets", "sqs_queues", mode="before")
    @classmethod
    def _names(cls, v: Any) -> Any:
        if v is None:
            return []
        if not isinstance(v, list):
            raise ValueError(f"{str(v)[:40]!r} must be a list of names, e.g. [orders]")
        return [_name(x) for x in v]

    def __bool__(self) -> bool:
        return bool(self.dynamodb_tables or self.s3_buckets or self.sqs_queues)
