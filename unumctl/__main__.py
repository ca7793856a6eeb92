"""`python -m unumctl`: the same as the `unumctl` command."""

from .cli import main

main()
