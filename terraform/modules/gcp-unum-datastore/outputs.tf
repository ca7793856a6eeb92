output "project" {
  description = "The project id, once every API the app uses is enabled: resources that take their project from this output are created after google_project_service."
  value       = var.project
  depends_on  = [google_project_service.this]
}

output "project_number" {
  description = "The project's number (names Google's service agents, e.g. service-<number>@gcp-sa-pubsub.iam.gserviceaccount.com)."
  value       = data.google_project.this.number
}

output "build_service_account" {
  description = "Full resource name (projects/<p>/serviceAccounts/<email>) of the Cloud Build service account of the functions (build_config.service_account), once its roles are granted."
  value       = local.create_build_account ? google_service_account.build[0].id : "projects/${var.project}/serviceAccounts/${var.build_service_account}"
  depends_on  = [google_project_iam_member.build_logs, google_project_iam_member.build_images, google_storage_bucket_iam_member.build_sources]
}

output "database" {
  description = "Firestore database id the functions use (UNUM_DATABASE)."
  value       = local.database_name
}

output "collection" {
  description = "Firestore collection of the app's items (UNUM_COLLECTION)."
  value       = var.collection
}

output "bucket" {
  description = "Name of the private bucket for large values, objects under payloads/ (UNUM_BUCKET)."
  value       = google_storage_bucket.this.name
}

output "source_bucket" {
  description = "Name of the private bucket holding the functions' source archives (no function may write it)."
  value       = google_storage_bucket.sources.name
}

output "dead_letter_topic" {
  description = "Name of the app's dead-letter Pub/Sub topic (UNUM_DEAD_LETTER_TOPIC)."
  value       = google_pubsub_topic.dead_letter.name
}

output "dead_letter_topic_id" {
  description = "Full id (projects/<p>/topics/<t>) of the dead-letter topic, for IAM bindings."
  value       = google_pubsub_topic.dead_letter.id
}

output "runtime_service_account_email" {
  description = "Email of the runtime service account (runtime_service_account_id), empty when none was created."
  value       = local.create_runtime_account ? google_service_account.runtime[0].email : ""
}
