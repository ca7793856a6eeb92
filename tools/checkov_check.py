"""checkov on the rendered Terraform of every example, compared with the accepted findings.

    python tools/checkov_check.py [--checkov .venv-checkov/bin/checkov] [--examples a,b]
    python tools/checkov_check.py --write-docs      # the table in docs/security.md

Renders, for every example (examples/*/unumctl.yaml) and both clouds, the root module and
its copied modules into a temporary directory, without applying anything: AWS with
unumctl.pipeline.deployment + unumctl.aws.render.render, GCP with
unumctl.gcp.render.render (project `demo-project`). Then runs checkov once over that tree
(`checkov -d DIR --framework terraform -o json --skip-download`; checkov pinned in
tools/checkov-requirements.txt and installed in its own virtual environment by `make
checkov`), and compares the failed checks with terraform/checkov-accepted.yaml:

- a finding is (check id, where) with `where` = `<module>/<type>.<name>` (`root/...` for the
  root module), the same for every example, so one entry covers every function;
- exit 1 and one line per problem when a finding is not accepted (fix it, or add it to the
  list with its reason), when an accepted entry no longer occurs (remove it: the list stays
  honest), when a check listed under `fixed` fails or is not evaluated any more, or when
  checkov reports parsing errors; exit 0 otherwise.

The reasons are published in docs/security.md between the `checkov:begin`/`checkov:end`
markers, written from the same list by `--write-docs` (tests/tools/test_checkov_check.py
fails when they differ). Source: checkov CLI reference, https://www.checkov.io/2.Basics/CLI%20Command%20Reference.html
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

import yaml

ROOT = Path(__file__).resolve().parents[1]
ACCEPTED = ROOT / "terraform" / "checkov-accepted.yaml"
DOCS = ROOT / "docs" / "security.md"
DEFAULT_CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"
BEGIN, END = "<!-- checkov:begin (tools/checkov_check.py --write-docs) -->", "<!-- checkov:end -->"

Finding = tuple[str, str]  # (check id, "<module>/<type>.<name>")


def load_list(path: Path = ACCEPTED) -> dict[str, list[dict[str, str]]]:
    """The list: {"accepted": [{check, where, reason}], "fixed": [{check, where, how}]}.
    Raises ValueError naming the entry when a field is missing or an entry is repeated."""
    data = yaml.safe_load(path.read_text()) or {}
    out: dict[str, list[dict[str, str]]] = {}
    for section, text_key in (("accepted", "reason"), ("fixed", "how")):
        seen = set()
        entries = data.get(section) or []
        for i, e in enumerate(entries):
            missing = [k for k in ("check", "where", text_key) if not str((e or {}).get(k) or "").strip()]
            if missing:
                raise ValueError(f"{path}: {section}[{i}]: missing {', '.join(missing)}")
            key = (e["check"], e["where"])
            if key in seen:
                raise ValueError(f"{path}: {section}[{i}]: {key[0]} on {key[1]} is listed twice")
            seen.add(key)
        out[section] = entries
    return out


def where_of(record: dict[str, Any]) -> str:
    """`<module>/<type>.<name>` of a checkov result record: the module directory from the
    record's file_path (`.../modules/<module>/x.tf`, else `root`), the resource address
    without its `module.<call>.` prefixes."""
    m = re.search(r"/modules/([^/]+)/[^/]+$", record["file_path"])
    resource = re.sub(r"^(module\.[^.]+\.)+", "", record["resource"])
    return f"{m.group(1) if m else 'root'}/{resource}"


def findings(report: dict | list) -> tuple[set[Finding], set[Finding], int]:
    """(failed, passed, parsing errors) of a checkov JSON report (one dict, or a list of
    them when several frameworks ran)."""
    failed, passed, errors = set(), set(), 0
    for r in report if isinstance(report, list) else [report]:
        res = r.get("results") or {}
        failed |= {(c["check_id"], where_of(c)) for c in res.get("failed_checks") or []}
        passed |= {(c["check_id"], where_of(c)) for c in res.get("passed_checks") or []}
        errors += (r.get("summary") or {}).get("parsing_errors", 0)
    return failed, passed, errors


def compare(failed: set[Finding], passed: set[Finding], lists: dict[str, list[dict[str, str]]],
            parsing_errors: int = 0) -> list[str]:
    """The problems, one line each (empty: the check passes); see the module docstring."""
    accepted = {(e["check"], e["where"]) for e in lists["accepted"]}
    fixed = {(e["check"], e["where"]) for e in lists["fixed"]}
    problems = [f"{c} on {w}: new checkov finding; fix it or list it with its reason in "
                f"{ACCEPTED.relative_to(ROOT)}" for c, w in sorted(failed - accepted - fixed)]
    problems += [f"{c} on {w}: accepted in {ACCEPTED.relative_to(ROOT)} but no longer reported; "
                 "remove the entry" for c, w in sorted(accepted - failed)]
    problems += [f"{c} on {w}: listed as fixed but {'fails' if (c, w) in failed else 'not evaluated'}"
                 for c, w in sorted(fixed) if (c, w) not in passed]
    if parsing_errors:
        problems.append(f"checkov could not parse {parsing_errors} file(s)")
    return problems


def render_examples(out: Path, examples: Iterable[Path], clouds: Iterable[str] = ("aws", "gcp")) -> None:
    """Render the root module and modules of each example for each cloud into
    out/<cloud>/<example> (builds the archives as `plan` does; applies nothing)."""
    sys.path.insert(0, str(ROOT))
    from unumctl.pipeline import deployment, load as load_app

    for ex in examples:
        app = load_app(ex)
        if "aws" in clouds:
            from unumctl.aws.render import render as aws_render
            aws_render(deployment(app, "aws"), out / "aws" / ex.name, {"region": "us-east-1"})
        if "gcp" in clouds:
            from unumctl.gcp.render import render as gcp_render
            d, _ = gcp_render(app, deployment(app, "gcp", project="demo-project", region="europe-west1"))
            shutil.copytree(d, out / "gcp" / ex.name, ignore=shutil.ignore_patterns(
                "*.zip", ".terraform*", "*.tfstate*", "*.tfplan", "mirror.tfrc"))


def run_checkov(checkov: Path, directory: Path) -> dict | list:
    """checkov's JSON report of every Terraform file under `directory`. RuntimeError with
    checkov's stderr when it does not produce a report."""
    if not Path(checkov).exists():
        raise RuntimeError(f"{checkov} not found: run `make checkov` (it installs "
                           "tools/checkov-requirements.txt into .venv-checkov)")
    proc = subprocess.run([str(checkov), "-d", str(directory), "--framework", "terraform", "-o", "json",
                           "--skip-download", "--compact"],
                          capture_output=True, text=True,
                          # no network: --skip-download (no policy download), no version check
                          # on the package index (CKV_SKIP_PACKAGE_UPDATE_CHECK, checkov's
                          # common/util/env_vars_config.py), keep it under the tests' egress guard
                          env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "BC_SKIP_MAPPING": "TRUE",
                               "CKV_SKIP_PACKAGE_UPDATE_CHECK": "true", "HOME": str(directory)})
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"checkov exited {proc.returncode} without a JSON report: "
                           f"{(proc.stderr or proc.stdout)[-2000:]}") from None


