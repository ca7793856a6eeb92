# Permissions of the function's dedicated service account: receive its trigger's events,
# read and write documents of the app's Firestore database only, objects of the app's
# large-value bucket only (not the source bucket), publish to the dead-letter topic.
# Publishing to successors' topics is granted by the caller (the rendered root module).

# The trigger's service account may invoke the function's Cloud Run service.
resource "google_cloud_run_service_iam_member" "invoker" {
  project  = var.project
  location = var.region
  service  = google_cloudfunctions2_function.this.name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${google_service_account.this.email}"
}

resource "google_project_iam_member" "event_receiver" {
  project = var.project
  role    = "roles/eventarc.eventReceiver"
  member  = "serviceAccount:${google_service_account.this.email}"
}

# Firestore: read and write documents (checkpoints, sets, results) of the app's database
# only. Firestore IAM stops at the database (an IAM condition on its resource name);
# collections are not IAM resources.
resource "google_project_iam_member" "firestore" {
  project = var.project
  role    = "roles/datastore.user"
  member  = "serviceAccount:${google_service_account.this.email}"

  condition {
    title       = "unum-${var.app}-database"
    description = "Only the app's Firestore database"
    expression  = "resource.name == \"projects/${var.project}/databases/${var.database}\""
  }
}

# Objects: create, read, replace and delete objects of the app's large-value bucket (no IAM
# or bucket administration); the source bucket is not granted.
resource "google_storage_bucket_iam_member" "bucket" {
  bucket = var.bucket
  role   = "roles/storage.objectUser"
  member = "serviceAccount:${google_service_account.this.email}"
}

# Dead-letter path: the function publishes messages it gives up on.
resource "google_pubsub_topic_iam_member" "dead_letter" {
  project = var.project
  topic   = var.dead_letter_topic
  role    = "roles/pubsub.publisher"
  member  = "serviceAccount:${google_service_account.this.email}"
}
