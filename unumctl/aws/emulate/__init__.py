"""moto_server and the local Lambda API (see unumctl/emulate/__init__.py)."""
