"""Exceptions shared by the runtime core and its adapters."""


class UnumError(Exception):
    """Base class of runtime errors."""


class IRError(UnumError):
    """Malformed IR or an expression that cannot be parsed or evaluated.

    The message names the file (when known), the field and the reason.
    """


class UserFunctionError(UnumError):
    """A user handler raised, or returned something that is not JSON.

    `error_type` is the exception class name (ASL `Error`), `message` its text and
    `trace` the formatted stack (list of lines), as Lambda reports a Python error.
    """

    def __init__(self, error_type: str, message: str, trace: list[str] | None = None):
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.message = message
        self.trace = trace or []


class StaleExecution(UnumError):
    """An execution found state it needs already collected: an execution of the same
    invocation, or the whole session, has completed. The engine drops it (docs/protocol.md,
    ingress), never records it as a failure."""


class InjectedCrash(BaseException):
    """Raised by fault injection to simulate the runtime process dying at a point.

    A BaseException so that user code and the engine do not catch it; the local target's
    worker treats it like a process crash and the platform retry re-delivers the event.
    """


class Suspended(UnumError):
    """The execution waits for an outside event (a Step Functions callback token): nothing is
    committed and nothing invoked now; whatever resumes it re-invokes the same invocation
    with the same payload (runtime/asl/callback.py). The engine ends the execution as
    'suspended', which the platform treats as completed."""
