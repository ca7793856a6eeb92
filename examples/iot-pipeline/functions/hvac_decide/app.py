"""HvacDecide: pick the HVAC setting for the next period from the aggregated load.

Deterministic rule (power in the units of the readings):

* average >= 150                  -> "power-save": setpoint 27 C, fan low
* average >= 75 or max >= 200     -> "eco":        setpoint 25 C, fan auto
* otherwise                       -> "comfort":    setpoint 22 C, fan auto

The decision object is the workflow's result.
"""

RULES = [
    # (mode, setpoint in C, fan, predicate, reason)
    ("power-save", 27, "low", lambda a: a["average"] >= 150, "average load >= 150"),
    ("eco", 25, "auto", lambda a: a["average"] >= 75 or a["max"] >= 200,
     "average load >= 75 or peak >= 200"),
    ("comfort", 22, "auto", lambda a: True, "load is low"),
]


def handler(event, context):
    for mode, setpoint, fan, applies, reason in RULES:
        if applies(event):
            return {
                "mode": mode,
                "setpoint_c": setpoint,
                "fan": fan,
                "reason": reason,
                "average": event["average"],
                "peak": event["max"],
                "peak_time": event["peak_time"],
                "period": {"start": event["start"], "end": event["end"]},
                "readings": event["count"],
            }
