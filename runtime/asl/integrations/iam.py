"""The IAM statements an integration Task needs in the role of the function that runs it.

Source: AWS Step Functions developer guide, "IAM policies for integrated services"
(https://docs.aws.amazon.com/step-functions/latest/dg/service-integration-iam-templates.html)
and its per-service pages, which give the policy Step Functions generates for a Task:
"Static resources" (the resource the Task names in its definition: a table, topic, queue,
event bus, state machine, function) and "Dynamic resources" (`"Resource": "*"`, when the
Task chooses it at run time from its input):
DynamoDB https://docs.aws.amazon.com/step-functions/latest/dg/dynamo-iam.html,
SNS https://docs.aws.amazon.com/step-functions/latest/dg/sns-iam.html,
SQS https://docs.aws.amazon.com/step-functions/latest/dg/sqs-iam.html,
EventBridge https://docs.aws.amazon.com/step-functions/latest/dg/eventbridge-iam.html,
Step Functions https://docs.aws.amazon.com/step-functions/latest/dg/stepfunctions-iam.html,
Lambda https://docs.aws.amazon.com/step-functions/latest/dg/lambda-iam.html.

`statements(state, jsonata)` -> [Statement(actions, resources)] for one Task state. A
resource is an ARN template whose `{partition}`, `{region}` and `{account}` the renderer
fills in (terraform/modules/aws-unum-function/iam.tf, from the provider's partition,
region and caller identity), or `*` when the Task names it dynamically (a `.$` field, a
JSONata `{% %}` expression) or when the family cannot tell it from the request (the generic
aws-sdk integration: each service's ARN format differs). Each family module supplies
`iam_statements(action, fields)`; `fields` is a `Fields` of the Task's Parameters
(JSONPath) or Arguments (JSONata).
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["ANY", "PARTITION", "REGION", "Statement", "arn", "statements"]

PARTITION, REGION, ACCOUNT = "{partition}", "{region}", "{account}"
ANY = "*"


class Statement(NamedTuple):
    """One Allow statement: `actions` (IAM actions, sorted) on `resources` (ARN templates
    or ["*"])."""

    actions: tuple[str, ...]
    resources: tuple[str, ...]


class Fields:
    """The static values of a Task's request: `get(key)` is the string the definition
    writes for `key`, or None when the key is absent, is a JSONPath `key.$` field, a JSONata
    expression or not a string; `items(key)` is a Fields per object of a list written
    literally, or None when the list is dynamic."""

    def __init__(self, args: Any, jsonata: bool):
        self.args = args if isinstance(args, dict) else {}
        self.jsonata = jsonata
        self.dynamic = not isinstance(args, dict) and args is not None

    def _literal(self, v: Any) -> bool:
        return not (self.jsonata and isinstance(v, str) and v.startswith("{%") and v.endswith("%}"))

    def get(self, key: str) -> str | None:
        """The static string value of `key`, else None."""
        v = self.args.get(key)
        return v if isinstance(v, str) and self._literal(v) else None

    def present(self, key: str) -> bool:
        """True when the request names `key` at all (statically or dynamically)."""
        return self.dynamic or key in self.args or f"{key}.$" in self.args

    def items(self, key: str) -> list[Fields] | None:
        """A Fields per element of the literal list `key`, else None (dynamic)."""
        v = self.args.get(key)
        if not isinstance(v, list) or f"{key}.$" in self.args:
            return None
        return [Fields(x, self.jsonata) for x in v] if all(isinstance(x, dict) for x in v) else None


def arn(service: str, rest: str, region: str = REGION, account: str = ACCOUNT) -> str:
    """`arn:{partition}:<service>:<region>:<account>:<rest>` (templates by default)."""
    return f"arn:{PARTITION}:{service}:{region}:{account}:{rest}"


def statements(target: Any, state: dict[str, Any], jsonata: bool) -> list[Statement]:
    """The statements Task `state` (integration `target`: runtime.asl.integrations.Target)
    needs; its actions are those of `integrations.iam_actions(target)`."""
    args = state.get("Arguments") if jsonata else state.get("Parameters")
    fields = Fields(args, jsonata)
    fam = target.family
    if hasattr(fam, "iam_statements"):
        out = fam.iam_statements(target.action, fields)
    else:
        out = [Statement(tuple(fam.IAM_ACTIONS.get(target.action, [])), (ANY,))]
    return [Statement(tuple(sorted(set(s.actions))), tuple(sorted(set(s.resources)))) for s in out if s.actions]
