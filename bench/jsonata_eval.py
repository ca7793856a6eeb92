"""Cost of JSONata in the Step Functions front-end (runtime/asl/jsonata.py, jsonata-python).

    python bench/jsonata_eval.py [--n N] [--json]

Measures, in microseconds per evaluation (median of 5 rounds of N evaluations each):
  compile:   parsing a typical Task `Arguments` template expression (no cache);
  cached:    evaluating it with `$states` and two variables bound (compile cache hit);
  template:  `render` of a whole Arguments object with four `{% %}` fields (cached);
  jsonpath:  the equivalent JSONPath `Parameters` template (runtime/asl/paths.render), for
             comparison;
  pass_state: one JSONata Pass state with Output and Assign run by the Machine.
Nothing is asserted; docs/stepfunctions.md quotes the numbers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jsonata import Jsonata  # noqa: E402

from runtime.asl import intrinsics, jsonata, paths  # noqa: E402
from runtime.asl.machine import Machine  # noqa: E402

EXPR = "{ 'order': $states.input.order.id, 'total': $sum($states.input.order.lines.(qty * price)) + $fee, 'who': $customer }"
TEMPLATE = {"FunctionName": "arn:aws:lambda:us-east-1:000000000000:function:charge",
            "Payload": {"order": "{% $states.input.order.id %}",
                        "total": "{% $sum($states.input.order.lines.(qty * price)) + $fee %}",
                        "customer": "{% $customer %}",
                        "lines": "{% $count($states.input.order.lines) %}"}}
JSONPATH = {"FunctionName": "arn:aws:lambda:us-east-1:000000000000:function:charge",
            "Payload": {"order.$": "$.order.id", "total.$": "States.MathAdd($.order.total, $fee)",
                        "customer.$": "$customer", "lines.$": "States.ArrayLength($.order.lines)"}}
INPUT = {"order": {"id": "o-1", "total": 42,
                   "lines": [{"qty": 2, "price": 10}, {"qty": 1, "price": 22}]}}
VARS = {"fee": 3, "customer": {"name": "Ada", "tier": "gold"}}


def per_call(fn, n: int) -> float:
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(rounds)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    where = jsonata.Where("Charge", "Arguments")
    states = {"input": INPUT}

    class Ctx(dict):
        variables = VARS

    ctx = Ctx()
    machine = Machine({"QueryLanguage": "JSONata", "StartAt": "P", "States": {"P": {
        "Type": "Pass", "Output": {"total": "{% $sum($states.input.order.lines.(qty * price)) + $fee %}"},
        "Assign": {"last": "{% $states.input.order.id %}"}, "End": True}}},
        {"Id": "x", "Name": "x", "StartTime": "x", "Input": INPUT, "StateMachine": {}},
        clock=time.time, sleep=lambda s: None)
    out = {
        "compile_us": per_call(lambda: Jsonata(EXPR), args.n),
        "cached_us": per_call(lambda: jsonata.evaluate("{% " + EXPR + " %}", states, VARS, where), args.n),
        "template_us": per_call(lambda: jsonata.render(TEMPLATE, states, VARS, where), args.n),
        "jsonpath_us": per_call(lambda: paths.render(JSONPATH, INPUT, ctx, intrinsics.evaluate), args.n),
        "pass_state_us": per_call(lambda: machine.walk("", "P", INPUT, variables=dict(VARS)), args.n),
    }
    if args.json:
        print(json.dumps({k: round(v, 1) for k, v in out.items()}))
    else:
        for k, v in out.items():
            print(f"{k:16s} {v:9.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
