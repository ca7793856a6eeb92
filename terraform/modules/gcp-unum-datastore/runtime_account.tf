# The deployment's one runtime service account (var.runtime_service_account_id; none when
# empty): every function of the app runs as it (gcp-unum-function `service_account_email`),
# and it is granted here once what each function's own account would be granted
# (gcp-unum-function/iam.tf): documents of the app's database only, objects of the
# large-value bucket only, publishing to the dead-letter topic, the secrets the functions
# read, and the Pub/Sub service agent minting its tokens for the triggers' pushes. Publishing
# to the functions' topics is granted by the caller (the rendered root module), once per
# topic. One account instead of one per function keeps an app within the project's quota
# of service accounts and its allow policy's members (IAM "Quotas and limits",
# https://cloud.google.com/iam/quotas: 100 service accounts per project by default, 1,500
# members in all bindings of a policy); what it trades: any function's code may publish to
# every topic of the app.
locals {
  create_runtime_account = var.runtime_service_account_id != ""
  runtime_member         = "serviceAccount:${one(google_service_account.runtime[*].email)}"
}

resource "google_service_account" "runtime" {
  count        = local.create_runtime_account ? 1 : 0
  project      = var.project
  account_id   = var.runtime_service_account_id
  display_name = "Unum ${var.app} functions"
  depends_on   = [google_project_service.this]
}

resource "google_service_account_iam_member" "runtime_pubsub_token_creator" {
  count              = local.create_runtime_account ? 1 : 0
  service_account_id = google_service_account.runtime[0].name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

resource "google_project_iam_member" "runtime_firestore" {
  count   = local.create_runtime_account ? 1 : 0
  project = var.project
  role    = "roles/datastore.user"
  member  = local.runtime_member

  condition {
    title       = "unum-${var.app}-database"
    description = "Only the app's Firestore database"
    expression  = "resource.name == \"projects/${var.project}/databases/${local.database_name}\""
  }
}

resource "google_storage_bucket_iam_member" "runtime_bucket" {
  count  = local.create_runtime_account ? 1 : 0
  bucket = google_storage_bucket.this.name
  role   = "roles/storage.objectUser"
  member = local.runtime_member
}

resource "google_pubsub_topic_iam_member" "runtime_dead_letter" {
  count   = local.create_runtime_account ? 1 : 0
  project = var.project
  topic   = google_pubsub_topic.dead_letter.id
  role    = "roles/pubsub.publisher"
  member  = local.runtime_member
}

resource "google_project_iam_member" "runtime_secrets" {
  for_each = local.create_runtime_account ? var.runtime_secrets : tomap({})
  project  = var.project
  role     = "roles/secretmanager.secretAccessor"
  member   = local.runtime_member

  condition {
    title       = "unum-${var.app}-secret-${each.key}"
    description = "Only the secret ${each.value}"
    expression  = "resource.name == \"projects/${data.google_project.this.number}/secrets/${each.value}\" || resource.name.startsWith(\"projects/${data.google_project.this.number}/secrets/${each.value}/\")"
  }
}
