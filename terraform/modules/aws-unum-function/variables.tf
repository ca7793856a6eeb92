variable "function_name" {
  description = "Deployed Lambda function name (1-64 characters of A-Z, a-z, 0-9, '-', '_'); also names the log group, and the role (<name>-role) unless role_name is given."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,64}$", var.function_name))
    error_message = "function_name must be 1-64 characters of A-Z, a-z, 0-9, '-' and '_' (Lambda naming rules)."
  }
}

variable "role_name" {
  description = "Name of the execution role (IAM role names are account-wide: unumctl gives <function>-<region>-role); null = <function_name>-role."
  type        = string
  default     = null

  validation {
    condition     = var.role_name == null || can(regex("^[A-Za-z0-9+=,.@_-]{1,64}$", var.role_name))
    error_message = "role_name must be 1-64 characters of A-Z, a-z, 0-9 and '+=,.@_-' (IAM CreateRole RoleName)."
  }
}

variable "handler" {
  description = "Python handler of the function, 'module.function' (e.g. runtime.aws.entry.handler)."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)+$", var.handler))
    error_message = "handler must be 'module.function', e.g. runtime.aws.entry.handler."
  }
}

variable "runtime" {
  description = "Lambda runtime identifier; Unum's runtime is Python, e.g. python3.13."
  type        = string

  validation {
    condition     = can(regex("^python3\\.[0-9]+$", var.runtime))
    error_message = "runtime must be a Lambda Python 3 runtime identifier such as python3.13."
  }
}

variable "architecture" {
  description = "Instruction set of the function: x86_64 or arm64 (must match the wheels in the archive)."
  type        = string
  default     = "x86_64"

  validation {
    condition     = contains(["x86_64", "arm64"], var.architecture)
    error_message = "architecture must be x86_64 or arm64."
  }
}

variable "memory_size" {
  description = "Memory of the function in MB (Lambda: 128-10240)."
  type        = number
  default     = 128

  validation {
    condition     = var.memory_size >= 128 && var.memory_size <= 10240 && floor(var.memory_size) == var.memory_size
    error_message = "memory_size must be a whole number of MB from 128 to 10240 (Lambda's range)."
  }
}

variable "timeout" {
  description = "Timeout of one invocation in seconds (Lambda: 1-900)."
  type        = number
  default     = 60

  validation {
    condition     = var.timeout >= 1 && var.timeout <= 900 && floor(var.timeout) == var.timeout
    error_message = "timeout must be a whole number of seconds from 1 to 900 (Lambda's range)."
  }
}

variable "zip_path" {
  description = "Path of the deterministic deployment archive (.zip) built by unumctl; its SHA-256 becomes source_code_hash."
  type        = string

  validation {
    condition     = endswith(var.zip_path, ".zip")
    error_message = "zip_path must name a .zip archive."
  }
}

variable "store_on_s3" {
  description = "Upload the archive to s3_bucket and deploy it from there (archives over Lambda's 50 MB direct-upload limit) instead of uploading it directly."
  type        = bool
  default     = false
}

variable "s3_bucket" {
  description = "Bucket the archive is uploaded to when store_on_s3 is true (the key is <s3_prefix><function_name>/<archive file name>)."
  type        = string
  default     = null
}

variable "s3_prefix" {
  description = "Key prefix of the uploaded archive in s3_bucket."
  type        = string
  default     = "packages/"
}

variable "environment" {
  description = "Environment variables of the function (UNUM_TABLE, UNUM_BUCKET, UNUM_BLOB_PREFIX, UNUM_FUNCTION_PREFIX, ...)."
  type        = map(string)
  default     = {}
}

variable "invoke_arns" {
  description = "Unqualified ARNs of the functions this one may invoke (successors, error handler), or the app's pattern arn:...:function:<app>_* (unumctl/aws/policies.py)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for a in var.invoke_arns : can(regex("^arn:[^:]+:lambda:", a))])
    error_message = "invoke_arns must be Lambda function ARNs (arn:<partition>:lambda:...)."
  }
}

variable "table_arn" {
  description = "ARN of the app's DynamoDB table (output table_arn of aws-unum-datastore)."
  type        = string

  validation {
    condition     = can(regex("^arn:[^:]+:dynamodb:", var.table_arn))
    error_message = "table_arn must be a DynamoDB table ARN (arn:<partition>:dynamodb:...)."
  }
}

