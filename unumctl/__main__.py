"""`python -m unumctl`: the same as the `unumctl` command."""

from .cli import main

if __name__ == "__main__":
    main()
