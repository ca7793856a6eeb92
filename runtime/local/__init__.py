"""Local target adapter: SQLite datastore, directory blob store, queue invoker."""

__all__: list[str] = []  # submodules only
