# One Unum function on Lambda: a least-privilege execution role, its log group, the function
# from the deterministic archive, and the async invoke configuration (platform retries and
# the app's error handler as on-failure destination).

terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.100"
    }
  }
}

variable "function_name" {
  type = string
}

variable "handler" {
  type = string
}

variable "runtime" {
  type = string
}

variable "architecture" {
  type = string
}

variable "memory_size" {
  type = number
}

variable "timeout" {
  type = number
}

variable "zip_path" {
  type = string
}

variable "environment" {
  type = map(string)
}

variable "invoke_arns" {
  type        = list(string)
  description = "Unqualified ARNs of the functions this one may invoke (successors, error handler)"
}

variable "table_arn" {
  type = string
}

variable "dynamodb_actions" {
  type = list(string)
}

variable "bucket_arn" {
  type = string
}

variable "blob_prefix" {
  type = string
}

variable "log_retention_days" {
  type = number
}

variable "maximum_retry_attempts" {
  type = number
}

variable "on_failure_arn" {
  type        = string
  default     = null
  description = "On-failure destination of async invocations (null: none)"
}

data "aws_partition" "current" {}
data "aws_region" "current" {}
data "aws_caller_identity" "current" {}

locals {
  log_group_arn = "arn:${data.aws_partition.current.partition}:logs:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:log-group:/aws/lambda/${var.function_name}"
}

data "aws_iam_policy_document" "assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "this" {
  name               = "${var.function_name}-role"
  assume_role_policy = data.aws_iam_policy_document.assume.json
}

data "aws_iam_policy_document" "this" {
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${local.log_group_arn}:log-stream:*"]
  }

  statement {
    sid       = "Datastore"
    actions   = var.dynamodb_actions
    resources = [var.table_arn]
  }

  statement {
    sid       = "Blobs"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
    resources = ["${var.bucket_arn}/${var.blob_prefix}*"]
  }

  statement {
    sid       = "ListBlobs"
    actions   = ["s3:ListBucket"]
    resources = [var.bucket_arn]
    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["${var.blob_prefix}*"]
    }
  }

  dynamic "statement" {
    for_each = length(var.invoke_arns) > 0 ? [1] : []
    content {
      sid       = "InvokeSuccessors"
      actions   = ["lambda:InvokeFunction"]
      resources = var.invoke_arns
    }
  }
}

resource "aws_iam_role_policy" "this" {
  name   = "unum"
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.this.json
}

resource "aws_cloudwatch_log_group" "this" {
  name              = "/aws/lambda/${var.function_name}"
  retention_in_days = var.log_retention_days
}

resource "aws_lambda_function" "this" {
  function_name    = var.function_name
  role             = aws_iam_role.this.arn
  handler          = var.handler
  runtime          = var.runtime
  architectures    = [var.architecture]
  memory_size      = var.memory_size
  timeout          = var.timeout
  filename         = var.zip_path
  source_code_hash = filebase64sha256(var.zip_path)

  environment {
    variables = var.environment
  }

  depends_on = [aws_iam_role_policy.this, aws_cloudwatch_log_group.this]
}

resource "aws_lambda_function_event_invoke_config" "this" {
  function_name          = aws_lambda_function.this.function_name
  maximum_retry_attempts = var.maximum_retry_attempts

  dynamic "destination_config" {
    for_each = var.on_failure_arn == null ? [] : [var.on_failure_arn]
    content {
      on_failure {
        destination = destination_config.value
      }
    }
  }
}

output "function_name" {
  value = aws_lambda_function.this.function_name
}

output "arn" {
  value = aws_lambda_function.this.arn
}

output "role_arn" {
  value = aws_iam_role.this.arn
}
