"""What `unumctl emulate gcp` runs (docs/gcp.md "Rehearse on emulators"), also used by the
tests: the Firestore and Pub/Sub emulators and the GCS stand-in (emulators.py), and each
given app's built bundles served by functions-framework with push subscriptions
(platform.py), which is what `apply` would deploy (Terraform cannot target the Google
emulators). A context manager that yields the environment to export and stops everything it
started on exit, by process id; everything listens on 127.0.0.1, on free ports.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Iterator

from ...emulate import Emulator, EmulatorMissing
from ...install_hint import install_hint

__all__ = ["EMULATOR"]

DEFAULT_PROJECT = "unum-emulated"
ENV_PROJECT = "UNUMCTL_EMULATE_PROJECT"  # the project id to serve instead (never a real one: emulators only)
SHARED_BUCKET = "unum-emulated-payloads"


def check() -> None:
    """EmulatorMissing unless the google-cloud libraries and functions-framework are
    installed (java, the SDK emulators and the GCS stand-in are checked when they start)."""
    for mod, pkg in (("google.cloud.firestore", "unumctl[gcp]"), ("google.cloud.pubsub_v1", "unumctl[gcp]"),
                     ("google.cloud.storage", "unumctl[gcp]")):
        try:
            found = importlib.util.find_spec(mod) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            raise EmulatorMissing(f"{mod} not installed: pip install '{pkg}'")
    if not (Path(sys.executable).parent / "functions-framework").exists():
        raise EmulatorMissing(f"functions-framework not installed beside this Python: {install_hint('gcp')}")


@contextlib.contextmanager
def emulate(apps: list, workdir: Path, project: str = DEFAULT_PROJECT) -> Iterator[dict[str, str]]:
    """The Google emulators running, and each app of `apps` (unumctl.manifest.App) built and
    served on them (its topics, push subscriptions and function servers; the functions'
    output appended to unumctl.gcp.logs.emulator_log_dir(app)); yields the environment for
    the google-cloud clients and unumctl (emulator hosts, project, UNUM_BUCKET: one bucket
    that the apps share, each under its own prefix). Each app's functions use the Firestore
    database its deployment model names (clouds.gcp.database). EmulatorMissing /
    RuntimeError when a component is missing or does not start (nothing left running)."""
    check()
    from ... import pipeline
    from .emulators import Emulators
    from .platform import EmulatorPlatform

    workdir = Path(workdir)
    emu = Emulators(workdir / "emulators", project=project)
    saved = {k: os.environ.get(k) for k in ("FIRESTORE_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST",
                                            "STORAGE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT")}
    platforms: list = []
    with emu:
        os.environ.update(emu.env)  # the platform's own clients talk to the emulators
        try:
            for app in apps:
                database = pipeline.model(app, "gcp", project=project).datastore.database
                assert database is not None  # a gcp deployment resolves its Firestore database
                p = EmulatorPlatform(app, emu, workdir / "apps" / app.name,
                                     env={"UNUM_DATABASE": database}, bucket=SHARED_BUCKET)
                platforms.append(p)
                p.start()
            yield {**emu.env, "UNUM_BUCKET": SHARED_BUCKET}
        finally:
            for p in reversed(platforms):
                p.stop()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _start(workdir: Path, apps: list) -> contextlib.AbstractContextManager[dict[str, str]]:
    return emulate(apps, workdir, os.environ.get(ENV_PROJECT) or DEFAULT_PROJECT)


# gcp's TargetSpec `emulator` (unumctl/gcp/spec.py): `unumctl emulate gcp [APP...]`
EMULATOR = Emulator(start=_start, takes_apps=True, help="""Run the Firestore and Pub/Sub emulators with each APP deployed onto them.

The emulators (Google Cloud SDK, Java) and a GCS stand-in, with each APP built and
served: one functions-framework server per function, its Pub/Sub topic and a push
subscription (what `apply --cloud gcp` creates in a project). Prints the environment to
export (emulator hosts, project, UNUM_BUCKET), then runs until stopped. Restart it to
deploy changed code (docs/gcp.md). The project id the emulators serve is
UNUMCTL_EMULATE_PROJECT's, else unum-emulated (exported as GOOGLE_CLOUD_PROJECT).

Example: unumctl emulate gcp examples/wordcount   (then, in another shell: export the
lines it printed; unumctl invoke examples/wordcount --cloud gcp --data
examples/wordcount/input.json)
""")
