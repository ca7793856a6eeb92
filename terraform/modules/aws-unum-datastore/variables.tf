variable "table_name" {
  description = "Name of the DynamoDB table holding checkpoints, fan-in/GC sets and session results (3-255 characters of A-Z, a-z, 0-9, '_', '-', '.')."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_.-]{3,255}$", var.table_name))
    error_message = "table_name must be 3-255 characters of A-Z, a-z, 0-9, '_', '-' and '.' (DynamoDB naming rules)."
  }
}

variable "bucket_prefix" {
  description = "Prefix of the generated S3 bucket name (AWS appends a unique suffix; at most 37 characters of a-z, 0-9, '.', '-')."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{0,36}$", var.bucket_prefix))
    error_message = "bucket_prefix must be 1-37 characters of a-z, 0-9, '.' and '-', starting with a letter or digit (S3 bucket_prefix limit)."
  }
}

variable "blob_prefix" {
  description = "Key prefix of Unum blobs (values too large for an item or an async payload) inside the bucket; ends with '/'."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_.-]+/$", var.blob_prefix))
    error_message = "blob_prefix must be characters of A-Z, a-z, 0-9, '_', '.', '-' ending with '/', e.g. \"s/\"."
  }
}

variable "blob_expiry_days" {
  description = "Days after which blobs expire (at least the session result retention, runtime.retention)."
  type        = number

  validation {
    condition     = var.blob_expiry_days >= 1 && floor(var.blob_expiry_days) == var.blob_expiry_days
    error_message = "blob_expiry_days must be a whole number of days >= 1 (S3 lifecycle expiration)."
  }
}

variable "point_in_time_recovery" {
  description = "Enable DynamoDB point-in-time recovery on the table."
  type        = bool
  default     = false
}

variable "kms_key_arn" {
  description = "ARN of a customer-managed KMS key for the table, the bucket and the failure queue (null: AWS-owned keys). Its key policy must allow DynamoDB, S3 and SQS use by the account."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:[^:]+:kms:", var.kms_key_arn))
    error_message = "kms_key_arn must be null or a KMS key ARN (arn:<partition>:kms:...)."
  }
}
