# Shared resources of one Unum app on GCP: APIs, the Firestore database (or an existing
# one) with a TTL policy on `expires_at`, two private buckets (function sources, which the
# functions cannot write; large values under payloads/, which they can) named
# <bucket_prefix>[-src]-<random hex> so the names cannot be guessed, the dead-letter
# topic and the Cloud Build service account of the app's functions. Source: seed 001 §4.2;
# docs/architecture.md §3.
#
# API enablement first: every resource here that calls a Google API depends on
# google_project_service.this (directly, or through a resource that does), and the outputs
# `project`, `project_number` and `build_service_account` carry that dependency to the
# callers (an output's depends_on, https://developer.hashicorp.com/terraform/language/values/outputs),
# so a first apply on a fresh project does not race the enablement (SERVICE_DISABLED).
# google_project_service itself needs the Service Usage API (serviceusage.googleapis.com),
# enabled on every project created in the console; Terraform cannot enable it first.
#
# Delete protection: a database created here has delete_protection_state =
# DELETE_PROTECTION_ENABLED and deletion_policy = ABANDON, so `terraform destroy` removes it
# from the state but leaves the database (and its data) in the project. To really delete it,
# set var.database_deletion_policy = "DELETE" and var.database_delete_protection = false,
# apply, then destroy. An existing database (var.create_database = false) is never touched.

locals {
  services = toset([
    "cloudfunctions.googleapis.com",
    "run.googleapis.com",
    "cloudbuild.googleapis.com",
    "artifactregistry.googleapis.com",
    "eventarc.googleapis.com",
    "pubsub.googleapis.com",
    "firestore.googleapis.com",
    "storage.googleapis.com",
    "iam.googleapis.com",
    # project IAM policy (google_project_iam_member) and the project number (data.google_project)
    "cloudresourcemanager.googleapis.com",
  ])
  database_name = var.create_database ? google_firestore_database.this[0].name : var.database_id
}

resource "google_project_service" "this" {
  for_each           = local.services
  project            = var.project
  service            = each.value
  disable_on_destroy = false
}

resource "google_firestore_database" "this" {
  count                   = var.create_database ? 1 : 0
  project                 = var.project
  name                    = var.database_id
  location_id             = var.database_location
  type                    = "FIRESTORE_NATIVE"
  concurrency_mode        = "PESSIMISTIC"
  delete_protection_state = var.database_delete_protection ? "DELETE_PROTECTION_ENABLED" : "DELETE_PROTECTION_DISABLED"
  deletion_policy         = var.database_deletion_policy
  depends_on              = [google_project_service.this]
}

# TTL policy: Firestore deletes documents whose expires_at has passed (typically within
# 24 h). The field is exempt from indexing (a monotonically growing timestamp index would
# hotspot), as is the item JSON.
resource "google_firestore_field" "ttl" {
  project    = var.project
  database   = local.database_name
  collection = var.collection
  field      = "expires_at"
  ttl_config {}
  index_config {}
  # an existing database (create_database = false) gives no dependency through its name
  depends_on = [google_project_service.this]
}

resource "google_firestore_field" "item" {
  project    = var.project
  database   = local.database_name
  collection = var.collection
  field      = "item"
  index_config {}
  depends_on = [google_firestore_field.ttl]
}

# Execution history (runtime/gcp/history.py): `<collection>-history`, removed with the results.
resource "google_firestore_field" "history_ttl" {
  project    = var.project
  database   = local.database_name
  collection = "${var.collection}-history"
  field      = "expires_at"
  ttl_config {}
  index_config {}
  depends_on = [google_firestore_field.item]
}

resource "google_firestore_field" "history_events" {
  project    = var.project
  database   = local.database_name
  collection = "${var.collection}-history"
  field      = "events"
  index_config {}
  depends_on = [google_firestore_field.history_ttl]
}

# 8 random hex digits, fixed at the first apply (kept in the state): bucket names are
# global and public, and a predictable one can be taken first by someone else.
resource "random_id" "bucket" {
  byte_length = 4
  keepers = {
    bucket_prefix = var.bucket_prefix
  }
}

resource "google_storage_bucket" "this" {
  project                     = var.project
  name                        = "${var.bucket_prefix}-${random_id.bucket.hex}"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = true

  lifecycle_rule {
    condition {
      age            = var.payload_expiry_days
      matches_prefix = ["payloads/"]
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [google_project_service.this]
}

# Function source archives: written by Terraform, read by Cloud Build; the functions'
# service accounts have no role on it, so no function can replace another's code.
resource "google_storage_bucket" "sources" {
  project                     = var.project
  name                        = "${var.bucket_prefix}-src-${random_id.bucket.hex}"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = true
  depends_on                  = [google_project_service.this]
}

# Messages a function gave up on (after max delivery attempts) are published here and kept
# for 7 days on a pull subscription: nothing is lost silently.
resource "google_pubsub_topic" "dead_letter" {
  project    = var.project
  name       = local.dead_letter_topic
  depends_on = [google_project_service.this]
}

resource "google_pubsub_subscription" "dead_letter" {
  project                    = var.project
  name                       = "${local.dead_letter_topic}-hold"
  topic                      = google_pubsub_topic.dead_letter.id
  message_retention_duration = "604800s"
  ack_deadline_seconds       = 60

  expiration_policy {
    ttl = ""
  }
}

# The project number names the Pub/Sub service agent, which the function module lets mint
# tokens for each function's account (authenticated push to the function).
data "google_project" "this" {
  project_id = var.project
  depends_on = [google_project_service.this]
}

# Cloud Build service account of the app's functions (unless the caller gives its own,
# var.build_service_account). Projects created after July 2024 may have a default build
# account without the permissions to build a function; Cloud Run functions, "Custom Service
# Account for Cloud Build" (https://cloud.google.com/functions/docs/securing/build-custom-sa)
# lists what a user-created one needs: roles/logging.logWriter (build logs),
# roles/artifactregistry.writer (the built image) and read access to the source archive,
# granted here on the source bucket only (roles/storage.objectViewer).
locals {
  create_build_account = var.build_service_account == ""
  dead_letter_topic    = var.dead_letter_topic != "" ? var.dead_letter_topic : "${var.app}-dead-letter"
}

resource "google_service_account" "build" {
  count        = local.create_build_account ? 1 : 0
  project      = var.project
  account_id   = var.build_service_account_id
  display_name = "Unum ${var.app} Cloud Build"
  depends_on   = [google_project_service.this]
}

resource "google_project_iam_member" "build_logs" {
  count   = local.create_build_account ? 1 : 0
  project = var.project
  role    = "roles/logging.logWriter"
  member  = "serviceAccount:${google_service_account.build[0].email}"
}

resource "google_project_iam_member" "build_images" {
  count   = local.create_build_account ? 1 : 0
  project = var.project
  role    = "roles/artifactregistry.writer"
  member  = "serviceAccount:${google_service_account.build[0].email}"
}

resource "google_storage_bucket_iam_member" "build_sources" {
  count  = local.create_build_account ? 1 : 0
  bucket = google_storage_bucket.sources.name
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:${google_service_account.build[0].email}"
}
