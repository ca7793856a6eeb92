"""Total: the squares, in the order of the input -> {"squares", "sum"}."""


def handler(event, context):
    return {"squares": list(event), "sum": sum(event)}
