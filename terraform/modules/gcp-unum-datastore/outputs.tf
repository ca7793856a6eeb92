output "database" {
  value = local.database_name
}

output "collection" {
  value = var.collection
}

output "bucket" {
  value = google_storage_bucket.this.name
}

output "dead_letter_topic" {
  value = google_pubsub_topic.dead_letter.name
}

output "dead_letter_topic_id" {
  value = google_pubsub_topic.dead_letter.id
}
