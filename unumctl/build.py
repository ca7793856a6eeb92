"""Deterministic function bundles (one zip per function) for every target.

A bundle holds the user code, the runtime core, the target's adapter, the function's IR
(`unum_ir.json`), `unum_function.json` and the entry module `unum_entry.py`. Same inputs give
a byte-identical zip: entries sorted, timestamps fixed at 1980-01-01, permissions 0644,
fixed compression level. The zip is named `<function>-<sha256[:16]>.zip` after its content
and is rebuilt only when the digest of its inputs changes (an index maps input digest to
zip). Targets add files through their bundle hook (TargetSpec `bundle_hook`,
unumctl/registry.py; for example pip-installed requirements on aws), given the target's
resolved settings (`settings`: the `clouds.<cloud>` section after
deploy/settings.py's precedence rule, or None = the manifest's section resolved without flags).

What of the user's code directory goes in (`code_files`): every file except those matched by
`DEFAULT_IGNORE` (secrets, virtual environments, Terraform state, caches; gitignore syntax),
by the patterns of a `.unumignore` file in the code directory (gitignore syntax, read after
the defaults, so `!pattern` re-includes a default-excluded file), matched with the `pathspec`
library (GitIgnoreSpec), and any file that holds a private key (`holds_private_key`: a PEM /
OpenSSH / PGP / PuTTY private key marker in its first `KEY_SCAN_BYTES`), unless a
`.unumignore` line re-includes it by name. Symbolic links are followed only when their target
stays inside the app (or a `shared_code` directory of the manifest); a link leading elsewhere
is refused with an AppError naming it. `unumctl build --list` prints what each bundle holds
and what was left out and why (`scan_code`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import pathspec

import runtime
from runtime.fusion import FUSED_DIR
from runtime.sources import TRIGGERS_FILE

from . import registry
from .manifest import App, AppError, code_roots
from .safefile import write_atomic

__all__ = ["KEY_SCAN_BYTES", "RUNTIME_DIR", "build_app", "build_function", "build_support", "bundle_entries",
           "code_files", "holds_private_key", "scan_code", "state_dir"]

BUILDER_VERSION = "1"
RUNTIME_DIR = Path(runtime.__file__).parent
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_SKIP_DIRS = {"__pycache__", ".unum", ".pytest_cache", ".git"}
IGNORE_FILE = ".unumignore"
# never bundled unless a .unumignore re-includes them with `!pattern` (gitignore syntax)
DEFAULT_IGNORE = (
    # secrets and credentials
    ".env", ".env.*", ".envrc", ".aws/", ".ssh/", ".gnupg/", ".docker/", ".kube/", ".azure/",
    ".config/gcloud/", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.pem", "*.key",
    "*.p12", "*.pfx", ".netrc", ".pypirc", ".npmrc", ".git-credentials",
    # cloud credential files (AWS shared credentials, Google service-account and ADC keys),
    # database and registry passwords, shell history, the Terraform CLI config (API tokens)
    "credentials", "credentials.json", "service-account*.json", "*-key.json",
    "application_default_credentials.json", "client_secret*.json", ".pgpass", ".my.cnf",
    ".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history",
    ".terraformrc", "terraform.rc", ".dockercfg", ".htpasswd",
    # virtual environments, Terraform state and working directories
    ".venv/", "venv/", ".tox/", ".nox/", "node_modules/", "*.tfstate", "*.tfstate.*",
    ".terraform/", "*.tfvars", "*.tfvars.json", "*.tfplan",
    # version control, caches and unumctl's own state
    ".git/", ".hg/", ".svn/", "__pycache__/", "*.pyc", ".pytest_cache/", ".mypy_cache/",
    ".ruff_cache/", ".unum/", ".DS_Store", IGNORE_FILE,
)

# a private key in any file, found by content (first KEY_SCAN_BYTES bytes): PEM blocks
# (RFC 7468: "RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "ENCRYPTED PRIVATE KEY",
# "OPENSSH PRIVATE KEY", ...), OpenPGP armor ("PGP PRIVATE KEY BLOCK", RFC 4880 §6.2) and
# PuTTY key files; also inside JSON strings (a Google service-account key's "private_key")
KEY_SCAN_BYTES = 1 << 20
_PRIVATE_KEY = re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d+:")


@dataclass
class Artifact:
    """A built bundle: `path` of the zip, `sha256` of its bytes, whether it was rebuilt."""

    function: str
    path: Path
    sha256: str
    rebuilt: bool


def state_dir(app: App) -> Path:
    """Per-app working directory (`<app>/.unum`) for builds, local datastore and Terraform;
    created 0700 (owner only: it holds the local state, function output and Terraform
    state) when missing. An existing one keeps its mode."""
    d = app.root / ".unum"
    if not d.is_dir():
        try:
            d.mkdir(mode=0o700)
        except OSError:  # exists now, or the app directory is read-only: the writer says so
            pass
    return d


def _files(root: Path) -> Iterable[tuple[str, Path]]:
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if any(part in _SKIP_DIRS for part in rel.parts) or p.suffix == ".pyc" or not p.is_file():
            continue
        yield rel.as_posix(), p


def ignore_spec(code: Path) -> pathspec.GitIgnoreSpec:
    """DEFAULT_IGNORE followed by the lines of `<code>/.unumignore` (when present), as one
    gitignore-syntax spec (pathspec.GitIgnoreSpec; https://git-scm.com/docs/gitignore)."""
    lines = list(DEFAULT_IGNORE)
    path = code / IGNORE_FILE
    if path.is_file():
        lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines)


