"""IoT pipeline (examples/iot-pipeline) as Python: Aggregate -> HvacDecide, a chain of two
steps compiled to the same IR (docs/python.md)."""
from runtime.flow import step, workflow

RULES = [
    # (mode, setpoint in C, fan, predicate, reason)
    ("power-save", 27, "low", lambda a: a["average"] >= 150, "average load >= 150"),
    ("eco", 25, "auto", lambda a: a["average"] >= 75 or a["max"] >= 200,
     "average load >= 75 or peak >= 200"),
    ("comfort", 22, "auto", lambda a: True, "load is low"),
]


@step(timeout=30)
def aggregate(event) -> dict:
    """Summarise readings ``[{"<ISO timestamp>": <power>}, ...]``: count, total, average,
    min, max (rounded to 3 decimals), the time of the peak and the covered time range."""
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
    return {"count": len(values), "start": readings[0][0], "end": readings[-1][0],
            "total": round(total, 3), "average": round(total / len(values), 3),
            "min": round(min(values), 3), "max": round(peak, 3), "peak_time": peak_time}


@step(timeout=30)
def hvac_decide(event) -> dict:
    """The HVAC setting for the next period: the first of RULES that applies to the
    aggregate (average >= 150: power-save; average >= 75 or peak >= 200: eco; else comfort)."""
    for mode, setpoint, fan, applies, reason in RULES:
        if applies(event):
            return {"mode": mode, "setpoint_c": setpoint, "fan": fan, "reason": reason,
                    "average": event["average"], "peak": event["max"], "peak_time": event["peak_time"],
                    "period": {"start": event["start"], "end": event["end"]}, "readings": event["count"]}
    raise ValueError("no rule applies")


@workflow
def iot_pipeline(readings):
    return hvac_decide(aggregate(readings))
