"""Task tokens of Step Functions callbacks (`.waitForTaskToken`) and the error a refused
SendTask* call raises: what runtime/asl/attempts.py creates for a callback attempt and
runtime/asl/callback.py checks (a leaf of the asl package: it imports only the payload's
session-id rule).

Source: AWS developer guide "Wait for a Callback with Task Token"; the Step Functions API
reference (SendTaskSuccess: `taskToken` length 1-1024; errors InvalidToken, TaskTimedOut,
TaskDoesNotExist, InvalidOutput). A token names the app, the session, the waiting
invocation and the attempt, plus a random nonce committed in the attempt's token record:
`Token.decode` checks every field against a strict pattern before any of it reaches a
datastore key.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any

from ..payload import SESSION_ID_RE

__all__ = ["CallbackError", "MAX_TOKEN", "Token"]

MAX_TOKEN = 1024              # characters (Step Functions' taskToken limit)
_B64 = re.compile(r"^[A-Za-z0-9_-]+$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$")
_NONCE = re.compile(r"^[0-9a-f]{32}$")


class CallbackError(Exception):
    """A refused SendTask* call; `code` is Step Functions' error name (InvalidToken,
    TaskTimedOut, TaskDoesNotExist, InvalidOutput) and str() is `code: message`."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _invalid() -> CallbackError:
    return CallbackError("InvalidToken", "Invalid token")


@dataclass(frozen=True)
class Token:
    """A decoded task token: app (state machine) name, session, instance (the waiting
    invocation), attempt number `n` and the record's nonce."""

    app: str
    session: str
    instance: str
    n: int
    nonce: str

    def encode(self) -> str:
        """The opaque token string (base64url of a small JSON object, no padding)."""
        doc = {"a": self.app, "s": self.session, "i": self.instance, "n": self.n, "k": self.nonce}
        raw = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, token: Any) -> "Token":
        """Parse and validate a token; raises CallbackError('InvalidToken') for anything
        that is not exactly what `encode` produces."""
        if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN or not _B64.fullmatch(token):
            raise _invalid()
        try:
            doc = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        except (ValueError, UnicodeDecodeError):
            raise _invalid() from None
        if not isinstance(doc, dict) or set(doc) != {"a", "s", "i", "n", "k"}:
            raise _invalid()
        a, s, i, n, k = doc["a"], doc["s"], doc["i"], doc["n"], doc["k"]
        if not (isinstance(a, str) and _NAME.fullmatch(a) and isinstance(s, str) and SESSION_ID_RE.fullmatch(s)
                and isinstance(i, str) and _NAME.fullmatch(i) and ".." not in i
                and isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 1_000_000
                and isinstance(k, str) and _NONCE.fullmatch(k)):
            raise _invalid()
        return cls(a, s, i, n, k)
