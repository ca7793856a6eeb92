# Permissions of the function's dedicated service account: receive its trigger's events,
# read and write Firestore documents and the app's bucket, publish to the dead-letter topic.
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

# Firestore: read and write documents (checkpoints, sets, results).
resource "google_project_iam_member" "firestore" {
  project = var.project
  role    = "roles/datastore.user"
  member  = "serviceAccount:${google_service_account.this.email}"
}

# Objects: read/write only the app's bucket.
resource "google_storage_bucket_iam_member" "bucket" {
  bucket = var.bucket
  role   = "roles/storage.objectAdmin"
  member = "serviceAccount:${google_service_account.this.email}"
}

# Dead-letter path: the function publishes messages it gives up on.
resource "google_pubsub_topic_iam_member" "dead_letter" {
  project = var.project
  topic   = var.dead_letter_topic
  role    = "roles/pubsub.publisher"
  member  = "serviceAccount:${google_service_account.this.email}"
}
