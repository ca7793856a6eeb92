"""Destroy then apply of a GCP deployment: the Firestore database a `destroy` leaves and the
next `apply` adopts (docs/gcp.md "Destroy, --delete-data and adoption").

A database the datastore module creates has delete protection on and `deletion_policy =
ABANDON` (terraform/modules/gcp-unum-datastore), so `terraform destroy` removes it from the
state and leaves it, with its documents, in the project; creating it again fails with
"Error 409: Database already exists. Please use another database_id" (as quoted in
GoogleCloudPlatform/core-solution-services#6). Chosen: adopt it with a Terraform `import`
block (https://developer.hashicorp.com/terraform/language/import), not `create_database =
false`: the module keeps managing it (delete protection, a later `destroy --delete-data`), and
an `import` of a database that is not there fails the plan, so the block is rendered only
for the database this working directory's own destroy left. That destroy writes the record
ABANDONED (`<terraform dir>/abandoned-database.json`: {"project", "database", "id"}); the
next apply renders the import when the record names the same project and database, and
removes the record once the apply succeeded. A database left some other way (another
checkout, a lost state) is a conflict: one line naming the fix (`conflict_message`).
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["CONFLICT_TEXT", "DATABASE_ADDRESS", "conflict_message", "database_id", "forget",
           "record_abandoned", "to_adopt"]

ABANDONED = "abandoned-database.json"
DATABASE_ADDRESS = "module.datastore.google_firestore_database.this[0]"
CONFLICT_TEXT = "Database already exists. Please use another database_id"


def database_id(project: str, database: str) -> str:
    """The import id of a Firestore database: `projects/<project>/databases/<database>`
    (google_firestore_database's import formats)."""
    return f"projects/{project}/databases/{database}"


def record_abandoned(workdir: Path, project: str, database: str) -> Path:
    """Write the record that `destroy` left `database` of `project` in place; returns its path."""
    path = Path(workdir) / ABANDONED
    path.write_text(json.dumps({"project": project, "database": database,
                                "id": database_id(project, database)}, indent=1) + "\n")
    return path


def abandoned(workdir: Path) -> dict | None:
    """The record of the database a destroy left ({"project", "database", "id"}), or None
    (no record, or one that does not parse: then nothing is adopted and a conflict is
    reported as such)."""
    path = Path(workdir) / ABANDONED
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or not all(isinstance(rec.get(k), str) for k in ("project", "database", "id")):
        return None
    return rec


def to_adopt(workdir: Path, project: str | None, database: str, create_database: bool) -> str | None:
    """The import id to render for this apply (the recorded database, when it is the one this
    apply would create in the same project), else None."""
    rec = abandoned(workdir)
    if rec is None or not create_database or not project:
        return None
    if rec["project"] != project or rec["database"] != database:
        return None
    return rec["id"]


def forget(workdir: Path) -> None:
    """Remove the record (the database is in the state again, or was deleted)."""
    (Path(workdir) / ABANDONED).unlink(missing_ok=True)


def conflict_message(app_root: Path, workdir: Path, project: str, database: str) -> str:
    """The one-line error for a create refused because the database exists, naming the fixes."""
    return (f"the Firestore database {database} already exists in project {project} (a destroy leaves it: "
            f"delete protection, deletion_policy ABANDON); if it is this app's, adopt it: terraform "
            f"-chdir={workdir} import '{DATABASE_ADDRESS}' {database_id(project, database)} and apply again; "
            f"else set clouds.gcp.database to another id, or clouds.gcp.create_database: false to use it "
            f"as it is, in {Path(app_root) / 'unumctl.yaml'}")
