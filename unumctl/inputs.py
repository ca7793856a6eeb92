"""Reading the user's input files (`--data`, `--output`, `--event`) with one-line errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["read_json"]


def read_json(path: Path, flag: str = "--data") -> Any:
    """The JSON value in file `path` ('-' = stdin).

    Raises FileNotFoundError or ValueError with one line naming `flag`, the file and the fix:
    no such file, a directory, not readable, not UTF-8 (with the byte offset), not JSON (with
    the line)."""
    if str(path) == "-":
        text = sys.stdin.read()
    else:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(f"{flag}: {path}: no such file") from None
        except IsADirectoryError:
            raise ValueError(f"{flag}: {path} is a directory; name a JSON file "
                             f"(e.g. {flag} {path / 'input.json'})") from None
        except OSError as exc:
            raise ValueError(f"{flag}: {path}: cannot read: {exc.strerror}") from None
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{flag}: {path}: not UTF-8 text (byte {exc.start}); "
                             "save it as UTF-8 JSON") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{flag}: {path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
