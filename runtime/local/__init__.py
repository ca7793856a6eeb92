"""Local target adapter: SQLite datastore, directory blob store, queue invoker."""
