"""Split: {"numbers": [number]} -> the list (each item runs one Square)."""


def handler(event, context):
    numbers = event["numbers"]
    if not isinstance(numbers, list):
        raise ValueError("numbers must be a list")
    return numbers
