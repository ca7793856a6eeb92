"""moto_server and the local Lambda API (see unumctl/emulate/__init__.py)."""

__all__: list[str] = []  # submodules only
