"""RowSum: sum of the squares of one row (fan-in of Cell-UnumIndex-<row>.*)."""


def handler(event, context):
    return sum(event)
