output "function_name" {
  value = google_cloudfunctions2_function.this.name
}

output "topic" {
  value = google_pubsub_topic.this.name
}

output "topic_id" {
  value = google_pubsub_topic.this.id
}

output "service_account_email" {
  value = google_service_account.this.email
}

output "url" {
  value = google_cloudfunctions2_function.this.url
}
