"""The Google Cloud emulators and the emulated Cloud Functions platform (see
unumctl/emulate/__init__.py)."""

__all__: list[str] = []  # submodules only