def docs_table(lists: dict[str, list[dict[str, str]]]) -> str:
    """The Markdown published in docs/security.md between the markers."""
    def cell(s: str) -> str:
        return " ".join(str(s).split()).replace("|", "\\|")

    lines = [BEGIN, "", "**Fixed** (checked to pass on every example):", "",
             "| check | resource | how |", "|---|---|---|"]
    lines += [f"| {e['check']} | `{e['where']}` | {cell(e['how'])} |" for e in lists["fixed"]]
    lines += ["", "**Accepted** (reported on every example; the reason is why it stays):", "",
              "| check | resource | reason |", "|---|---|---|"]
    lines += [f"| {e['check']} | `{e['where']}` | {cell(e['reason'])} |" for e in lists["accepted"]]
    return "\n".join(lines + ["", END])


def docs_text(lists: dict[str, list[dict[str, str]]], text: str) -> str:
    """`text` (docs/security.md) with the part between the markers replaced."""
    i, j = text.index(BEGIN), text.index(END) + len(END)
    return text[:i] + docs_table(lists) + text[j:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkov", type=Path, default=DEFAULT_CHECKOV)
    ap.add_argument("--examples", help="comma-separated example names (default: all)")
    ap.add_argument("--write-docs", action="store_true", help="rewrite the table in docs/security.md")
    ap.add_argument("--keep", type=Path, help="render into this directory and keep it")
    args = ap.parse_args(argv)
    lists = load_list()
    if args.write_docs:
        DOCS.write_text(docs_text(lists, DOCS.read_text()))
        print(f"wrote {DOCS}")
        return 0
    examples = sorted(p.parent for p in (ROOT / "examples").glob("*/unumctl.yaml"))
    if args.examples:
        wanted = set(args.examples.split(","))
        examples = [p for p in examples if p.name in wanted]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="unum-checkov-") as tmp:
        out = args.keep or Path(tmp)
        render_examples(out, examples)
        t1 = time.monotonic()
        report = run_checkov(args.checkov, out)
    failed, passed, errors = findings(report)
    problems = compare(failed, passed, lists, errors)
    for p in problems:
        print(f"checkov: {p}", file=sys.stderr)
    print(f"checkov: {len(examples)} examples x 2 clouds, {len(failed)} distinct findings, "
          f"{len(problems)} problem(s); render {t1 - t0:.1f}s, checkov {time.monotonic() - t1:.1f}s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
