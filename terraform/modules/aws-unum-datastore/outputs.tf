output "table_name" {
  description = "Name of the DynamoDB table (UNUM_TABLE of every function)."
  value       = aws_dynamodb_table.this.name
}

output "table_arn" {
  description = "ARN of the DynamoDB table (resource of the functions' Datastore policy statement)."
  value       = aws_dynamodb_table.this.arn
}

output "bucket_name" {
  description = "Name of the private S3 bucket of large values (UNUM_BUCKET of every function)."
  value       = aws_s3_bucket.blobs.id
}

output "bucket_arn" {
  description = "ARN of the private S3 bucket of large values."
  value       = aws_s3_bucket.blobs.arn
}

output "failure_queue_arn" {
  description = "ARN of the SQS queue receiving the error handler's failed invocations (its on_failure_arn)."
  value       = aws_sqs_queue.failed.arn
}

output "failure_queue_url" {
  description = "URL of the SQS queue receiving the error handler's failed invocations."
  value       = aws_sqs_queue.failed.url
}
