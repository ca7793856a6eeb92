output "function_name" {
  description = "Name of the Cloud Function."
  value       = google_cloudfunctions2_function.this.name
}

output "topic" {
  description = "Name of the function's trigger topic (publishing to it invokes the function)."
  value       = google_pubsub_topic.this.name
}

output "topic_id" {
  description = "Full id (projects/<p>/topics/<t>) of the trigger topic, for IAM bindings of predecessors."
  value       = google_pubsub_topic.this.id
}

output "service_account_email" {
  description = "Email of the account the function runs as (its own, or var.service_account_email)."
  value       = local.service_account_email
}

output "url" {
  description = "URL of the function's underlying Cloud Run service (internal ingress only)."
  value       = google_cloudfunctions2_function.this.url
}

output "source_object" {
  description = "Name of the function's archive object in the source bucket (a trigger function of the app runs the entry's)."
  value       = google_storage_bucket_object.source.name
}
