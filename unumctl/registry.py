"""The one registry of deployment targets: adding a cloud = a folder + one line in `TARGETS`.

A target is one package, `unumctl/<name>/`, whose module `spec.py` holds `SPEC`, a
`TargetSpec` naming every part of it the rest of unumctl uses: its `Target` class, the entry
module of its bundles, its bundle hook, its deployment-model builder, its settings section
(`clouds.<name>`), its history reader, its billing rules and the price keys it needs. Every
other module asks this one (`spec`, `load`, `names`, `deployable`, `priced`) instead of keeping
a table keyed by cloud names; tests/unumctl/test_registry.py fails on such a table anywhere in
unumctl/ outside the target packages and this module. This follows AWS Chalice's deployer
factory (chalice/deploy/deployer.py `create_default_deployer`), where one place wires a
deployment's builder, packager and planner together.

A part is named by reference, "package.module:attribute", and imported only when used, so
that loading the registry loads no cloud SDK and a target whose extra is not installed
fails only when it is used (ImportError from `load`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["TARGETS", "TargetSpec", "UnknownTarget", "deployable", "names", "part", "priced", "spec"]

# target name -> the module holding its TargetSpec `SPEC` (the order is the one help texts
# and error messages list them in)
TARGETS: dict[str, str] = {
    "local": "unumctl.local.spec",
    "aws": "unumctl.aws.spec",
    "gcp": "unumctl.gcp.spec",
}


class UnknownTarget(ValueError):
    """A name that is not a registered target (message: one line listing the known ones)."""


@dataclass(frozen=True)
class TargetSpec:
    """Everything unumctl needs of one target. References are "module:attribute" strings
    (`load`); None = the target has no such part.

    - `name`: the `--cloud` value, also the name of its package `unumctl/<name>/` and of its
      runtime adapter `runtime/<name>/`.
    - `target`: its `unumctl.targets.Target` subclass.
    - `entry_line`: the text of `unum_entry.py` in its bundles (unumctl/build.py): imports
      the runtime adapter's entry point under the name the platform calls.
    - `model`: (App, flags: dict) -> unumctl.deploy.models.Deployment, the deployment model
      (unumctl/deploy/appgraph.py `build`).
    - `history`: (App, **options) -> unumctl.observe.HistoryReader (unumctl/observe/); None
      = `unumctl sessions` / `history` ... have nothing to read there.
    - `settings`: its `unumctl.deploy.settings.Section` subclass, the manifest's
      `clouds.<name>`; a target with one deploys to a cloud (`deployable`).
    - `bundle_hook`: (App, function or None for a runtime-only archive, resolved settings)
      -> [(archive path, bytes)] it adds to a bundle (unumctl/build.py).
    - `billing`: its `unumctl.cost.billing.CloudBilling` (`unumctl cost`; `priced`).
    - `price_keys`: the keys its section of the price table must have
      (unumctl/cost/prices.py `load_prices`).
    - `sizing`: its `unumctl.tuning.sizing.Sizing` (memory sizes, CPU share and compute
      price per execution; `unumctl tune`, issue 25).
    - `tuning`: what co-location saves there, an object with `storage_usd(nbytes, prices,
      reads)` and `invocation_usd(ms, memory_mb, prices)` (unumctl.tuning.sizing.FusionPrices;
      unumctl.tuning.colocate); None = fusion saves nothing that is priced.
    - `gc_default`: the `runtime.gc` mode of an app that sets none (unumctl.manifest.default_gc;
      docs/protocol.md "GC modes").
    - `emulator`: the typer command of `unumctl emulate <name>` (unumctl/cli.py registers one
      per target that has it).
    - `measure`: (app_dir, input value, sessions, **options) -> the measurement dict of
      unumctl/cost/measure.py, the measured run of `unumctl cost` / `tune --emulated` on the
      target's emulators; None = the target is not measured there."""

    name: str
    target: str
    entry_line: str
    model: str
    history: str | None = None
    settings: str | None = None
    bundle_hook: str | None = None
    billing: str | None = None
    price_keys: tuple[str, ...] = ()
    sizing: str | None = None
    tuning: str | None = None      # "module:attribute" of its tuning prices/options (was the convention unumctl.<cloud>.tuning)
    gc_default: str = "safe"        # default `gc:` mode of its runtime adapter (was runtime.<cloud>.GC_DEFAULT)
    emulator: str | None = None     # "module:attribute" of `unumctl emulate <cloud>`'s entry (unumctl/<cloud>/emulate/)
    measure: str | None = None      # "module:attribute" of its measured run (unumctl/<cloud>/measure.py)


_SPECS: dict[str, TargetSpec] = {}


def names() -> list[str]:
    """The registered target names, in registry order."""
    return list(TARGETS)


def spec(name: str) -> TargetSpec:
    """The TargetSpec of target `name` (its module imported on first use). Raises
    UnknownTarget naming the known targets, or ValueError when the module's SPEC is not the
    target it is registered as."""
    if name not in TARGETS:
        raise UnknownTarget(f"unknown target {name!r} (known: {', '.join(TARGETS)})")
    if name not in _SPECS:
        found = importlib.import_module(TARGETS[name]).SPEC
        if not isinstance(found, TargetSpec) or found.name != name:
            raise ValueError(f"{TARGETS[name]}.SPEC: must be a TargetSpec named {name!r}")
        _SPECS[name] = found
    return _SPECS[name]


def load(ref: str) -> Any:
    """The object a "module:attribute" reference names (the attribute may be dotted, e.g.
    "m:Class.method"). Raises ImportError when its module (or what it imports: a target's
    SDK) is not installed, AttributeError when the module has no such attribute."""
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def part(name: str, field: str) -> Any:
    """The loaded part `field` (a field of TargetSpec holding a reference) of target `name`,
    or None when the target has none. UnknownTarget / ImportError as `spec` / `load`."""
    if field not in {f.name for f in fields(TargetSpec)}:
        raise AttributeError(f"TargetSpec has no field {field!r}")
    ref = getattr(spec(name), field)
    return load(ref) if ref is not None else None


def deployable() -> list[str]:
    """The targets that deploy to a cloud: those with a settings section, in registry order."""
    return [n for n in TARGETS if spec(n).settings is not None]


def priced() -> list[str]:
    """The targets `unumctl cost` prices: those with billing rules, in registry order."""
    return [n for n in TARGETS if spec(n).billing is not None]
