"""Join: fan-in of the branches."""


def handler(event, context):
    return {"steps": list(event)}
