"""Fill the Lambda site cache with the in-function runtime's requirements, outside pytest.

    python tools/lambda_site.py [--runtime python3.13 ...] [--architecture x86_64 ...] [--all] [--check]

Every Lambda archive unumctl builds holds runtime/requirements.txt installed for the Lambda
platform (unumctl/aws/package.py install_requirements: pip with --platform/--python-version),
cached under $UNUMCTL_CACHE/lambda-site (default ~/.cache/unumctl/lambda-site), one directory
per (requirement set, architecture, Python version). Inside pytest the egress guard
(tests/egress_guard.py) keeps pip from PyPI, so the suite needs these directories filled
beforehand: `make lambda-site` runs this script, and `make test`, `make check`, `make durations`
and `make test-aws-all` depend on it (docs/testing.md).

Without options it fills the key the test suite builds: clouds.aws's default runtime and
architecture (unumctl/aws/settings.py AwsSection), whose site_dirs REQUIRED lists. `--runtime`
and `--architecture` (each repeatable) choose others, `--all` every supported pair. The install
is install_requirements itself (no pip logic here), so a filled directory is left as it is and a
second run takes well under a second. `--check` installs nothing and exits 1 when one is missing.
Prints one line per key: state, runtime, architecture, directory. Exits 1 with pip's one-line
reason (PackagingError) when an install fails.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

from unumctl.aws.package import (PackagingError, install_requirements, runtime_requirements, site_dir,
                                 site_is_complete)
from unumctl.aws.settings import AWS_ARCHITECTURES, AWS_LAMBDA_RUNTIMES, AwsSection


def default_keys() -> list[tuple[str, str]]:
    """(runtime, architecture) pairs the test suite packages: clouds.aws's defaults."""
    s = AwsSection()
    return [(s.runtime, s.architecture)]


def site_dirs(keys: list[tuple[str, str]]) -> list[tuple[str, str, Path]]:
    """(runtime, architecture, cache directory of the runtime's requirements) for each key."""
    reqs = runtime_requirements()
    return [(rt, arch, site_dir(reqs, arch, rt.removeprefix("python"))) for rt, arch in keys]


def missing(keys: list[tuple[str, str]] | None = None) -> list[Path]:
    """The cache directories of `keys` (default: default_keys) that are not filled yet."""
    return [d for _, _, d in site_dirs(keys or default_keys()) if not site_is_complete(d)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runtime", action="append", choices=AWS_LAMBDA_RUNTIMES)
    ap.add_argument("--architecture", action="append", choices=AWS_ARCHITECTURES)
    ap.add_argument("--all", action="store_true", help="every supported runtime and architecture")
    ap.add_argument("--check", action="store_true", help="install nothing; exit 1 when a key is missing")
    args = ap.parse_args(argv)
    if args.all:
        keys = list(itertools.product(AWS_LAMBDA_RUNTIMES, AWS_ARCHITECTURES))
    elif args.runtime or args.architecture:
        (rt0, arch0), = default_keys()
        keys = list(itertools.product(args.runtime or [rt0], args.architecture or [arch0]))
    else:
        keys = default_keys()
    status = 0
    reqs = runtime_requirements()
    for rt, arch, d in site_dirs(keys):
        if site_is_complete(d):
            state = "cached"
        elif args.check:
            state, status = "missing", 1
        else:
            try:
                install_requirements(reqs, arch, rt.removeprefix("python"))
            except PackagingError as exc:
                print(f"lambda_site: {rt} {arch}: {exc}", file=sys.stderr)
                return 1
            state = "installed"
        print(f"{state:9} {rt:10} {arch:7} {d}")
    return status


if __name__ == "__main__":
    sys.exit(main())
