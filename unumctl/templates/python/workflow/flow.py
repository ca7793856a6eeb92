"""A Python workflow (docs/python.md): split -> square once per number (a Map) -> total
(the fan-in of the squares, in input order). `unumctl compile .` shows the IR it becomes."""
from runtime.flow import step, workflow


@step
def split(event) -> list:
    """{"numbers": [number]} -> the list (each item runs one square)."""
    numbers = event["numbers"]
    if not isinstance(numbers, list):
        raise ValueError("numbers must be a list")
    return numbers


@step(retry={"max_attempts": 2})
def square(event):
    """One number -> its square."""
    return event * event


@step
def total(event):
    """The squares, in the order of the input -> {"squares", "sum"}."""
    return {"squares": list(event), "sum": sum(event)}


@workflow
def main(doc):
    return total(split(doc).map(square))
