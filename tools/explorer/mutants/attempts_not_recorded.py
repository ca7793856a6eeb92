"""Task attempt outcomes (Retry errors, timeouts, callbacks) are neither recorded nor read
back: a redelivery runs attempts again whose outcome was already recorded."""

from runtime.asl.attempts import TaskAttempts

NAME = "attempts-not-recorded"
ABOUT = "runtime.asl.attempts.TaskAttempts.outcome reads nothing and settle writes nothing"
WORKFLOWS = ["sfn-timeout"]
TESTS = ["tests/runtime/asl/test_timeouts_and_callbacks.py"]
INVISIBLE = None


def apply(p):
    p.replace(TaskAttempts, "outcome", lambda orig: lambda self, n: None)
    p.replace(TaskAttempts, "settle", lambda orig: lambda self, n, outcome: outcome)
