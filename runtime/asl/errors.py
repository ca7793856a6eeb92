"""ASL runtime errors (ASL spec "Errors": States.ALL, States.TaskFailed, States.Runtime, ...)."""

from __future__ import annotations


class AslError(Exception):
    """An ASL error with its `error` name (e.g. 'States.Runtime', 'CustomException') and
    `cause` text (for Lambda errors a JSON string as Lambda reports it)."""

    def __init__(self, error: str | None, cause: str | None = None):
        super().__init__(f"{error}: {cause}")
        self.error = error
        self.cause = cause


def matches(error_equals: list[str], error: str | None) -> bool:
    """ErrorEquals matching (ASL spec "Retrying after error" / "Fallback states"):
    `States.ALL` matches every error, `States.TaskFailed` every error but States.Timeout."""
    for name in error_equals:
        if name == "States.ALL" or name == error:
            return True
        if name == "States.TaskFailed" and error != "States.Timeout":
            return True
    return False
