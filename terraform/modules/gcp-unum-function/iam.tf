# Permissions of the function's dedicated service account, which is also its trigger's
# identity (with var.service_account_email, a shared account, only the invoker grant is made
# here: its creator grants the rest once, gcp-unum-datastore `runtime_service_account_id`): invoke the function's Cloud Run service (the trigger's push), read and write
# documents of the app's Firestore database only, objects of the app's large-value bucket
# only (not the source bucket), publish to the dead-letter topic. Publishing to successors'
# topics is granted by the caller (the rendered root module).
#
# Not granted: roles/eventarc.eventReceiver. Eventarc, "Roles and permissions for Cloud Run
# targets" (https://cloud.google.com/eventarc/docs/roles-permissions): the Event Receiver
# role lets a trigger receive events from event providers, and "You don't need to grant the
# role if you are routing direct events from Cloud Pub/Sub", which is this trigger's only
# source (google.cloud.pubsub.topic.v1.messagePublished).

# The trigger's service account may invoke the function's Cloud Run service.
resource "google_cloud_run_service_iam_member" "invoker" {
  project  = var.project
  location = var.region
  service  = google_cloudfunctions2_function.this.name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${local.service_account_email}"
}

# The Pub/Sub service agent mints the OIDC token of the trigger's push to the function (as
# this account). The same page: "If you enabled the Cloud Pub/Sub service agent on or before
# April 8, 2021, grant the Service Account Token Creator role"; granted here on this account
# only (not project-wide), and harmless on newer projects.
resource "google_service_account_iam_member" "pubsub_token_creator" {
  count              = local.own_account ? 1 : 0
  service_account_id = google_service_account.this[0].name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = "serviceAccount:service-${var.project_number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

# Firestore: read and write documents (checkpoints, sets, results) of the app's database
# only. Firestore IAM stops at the database (an IAM condition on its resource name);
# collections are not IAM resources.
resource "google_project_iam_member" "firestore" {
  count   = local.own_account ? 1 : 0
  project = var.project
  role    = "roles/datastore.user"
  member  = "serviceAccount:${local.service_account_email}"

  condition {
    title       = "unum-${var.app}-database"
    description = "Only the app's Firestore database"
    expression  = "resource.name == \"projects/${var.project}/databases/${var.database}\""
  }
}

# Objects: create, read, replace and delete objects of the app's large-value bucket (no IAM
# or bucket administration); the source bucket is not granted.
resource "google_storage_bucket_iam_member" "bucket" {
  count  = local.own_account ? 1 : 0
  bucket = var.bucket
  role   = "roles/storage.objectUser"
  member = "serviceAccount:${local.service_account_email}"
}

# Dead-letter path: the function publishes messages it gives up on.
resource "google_pubsub_topic_iam_member" "dead_letter" {
  count   = local.own_account ? 1 : 0
  project = var.project
  topic   = var.dead_letter_topic
  role    = "roles/pubsub.publisher"
  member  = "serviceAccount:${local.service_account_email}"
}

# Secrets: read (roles/secretmanager.secretAccessor) only the secrets of var.secret_environment,
# by an IAM condition on the resource name, which Secret Manager gives as
# projects/<number>/secrets/<id>[/versions/<v>] (IAM, "Resource attributes for IAM
# Conditions", https://cloud.google.com/iam/docs/conditions-resource-attributes).
resource "google_project_iam_member" "secrets" {
  for_each = local.own_account ? var.secret_environment : tomap({})
  project  = var.project
  role     = "roles/secretmanager.secretAccessor"
  member   = "serviceAccount:${local.service_account_email}"

  condition {
    title       = "unum-${var.app}-secret-${each.key}"
    description = "Only the secret ${each.value}"
    expression  = "resource.name == \"projects/${var.project_number}/secrets/${each.value}\" || resource.name.startsWith(\"projects/${var.project_number}/secrets/${each.value}/\")"
  }
}
