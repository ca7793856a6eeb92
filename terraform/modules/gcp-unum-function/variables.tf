variable "project" {
  description = "GCP project id; pass the datastore module's output `project`, which is known only once the APIs are enabled, so that every resource here waits for them."
  type        = string
}

variable "project_number" {
  description = "The project's number (output project_number of gcp-unum-datastore): names the Pub/Sub service agent granted roles/iam.serviceAccountTokenCreator on the function's account."
  type        = string

  validation {
    condition     = can(regex("^[0-9]+$", var.project_number))
    error_message = "project_number must be the project's number (digits)."
  }
}

variable "build_service_account" {
  description = "Full resource name (projects/<p>/serviceAccounts/<email>) of the service account Cloud Build uses to build the function (output build_service_account of gcp-unum-datastore)."
  type        = string
}

variable "region" {
  description = "Region of the function and its trigger, e.g. us-central1."
  type        = string

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region must be a GCP region name such as us-central1 or europe-west1."
  }
}

variable "app" {
  description = "Unum app name (3-40 characters of a-z, 0-9, '-', starting with a letter); used in the service account's display name."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{2,39}$", var.app))
    error_message = "app must be 3-40 characters of a-z, 0-9 and '-', starting with a letter (unumctl.yaml app rule)."
  }
}

variable "function" {
  description = "Unum function name (IR Name)."
  type        = string

  validation {
    condition     = length(var.function) >= 1
    error_message = "function must not be empty."
  }
}

variable "function_name" {
  description = "Cloud Functions name: lower-case <app>-<function>, at most 63 characters of a-z, 0-9, '-'."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$", var.function_name))
    error_message = "function_name must be 1-63 characters of a-z, 0-9 and '-', starting with a letter and not ending with '-' (Cloud Functions naming rules)."
  }
}

variable "topic" {
  description = "Name of the function's trigger topic, <app>-<function> (3-255 characters, starting with a letter, not goog...)."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z][A-Za-z0-9._~+%-]{2,254}$", var.topic)) && !startswith(lower(var.topic), "goog")
    error_message = "topic must be 3-255 characters of letters, digits and -_.~+%, starting with a letter and not with 'goog' (Pub/Sub naming rules)."
  }
}

variable "service_account_id" {
  description = "account_id of the function's dedicated service account (6-30 characters of a-z, 0-9, '-', starting with a letter)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.service_account_id))
    error_message = "service_account_id must be 6-30 characters of a-z, 0-9 and '-', starting with a letter and not ending with '-'."
  }
}

variable "bucket" {
  description = "Name of the app's large-value bucket (output bucket of gcp-unum-datastore); the function may read and write its objects."
  type        = string
}

variable "source_bucket" {
  description = "Name of the bucket the source archive is uploaded to (output source_bucket of gcp-unum-datastore); the function gets no role on it."
  type        = string
}

variable "database" {
  description = "Firestore database id of the app (output database of gcp-unum-datastore); the function's datastore.user role is conditioned on it."
  type        = string

  validation {
    condition     = var.database == "(default)" || can(regex("^[a-z][a-z0-9-]{2,61}[a-z0-9]$", var.database))
    error_message = "database must be (default) or 4-63 characters of a-z, 0-9 and '-', starting with a letter and not ending with '-'."
  }
}

variable "source_path" {
  description = "Path of the built bundle zip."
  type        = string

  validation {
    condition     = endswith(var.source_path, ".zip")
    error_message = "source_path must name a .zip archive."
  }
}

variable "source_sha256" {
  description = "SHA-256 of the bundle zip (64 lower-case hex digits); part of the object name, so a code change redeploys."
  type        = string

  validation {
    condition     = can(regex("^[0-9a-f]{64}$", var.source_sha256))
    error_message = "source_sha256 must be 64 lower-case hex digits (the SHA-256 of the zip)."
  }
}

variable "runtime" {
  description = "Cloud Functions Python runtime, e.g. python312."
  type        = string
  default     = "python312"

  validation {
    condition     = can(regex("^python3[0-9]+$", var.runtime))
    error_message = "runtime must be a Cloud Functions Python 3 runtime such as python312."
  }
}

variable "entry_point" {
  description = "Name of the CloudEvent function in the bundle's main.py."
  type        = string
  default     = "handle_cloudevent"

  validation {
    condition     = can(regex("^[A-Za-z_][A-Za-z0-9_]*$", var.entry_point))
    error_message = "entry_point must be a Python identifier."
  }
}

variable "memory" {
  description = "Memory of the function in MiB (Cloud Functions gen2: 128-32768)."
  type        = number
  default     = 256

  validation {
    condition     = var.memory >= 128 && var.memory <= 32768 && floor(var.memory) == var.memory
    error_message = "memory must be a whole number of MiB from 128 to 32768 (Cloud Functions gen2 range)."
  }
}

variable "timeout" {
  description = "Timeout of one invocation in seconds (event-driven Cloud Functions gen2: 1-540)."
  type        = number
  default     = 60

  validation {
    condition     = var.timeout >= 1 && var.timeout <= 540 && floor(var.timeout) == var.timeout
    error_message = "timeout must be a whole number of seconds from 1 to 540 (event-driven Cloud Functions gen2 limit)."
  }
}

variable "max_instances" {
  description = "Maximum number of instances of the function."
  type        = number
  default     = 100

  validation {
    condition     = var.max_instances >= 1 && floor(var.max_instances) == var.max_instances
    error_message = "max_instances must be a whole number >= 1."
  }
}

variable "environment" {
  description = "Environment variables of the function (UNUM_PROJECT, UNUM_DATABASE, UNUM_COLLECTION, UNUM_BUCKET, ...)."
  type        = map(string)
  default     = {}
}

variable "secret_environment" {
  description = "Secret environment variables: variable name -> Secret Manager secret id (of the function's project) whose latest version the variable holds; the function's account may access only those secrets. unumctl sets UNUM_AWS_CREDENTIALS from clouds.gcp.aws_credentials_secret for the functions that call AWS."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for k, v in var.secret_environment : can(regex("^[A-Z_][A-Z0-9_]*$", k)) && can(regex("^[A-Za-z0-9_-]{1,255}$", v))])
    error_message = "secret_environment must map variable names (A-Z, 0-9, _) to Secret Manager secret ids (1-255 of letters, digits, - and _)."
  }
}

variable "dead_letter_topic" {
  description = "Full id (projects/<p>/topics/<t>) of the app's dead-letter topic; the function may publish to it."
  type        = string
}

variable "service_account_email" {
  description = "Email of an existing runtime service account the function runs as (the deployment's shared account, output runtime_service_account_email of gcp-unum-datastore, which grants it); empty: the module creates the function's own account service_account_id and grants it."
  type        = string
  default     = ""
}
