"""`python -m unumctl`: the same as the `unumctl` command."""

from .cli import main

__all__: list[str] = []

if __name__ == "__main__":
    main()
