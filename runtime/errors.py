"""Exceptions shared by the runtime core and its adapters."""

__all__ = ["IRError", "InjectedCrash", "StaleExecution", "Suspended", "UnumError", "UserFunctionError",
           "user_error_text", "user_traceback"]


class UnumError(Exception):
    """Base class of runtime errors."""


class IRError(UnumError):
    """Malformed IR or an expression that cannot be parsed or evaluated.

    The message names the file (when known), the field and the reason.
    """


class UserFunctionError(UnumError):
    """A user handler raised, or returned something that is not JSON.

    `error_type` is the exception class name (ASL `Error`), `message` its text and
    `trace` the formatted stack (list of lines), as Lambda reports a Python error; `state`:
    for a compiled Step Functions function, the ASL state that failed (None otherwise).
    """

    def __init__(self, error_type: str, message: str, trace: list[str] | None = None,
                 state: str | None = None):
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.message = message
        self.trace = trace or []
        self.state = state


def user_error_text(exc: BaseException) -> str:
    """The message of an exception raised by user code, never raising: str(exc), or a
    sentence saying that its __str__ raised; for the exits a handler may ask for
    (SystemExit, KeyboardInterrupt) a sentence saying so."""
    try:
        text = str(exc)
    except BaseException as err:  # noqa: BLE001 - any __str__ may raise anything
        return f"(the {type(exc).__name__}'s message cannot be read: its __str__ raised {type(err).__name__})"
    if isinstance(exc, SystemExit):
        return "the function called sys.exit()" + (f" with {text}" if text else "")
    if isinstance(exc, KeyboardInterrupt):
        return "the function raised KeyboardInterrupt" + (f": {text}" if text else "")
    return text


def user_traceback(exc: BaseException) -> list[str]:
    """traceback.format_exception of a user exception, never raising (the standard library
    reads str(exc) and lets a BaseException of its __str__ through)."""
    import traceback
    try:
        return traceback.format_exception(type(exc), exc, exc.__traceback__)
    except BaseException:  # noqa: BLE001
        return traceback.format_list(traceback.extract_tb(exc.__traceback__)) + \
            [f"{type(exc).__name__}: {user_error_text(exc)}\n"]


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
