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
