"""Aggregate: summarise a batch of power readings.

Input: the raw readings, a list of one-entry objects ``{"<ISO timestamp>": <power>}``
(the format of the Unum paper's IoT pipeline data). Output: count, total, average,
min and max of the readings, the time of the peak and the covered time range.
"""


def handler(event, context):
    readings = []
    for entry in event:
        if not isinstance(entry, dict) or len(entry) != 1:
            raise ValueError("each reading must be a one-entry object {timestamp: value}")
        (timestamp, value), = entry.items()
        readings.append((timestamp, float(value)))
    if not readings:
        raise ValueError("no readings")
    readings.sort()  # ISO timestamps sort chronologically
    values = [v for _, v in readings]
    peak_time, peak = max(readings, key=lambda r: r[1])
    total = sum(values)
    return {
        "count": len(values),
        "start": readings[0][0],
        "end": readings[-1][0],
        "total": round(total, 3),
        "average": round(total / len(values), 3),
        "min": round(min(values), 3),
        "max": round(peak, 3),
        "peak_time": peak_time,
    }
