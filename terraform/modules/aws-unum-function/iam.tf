# Least-privilege execution role: the actions of var.permissions (the runtime's table,
# runtime/aws/iam.py), each on one resource: its own log streams, the app's table, objects
# below the blob prefix of the app's bucket and the bucket (ListBucket: a missing blob is a
# 404, not a 403), the given functions only (successors and the error handler), its
# on-failure queue when that is an SQS queue, the customer-managed KMS key when one is given;
# and the actions of the Step Functions integration Tasks it runs (var.integrations).

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
  name               = coalesce(var.role_name, "${var.function_name}-role") # unumctl/aws/names.py role: checked against IAM's 64
  assume_role_policy = data.aws_iam_policy_document.assume.json
}

# One statement per resource of var.permissions, with the resource name as its Sid; the
# names and actions come from the runtime's table (runtime/aws/iam.py). A resource this
# function does not have (no successors, an on-failure destination that is not an SQS queue,
# no KMS key) gets no statement.
locals {
  resource_arns = {
    Datastore        = [var.table_arn]
    Blobs            = ["${var.bucket_arn}/${var.blob_prefix}*"]
    ListBlobs        = [var.bucket_arn]
    InvokeSuccessors = var.invoke_arns
    Logs             = ["${local.log_group_arn}:log-stream:*"]
    OnFailureQueue   = var.on_failure_arn != null && can(regex("^arn:[^:]+:sqs:", var.on_failure_arn)) ? [var.on_failure_arn] : []
    Kms              = var.kms_key_arn == null ? [] : [var.kms_key_arn]
  }
}

data "aws_iam_policy_document" "this" {
  dynamic "statement" {
    for_each = { for name, actions in var.permissions : name => actions if length(local.resource_arns[name]) > 0 && length(actions) > 0 }
    content {
      sid       = statement.key
      actions   = statement.value
      resources = local.resource_arns[statement.key]
    }
  }

  # the Step Functions integration Tasks the function runs: each on the resource its
  # definition names, "*" only where the Task chooses it at run time (runtime/aws/iam.py)
  dynamic "statement" {
    for_each = var.integrations
    content {
      sid     = statement.value.sid
      actions = statement.value.actions
      resources = [for r in statement.value.resources : replace(replace(replace(r, "{partition}",
        data.aws_partition.current.partition), "{region}", data.aws_region.current.name),
      "{account}", data.aws_caller_identity.current.account_id)]
    }
  }
}

resource "aws_iam_role_policy" "this" {
  name   = "unum"
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.this.json
}
