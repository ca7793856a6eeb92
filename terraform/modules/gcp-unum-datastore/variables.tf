variable "project" {
  description = "GCP project id."
  type        = string
}

variable "region" {
  description = "Region of the bucket (same as the functions), e.g. us-central1."
  type        = string

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region must be a GCP region name such as us-central1 or europe-west1."
  }
}

variable "app" {
  description = "Unum app name, the prefix of every resource (3-40 characters of a-z, 0-9, '-', starting with a letter)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{2,39}$", var.app))
    error_message = "app must be 3-40 characters of a-z, 0-9 and '-', starting with a letter (unumctl.yaml app rule)."
  }
}

variable "collection" {
  description = "Firestore collection holding the app's items (unum-<app>); history goes to <collection>-history."
  type        = string

  validation {
    condition     = length(var.collection) >= 1 && length(var.collection) <= 1500 && !strcontains(var.collection, "/")
    error_message = "collection must be a Firestore collection id: 1-1500 bytes without '/'."
  }
}

variable "create_database" {
  description = "true: create the Firestore database var.database_id here; false: use the existing one."
  type        = bool
  default     = true
}

variable "database_id" {
  description = "Firestore database id: the app's own (unumctl gives unum-<app>), or (default) only when asked: a project's (default) database may already exist (Firestore, Datastore or App Engine) and is shared by every app that uses it. 4-63 characters of a-z, 0-9, '-', starting with a letter."
  type        = string

  validation {
    condition     = var.database_id == "(default)" || can(regex("^[a-z][a-z0-9-]{2,61}[a-z0-9]$", var.database_id))
    error_message = "database_id must be (default) or 4-63 characters of a-z, 0-9 and '-', starting with a letter and not ending with '-'."
  }
}

variable "database_location" {
  description = "Firestore location of a database created here (a multi-region such as nam5 or eur3, or a region)."
  type        = string
}

variable "database_delete_protection" {
  description = "Delete protection of a database created here."
  type        = bool
  default     = true
}

variable "database_deletion_policy" {
  description = "What terraform destroy does to a database created here: ABANDON (keep it and its data) or DELETE."
  type        = string
  default     = "ABANDON"

  validation {
    condition     = contains(["ABANDON", "DELETE"], var.database_deletion_policy)
    error_message = "database_deletion_policy must be ABANDON or DELETE."
  }
}

variable "bucket_prefix" {
  description = "Prefix of the two bucket names, <prefix>-<8 hex> (large values) and <prefix>-src-<8 hex> (function sources); the random suffix makes them unique and unguessable (3-50 characters of a-z, 0-9, '-')."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{1,48}[a-z0-9]$", var.bucket_prefix)) && !startswith(var.bucket_prefix, "goog")
    error_message = "bucket_prefix must be 3-50 characters of a-z, 0-9 and '-', starting and ending with a letter or digit, not starting with 'goog' (Cloud Storage naming rules, leaving room for the suffix)."
  }
}

variable "payload_expiry_days" {
  description = "Days after which objects under payloads/ are deleted (at least the session result retention)."
  type        = number
  default     = 7

  validation {
    condition     = var.payload_expiry_days >= 1 && floor(var.payload_expiry_days) == var.payload_expiry_days
    error_message = "payload_expiry_days must be a whole number of days >= 1 (Cloud Storage lifecycle age)."
  }
}

variable "build_service_account" {
  description = "Email of an existing service account Cloud Build uses to build the functions; empty: the module creates one for the app with the documented roles (logging.logWriter, artifactregistry.writer, storage.objectViewer on the source bucket)."
  type        = string
  default     = ""

  validation {
    condition     = var.build_service_account == "" || can(regex("^[a-z0-9][a-z0-9.-]*@[a-z][a-z0-9.-]*\\.gserviceaccount\\.com$", var.build_service_account))
    error_message = "build_service_account must be empty or a service account email (...@<project>.iam.gserviceaccount.com)."
  }
}

variable "build_service_account_id" {
  description = "account_id of the Cloud Build service account created when build_service_account is empty (6-30 characters of a-z, 0-9, '-', starting with a letter)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.build_service_account_id))
    error_message = "build_service_account_id must be 6-30 characters of a-z, 0-9 and '-', starting with a letter and not ending with '-'."
  }
}

variable "dead_letter_topic" {
  description = "Id of the dead-letter topic (its subscription: <id>-hold); empty: <app>-dead-letter."
  type        = string
  default     = ""
}

variable "runtime_service_account_id" {
  description = "account_id of the runtime service account every function runs as, created and granted here (6-30 characters of a-z, 0-9, '-'); empty: none (each function module creates its own)."
  type        = string
  default     = ""

  validation {
    condition     = var.runtime_service_account_id == "" || can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.runtime_service_account_id))
    error_message = "runtime_service_account_id must be empty or 6-30 characters of a-z, 0-9 and '-', starting with a letter and not ending with '-'."
  }
}

variable "runtime_secrets" {
  description = "Secret Manager secrets the runtime service account may read: environment variable -> secret id (the functions' secret_environment, merged)."
  type        = map(string)
  default     = {}
}
