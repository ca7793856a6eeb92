"""Session-scoped Google Cloud emulators (Firestore, Pub/Sub, GCS stand-in) on free
127.0.0.1 ports, started once and stopped by process id (unumctl/gcp/emulate/emulators.py).
Tests skip, naming the missing component, only when it is absent."""

from __future__ import annotations

import os
import signal

import pytest

from unumctl.gcp.emulate.emulators import EmulatorMissing, Emulators


@pytest.fixture(scope="session")
def emulators(tmp_path_factory):
    for mod in ("google.cloud.firestore", "google.cloud.pubsub_v1", "google.cloud.storage",
                "functions_framework"):
        pytest.importorskip(mod, reason=f"{mod} not installed (pip install -e '.[gcp]')")
    emu = Emulators(tmp_path_factory.mktemp("gcp-emulators"))
    try:
        emu.start()
    except EmulatorMissing as exc:
        pytest.skip(str(exc))

    def _interrupt(signum, frame):  # `timeout`/CI SIGTERM: still run the teardown below
        raise KeyboardInterrupt(f"signal {signum}")

    old_handler = signal.signal(signal.SIGTERM, _interrupt)
    saved = {k: os.environ.get(k) for k in emu.env}
    os.environ.update(emu.env)
    try:
        yield emu
    finally:
        emu.stop()
        signal.signal(signal.SIGTERM, old_handler)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
