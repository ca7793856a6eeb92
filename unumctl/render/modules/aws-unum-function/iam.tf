# Least-privilege execution role: write its own log streams, the given DynamoDB actions on
# the app's table, objects below the blob prefix of the app's bucket, and invoke only the
# given functions (successors and the error handler); send to its on-failure queue when that
# is an SQS queue, and use the customer-managed KMS key when one is given.

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

  dynamic "statement" {
    for_each = var.on_failure_arn != null && can(regex("^arn:[^:]+:sqs:", var.on_failure_arn)) ? [var.on_failure_arn] : []
    content {
      sid       = "OnFailureQueue"
      actions   = ["sqs:SendMessage"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [var.kms_key_arn]
    content {
      sid       = "Kms"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = [statement.value]
    }
  }
}

resource "aws_iam_role_policy" "this" {
  name   = "unum"
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.this.json
}