variable "permissions" {
  description = "IAM actions of the execution role per resource: Datastore (the table), Blobs (objects below blob_prefix), ListBlobs (the bucket), InvokeSuccessors (invoke_arns), Logs (its log streams), OnFailureQueue (an SQS on_failure_arn), Kms (kms_key_arn). unumctl passes the runtime's table (runtime/aws/iam.py)."
  type        = map(list(string))

  validation {
    condition     = length(var.permissions) > 0 && alltrue([for k, v in var.permissions : contains(["Datastore", "Blobs", "ListBlobs", "InvokeSuccessors", "Logs", "OnFailureQueue", "Kms"], k) && alltrue([for a in v : can(regex("^[a-z0-9-]+:[A-Za-z]+$", a))])])
    error_message = "permissions must map Datastore, Blobs, ListBlobs, InvokeSuccessors, Logs, OnFailureQueue or Kms to actions such as dynamodb:PutItem (no wildcards)."
  }
}

variable "integrations" {
  description = "Statements of the Step Functions integration Tasks the function runs: sid (Integration<n>), IAM actions, and resources (ARNs whose {partition}, {region} and {account} this module fills in, or \"*\" for a resource the Task chooses at run time). unumctl passes runtime/aws/iam.py integration_statements, and for a queue trigger's function the SourceQueue statement (its SQS queue, unumctl/aws/sources.py)."
  type = list(object({
    sid       = string
    actions   = list(string)
    resources = list(string)
  }))
  default = []

  validation {
    condition = alltrue([for s in var.integrations : can(regex("^(Integration[0-9]+|SourceQueue)$", s.sid)) && length(s.actions) > 0 && length(s.resources) > 0 &&
      alltrue([for a in s.actions : can(regex("^[a-z0-9-]+:[A-Za-z0-9]+$", a))]) &&
    alltrue([for r in s.resources : r == "*" || can(regex("^arn:", r))])])
    error_message = "integrations must be statements with sid Integration<n> (or SourceQueue), actions such as sns:Publish (no wildcards) and resources that are ARNs or \"*\"."
  }
}

variable "bucket_arn" {
  description = "ARN of the app's blob bucket (output bucket_arn of aws-unum-datastore)."
  type        = string

  validation {
    condition     = can(regex("^arn:[^:]+:s3:::", var.bucket_arn))
    error_message = "bucket_arn must be an S3 bucket ARN (arn:<partition>:s3:::<bucket>)."
  }
}

variable "blob_prefix" {
  description = "Key prefix of Unum blobs inside the bucket (ends with '/'); the function may read and write only below it."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_.-]+/$", var.blob_prefix))
    error_message = "blob_prefix must be characters of A-Z, a-z, 0-9, '_', '.', '-' ending with '/', e.g. \"s/\"."
  }
}

variable "log_retention_days" {
  description = "Retention of the function's CloudWatch log group in days (one of CloudWatch Logs' values; 0 = never expire)."
  type        = number
  default     = 14

  validation {
    condition     = contains([0, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of CloudWatch Logs' values: 0, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653."
  }
}

variable "maximum_retry_attempts" {
  description = "Platform retries of a failed asynchronous invocation (Lambda: 0-2)."
  type        = number
  default     = 2

  validation {
    condition     = contains([0, 1, 2], var.maximum_retry_attempts)
    error_message = "maximum_retry_attempts must be 0, 1 or 2 (Lambda's range)."
  }
}

variable "on_failure_arn" {
  description = "On-failure destination of asynchronous invocations, e.g. the app's error handler ARN (null: none)."
  type        = string
  default     = null

  validation {
    condition     = var.on_failure_arn == null || can(regex("^arn:[^:]+:(lambda|sqs|sns|events):", var.on_failure_arn))
    error_message = "on_failure_arn must be null or the ARN of a Lambda function, SQS queue, SNS topic or EventBridge bus."
  }
}

variable "reserved_concurrent_executions" {
  description = "Concurrent executions reserved for (and capping) the function; -1: unreserved (the account's pool), 0: the function never runs."
  type        = number
  default     = -1

  validation {
    condition     = var.reserved_concurrent_executions >= -1 && floor(var.reserved_concurrent_executions) == var.reserved_concurrent_executions
    error_message = "reserved_concurrent_executions must be -1 (unreserved) or a whole number >= 0."
  }
}

variable "kms_key_arn" {
  description = "ARN of a customer-managed KMS key for the environment variables and the log group, also granted to the role for the app's bucket and queue (null: AWS-owned keys). Its key policy must allow CloudWatch Logs."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:[^:]+:kms:", var.kms_key_arn))
    error_message = "kms_key_arn must be null or a KMS key ARN (arn:<partition>:kms:...)."
  }
}