def holds_private_key(path: Path, limit: int = KEY_SCAN_BYTES) -> str | None:
    """The private-key marker found in the first `limit` bytes of the file at `path` (e.g.
    "-----BEGIN RSA PRIVATE KEY-----"), or None. Reads at most `limit` bytes; a file that
    cannot be read is reported as not holding one (the build then fails reading it)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(limit)
    except OSError:
        return None
    m = _PRIVATE_KEY.search(head)
    return m.group(0).decode("ascii", "replace") if m else None


def _why_ignored(path: str, code: Path) -> str:
    """Which ignore line leaves `path` out (the last matching line that ignores, as gitignore
    decides): "default ignore pattern 'X'" or ".unumignore line N: 'X'"."""
    lines = [(f"default ignore pattern {p!r}", p) for p in DEFAULT_IGNORE]
    user = code / IGNORE_FILE
    if user.is_file():
        lines += [(f"{IGNORE_FILE} line {n}: {p.strip()!r}", p) for n, p in
                  enumerate(user.read_text(encoding="utf-8", errors="replace").splitlines(), 1)]
    for why, line in reversed(lines):
        if line.strip() and not line.lstrip().startswith(("#", "!")) and \
                pathspec.GitIgnoreSpec.from_lines([line]).match_file(path):
            return why
    return "ignore list"


@dataclass(frozen=True)
class LeftOut:
    """A path of a code directory kept out of the bundle: `path` (archive path; a directory
    ends with "/") and `reason` (which ignore line, a virtual environment, a private key)."""

    path: str
    reason: str


def scan_code(app: App, function: str) -> tuple[list[tuple[str, Path]], list[LeftOut]]:
    """What of the function's code directory goes into its bundle and what is left out.

    Returns ((archive path, file) sorted, [LeftOut] sorted by path). Left out: paths matched
    by ignore_spec (a directory once, with a trailing "/"), virtual environments (a directory
    holding `pyvenv.cfg`, PEP 405), links to an ignored name, and files holding a private key
    (holds_private_key) unless a `.unumignore` line re-includes them with `!pattern`. Links are
    followed only inside manifest.code_roots.

    Raises AppError naming a symbolic link whose target leaves the app (the fix: copy the file
    in, or list it in .unumignore)."""
    code = app.root / app.manifest.functions[function].code
    roots = code_roots(app.root, app.manifest)
    ignore = ignore_spec(code)
    mpath = app.root / "unumctl.yaml"
    out: list[tuple[str, Path]] = []
    left: list[LeftOut] = []

    def walk(d: Path, prefix: str, seen: frozenset[Path]) -> None:
        for entry in sorted(os.scandir(d), key=lambda e: e.name):
            rel, p = prefix + entry.name, Path(entry.path)
            is_dir = entry.is_dir()  # follows a link
            shown = rel + "/" if is_dir else rel
            if ignore.match_file(shown):
                left.append(LeftOut(shown, _why_ignored(shown, code)))
                continue
            if entry.is_symlink():
                target = p.resolve()
                if not any(target.is_relative_to(r) for r in roots):
                    raise AppError(f"{mpath}: functions.{function}.code: {p} is a link to {target}, "
                                   f"outside the app; copy it into the app or add {rel!r} to {IGNORE_FILE}")
                tname = target.name + ("/" if is_dir else "")
                if ignore.match_file(tname):  # a link to a secret is as secret as the secret
                    left.append(LeftOut(shown, f"a link to {target.name} ({_why_ignored(tname, code)})"))
                    continue
            if is_dir and (p / "pyvenv.cfg").exists():
                left.append(LeftOut(shown, "a virtual environment (holds pyvenv.cfg)"))
                continue
            if is_dir:
                real = p.resolve()
                if real not in seen:  # a link back up would loop
                    walk(p, rel + "/", seen | {real})
            elif entry.is_file():
                marker = holds_private_key(p)
                if marker and ignore.check_file(rel).include is not False:  # not re-included by name
                    left.append(LeftOut(rel, f"holds a private key ({marker}); re-include it with "
                                             f"'!{rel}' in {IGNORE_FILE} if it must ship"))
                    continue
                out.append((rel, p))

    walk(code, "", frozenset({code.resolve()}))
    return sorted(out), sorted(left, key=lambda x: x.path)


def code_files(app: App, function: str) -> list[tuple[str, Path]]:
    """(archive path, file) of the function's code directory that go into its bundle, sorted
    (scan_code's first half; AppError as scan_code)."""
    return scan_code(app, function)[0]


def code_entries(app: App, function: str) -> list[tuple[str, bytes]]:
    """(archive path, bytes) of the function's code in its bundle: its code directory's files
    (code_files), or for a function the Step Functions compiler synthesized the stub handler
    module (unumctl.asl.synth_entries), written here into the bundle and never into the
    app's directory."""
    from .asl import is_synthesized, synth_entries
    if is_synthesized(app.manifest.functions[function]):
        return synth_entries()
    return [(rel, p.read_bytes()) for rel, p in code_files(app, function)]


def target_hook(cloud: str) -> Callable[[App, str | None, Any], list[tuple[str, bytes]]] | None:
    """The cloud's bundle hook (TargetSpec `bundle_hook`, unumctl/registry.py), imported on
    first use; None when the cloud adds nothing or its module is not installed."""
    try:
        return registry.part(cloud, "bundle_hook")
    except ImportError:
        return None


def runtime_entries(cloud: str) -> dict[str, bytes]:
    """The runtime a bundle for `cloud` carries: {"runtime/<path>": bytes} of every `.py` and
    `.txt` file of the runtime core and of `cloud`'s adapter (no other target's adapter)."""
    entries: dict[str, bytes] = {}
    for rel, p in _files(RUNTIME_DIR):
        top = rel.split("/")[0]
        if top in registry.names() and top != cloud:
            continue
        if rel.endswith(".py") or rel.endswith(".txt"):
            entries[f"runtime/{rel}"] = p.read_bytes()
    return entries


def bundle_entries(app: App, function: str, cloud: str, settings: Any = None) -> list[tuple[str, bytes]]:
    """Every (archive path, bytes) of a function's bundle, sorted by path (`settings`: see
    the module docstring).

    Raises registry.UnknownTarget (a ValueError) for an unknown cloud."""
    spec = app.manifest.functions[function]
    entries: dict[str, bytes] = {}
    entries.update(code_entries(app, function))
    entries.update(runtime_entries(cloud))
    ir = app.workflow.functions[function]
    if ir.fused is not None:  # issue 25: each later member's code in unum_fused/<Member>/ (runtime/fusion.py)
        members = [st["Function"] for st in ir.fused["Steps"][1:]]
        for t in ir.fused.get("InProcess", []):  # fan-in targets run in-process, and their members
            members += [t["Function"]] + [st["Function"] for st in (t["Ir"].get("Fused") or {}).get("Steps", [])[1:]]
        for member in dict.fromkeys(members):
            for rel, data in code_entries(app, member):
                entries[f"{FUSED_DIR}/{member}/{rel}"] = data
    asl = ir.asl
    if asl is not None and asl.colocated:  # issue 25: a fused Step Functions Task chain
        for member in dict.fromkeys(m["Function"] for m in asl.colocated.values()):
            for rel, data in code_entries(app, member):
                entries[f"{FUSED_DIR}/{member}/{rel}"] = data
    entries["unum_ir.json"] = json.dumps(ir.to_dict(), indent=1, sort_keys=True).encode()
    meta = {"app": app.name, "function": function, "handler": spec.handler,
            "options": app.runtime_options(cloud), "cloud": cloud}
    entries["unum_function.json"] = json.dumps(meta, indent=1, sort_keys=True).encode()
    entries["unum_entry.py"] = registry.spec(cloud).entry_line.encode()
    triggers = app.triggers if function == app.workflow.entry.name else []
    if triggers:  # what the entry's adapter hands runtime.sources.starts (docs/triggers.md)
        entries[TRIGGERS_FILE] = json.dumps([t.to_dict() for t in triggers], indent=1, sort_keys=True).encode()
    hook = target_hook(cloud)
    if hook is not None:
        for rel, data in hook(app, function, settings):
            entries[rel] = data
    return sorted(entries.items())


def zip_bytes(entries: list[tuple[str, bytes]]) -> bytes:
    """A deterministic zip of `entries` (already sorted)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for rel, data in entries:
            info = zipfile.ZipInfo(rel, date_time=_FIXED_TIME)
            info.external_attr = 0o100644 << 16
            info.create_system = 3
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data, compresslevel=6)
    return buf.getvalue()


def build_function(app: App, function: str, cloud: str, out_dir: Path | None = None,
                   settings: Any = None) -> Artifact:
    """Build (or reuse) one function's bundle for `cloud`."""
    out = out_dir or state_dir(app) / "build" / cloud
    out.mkdir(parents=True, exist_ok=True)
    entries = bundle_entries(app, function, cloud, settings)
    h = hashlib.sha256(BUILDER_VERSION.encode())
    for rel, data in entries:
        h.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    in_digest = h.hexdigest()
    index_path = out / f"{function}.index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    if index.get("inputs") == in_digest and (out / index["zip"]).exists():
        return Artifact(function, out / index["zip"], index["sha256"], False)
    data = zip_bytes(entries)
    digest = hashlib.sha256(data).hexdigest()
    path = out / f"{function}-{digest[:16]}.zip"
    if not path.exists():  # safefile.write_atomic: a link planted at a guessable NAME.tmp is never followed
        write_atomic(path, data, mode=0o644)
    write_atomic(index_path, json.dumps({"inputs": in_digest, "zip": path.name, "sha256": digest}), mode=0o644)
    for old in out.glob(f"{function}-*.zip"):  # keep only the current archive
        if old != path:
            old.unlink(missing_ok=True)
    return Artifact(function, path, digest, True)


def build_app(app: App, cloud: str, out_dir: Path | None = None, settings: Any = None) -> dict[str, Artifact]:
    """Build every function of the app for `cloud` (`settings`: see the module docstring);
    returns function -> Artifact."""
    if cloud not in registry.names():
        raise ValueError(f"unknown cloud {cloud!r} (known: {', '.join(registry.names())})")
    return {fn: build_function(app, fn, cloud, out_dir, settings) for fn in sorted(app.workflow.functions)}


def build_support(app: App, cloud: str, name: str, settings: Any = None) -> Artifact:
    """A runtime-only archive for `cloud` named `name` (no user code; the AWS error handler):
    the runtime core and `cloud`'s adapter (no other target's adapter), `.py` and `.txt`
    files, plus what the cloud's bundle hook adds for no function (its requirements).
    Deterministic like every bundle; written to `<app>/.unum/build/<cloud>/<name>-<sha256
    prefix>.zip`, older archives of `name` removed. Raises what the hook raises (AWS:
    PackagingError)."""
    entries = runtime_entries(cloud)
    hook = target_hook(cloud)
    for rel, data in (hook(app, None, settings) if hook else []):
        entries[rel] = data
    data = zip_bytes(sorted(entries.items()))
    digest = hashlib.sha256(data).hexdigest()
    out = state_dir(app) / "build" / cloud
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}-{digest[:16]}.zip"
    rebuilt = not path.exists()
    if rebuilt:
        write_atomic(path, data, mode=0o644)
    for old in out.glob(f"{name}-*.zip"):
        if old != path:
            old.unlink(missing_ok=True)
    return Artifact(name, path, digest, rebuilt)
