"""Data-centric triggers on fan-in edges (issue 26, after Pheromone's trigger primitives,
seed 003 §III-B): one module per trigger."""

__all__: list[str] = []  # submodules only
