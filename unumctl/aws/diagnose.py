"""Why an `invoke --cloud aws --wait` got no result: what the session left in the table.

Lambda's asynchronous Invoke (InvocationType=Event) only queues the event; when nothing
executes the functions (an emulator that accepts Invoke but does not run code, such as
moto without Docker; functions that crash before the runtime starts; a throttled or
disabled function) the CLI would otherwise only see "no result".
"""

from __future__ import annotations

from typing import Any

from runtime.session import START_RECORD

__all__ = ["no_result_message"]


def no_result_message(ds: Any, session: str, out: dict[str, Any], timeout: float,
                      root: Any, lambda_endpoint: str | None = None) -> str:
    """One line saying what is missing when session `session` has no result after `timeout`
    seconds. `ds`: the deployment's DynamoDBDatastore (its `names(session)` lists the items
    the session wrote; the start record the starter writes, runtime.session.START_RECORD, is
    not counted: it says nothing about whether a function ran); `out`: the deployment's outputs (entry_function, table); `root`: the
    app directory (for the commands in the message); `lambda_endpoint`: a Lambda endpoint
    override, named in the message when set. Never raises for a datastore error (the message
    then says the table could not be read)."""
    entry = out.get("entry_function", "?")
    later = f"check later: unumctl result {root} {session} --cloud aws"
    try:
        names = [n for n in ds.names(session) if n != START_RECORD]
    except Exception as exc:  # noqa: BLE001 - the diagnosis must not hide the timeout
        return (f"session {session} has no result after {timeout:.0f} s and table {out.get('table')} "
                f"could not be read ({type(exc).__name__}); {later}")
    if not names:
        where = f"the Lambda endpoint {lambda_endpoint}" if lambda_endpoint else "Lambda"
        return (f"session {session}: nothing ran in {timeout:.0f} s: {where} accepted the Invoke of "
                f"{entry} but no function wrote to table {out.get('table')}, so nothing executes the "
                f"functions (an emulator without code execution, e.g. moto without Docker: serve Invoke "
                f"with `unumctl emulate aws`, docs/aws.md) or {entry} fails before its "
                f"handler runs (see: aws logs tail /aws/lambda/{entry}); {later}")
    failures = sorted(n.split("/", 1)[1] for n in names if n.startswith("failure/"))
    if failures:
        return (f"session {session} has no result after {timeout:.0f} s; Lambda gave up on "
                f"{', '.join(failures[:3])} (see the function's log: aws logs tail /aws/lambda/FUNCTION); "
                f"{later}")
    return (f"session {session} has no result after {timeout:.0f} s; it wrote {len(names)} item(s) "
            f"(it ran, and may still be running: raise --timeout); {later}")
