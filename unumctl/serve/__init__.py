"""`unumctl serve`: a long-running local platform behind the Step Functions API on 127.0.0.1
(docs/local-service.md). service.py: the machines (apps) and operations; sfn_api.py: the
AWS JSON 1.0 HTTP layer (werkzeug); shapes.py: ARNs, names, error shapes; history.py: the
history events; server.py: the process (signals); client.py: `unumctl invoke` through it."""

__all__: list[str] = []  # submodules only
