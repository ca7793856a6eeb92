# Orchestration datastore of one Unum app: the DynamoDB table (checkpoints, fan-in and GC
# sets, session results), the private S3 bucket for values too large for an item or an
# async invoke payload (TLS only), and the SQS queue that receives the error handler's own
# failed invocations. Layout: runtime/aws/datastore.py. Encryption at rest uses AWS-owned
# keys unless var.kms_key_arn names a customer-managed key (docs/security.md).

resource "aws_dynamodb_table" "this" {
  name         = var.table_name
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "session"
  range_key    = "name"

  attribute {
    name = "session"
    type = "S"
  }

  attribute {
    name = "name"
    type = "S"
  }

  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = var.point_in_time_recovery
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = var.kms_key_arn
  }
}

resource "aws_s3_bucket" "blobs" {
  bucket_prefix = var.bucket_prefix
  force_destroy = true
}

resource "aws_s3_bucket_public_access_block" "blobs" {
  bucket                  = aws_s3_bucket.blobs.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_server_side_encryption_configuration" "blobs" {
  bucket = aws_s3_bucket.blobs.id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = var.kms_key_arn == null ? "AES256" : "aws:kms"
      kms_master_key_id = var.kms_key_arn
    }
    bucket_key_enabled = var.kms_key_arn != null
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "blobs" {
  bucket = aws_s3_bucket.blobs.id

  rule {
    id     = "expire-unum-blobs"
    status = "Enabled"

    filter {
      prefix = var.blob_prefix
    }

    expiration {
      days = var.blob_expiry_days
    }
  }

  # the whole bucket, not only the blob prefix
  rule {
    id     = "abort-incomplete-uploads"
    status = "Enabled"

    filter {}

    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }
}

# Requests without TLS are refused (aws:SecureTransport), whoever makes them.
data "aws_iam_policy_document" "blobs_tls" {
  statement {
    sid     = "DenyInsecureTransport"
    effect  = "Deny"
    actions = ["s3:*"]
    resources = [
      aws_s3_bucket.blobs.arn,
      "${aws_s3_bucket.blobs.arn}/*",
    ]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "blobs" {
  bucket     = aws_s3_bucket.blobs.id
  policy     = data.aws_iam_policy_document.blobs_tls.json
  depends_on = [aws_s3_bucket_public_access_block.blobs]
}

# On-failure destination of the error handler (every other function's is the error
# handler): an invocation the error handler itself could not process lands here, kept for
# 14 days (SQS's maximum), instead of being dropped.
resource "aws_sqs_queue" "failed" {
  name                      = "${substr(replace(var.table_name, ".", "-"), 0, 73)}-failed" # SQS: 80 of A-Za-z0-9_-
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = var.kms_key_arn == null ? true : null
  kms_master_key_id         = var.kms_key_arn
}
