# One Unum function on Cloud Functions gen2, triggered by its own Pub/Sub topic
# (seed 001 §4.2: gen2 has no asynchronous invoke API, so invoking = publishing).
# The caller (the rendered root module) grants this function's service account
# roles/pubsub.publisher on its successors' topics only.
#
# API enablement: the caller passes `project` as the datastore module's output `project`,
# which depends on google_project_service (every API), so each resource here that names
# var.project, or one that does, is created after the APIs are enabled.

locals {
  own_account           = var.service_account_email == ""
  service_account_email = local.own_account ? one(google_service_account.this[*].email) : var.service_account_email
}

resource "google_pubsub_topic" "this" {
  project = var.project
  name    = var.topic
}

# The function's own account, unless it runs as a shared one (var.service_account_email, the
# deployment's runtime account that gcp-unum-datastore creates and grants).
resource "google_service_account" "this" {
  count        = var.service_account_email == "" ? 1 : 0
  project      = var.project
  account_id   = var.service_account_id
  display_name = "Unum ${var.app} ${var.function}"
}

# The object name carries the archive's content hash: a code change is a new object and
# a redeploy of the function.
resource "google_storage_bucket_object" "source" {
  name   = "sources/${var.function_name}-${var.source_sha256}.zip"
  bucket = var.source_bucket
  source = var.source_path
}

resource "google_cloudfunctions2_function" "this" {
  project  = var.project
  name     = var.function_name
  location = var.region

  build_config {
    runtime         = var.runtime
    entry_point     = var.entry_point
    service_account = var.build_service_account
    source {
      storage_source {
        bucket = var.source_bucket
        object = google_storage_bucket_object.source.name
      }
    }
  }

  service_config {
    available_memory               = "${var.memory}M"
    timeout_seconds                = var.timeout
    max_instance_count             = var.max_instances
    environment_variables          = var.environment
    service_account_email          = local.service_account_email
    ingress_settings               = "ALLOW_INTERNAL_ONLY"
    all_traffic_on_latest_revision = true

    # e.g. the AWS access key pair of the Tasks that call AWS (clouds.gcp.aws_credentials_secret)
    dynamic "secret_environment_variables" {
      for_each = var.secret_environment
      content {
        key        = secret_environment_variables.key
        project_id = var.project
        secret     = secret_environment_variables.value
        version    = "latest"
      }
    }
  }

  event_trigger {
    trigger_region        = var.region
    event_type            = "google.cloud.pubsub.topic.v1.messagePublished"
    pubsub_topic          = google_pubsub_topic.this.id
    retry_policy          = "RETRY_POLICY_RETRY"
    service_account_email = local.service_account_email
  }
}
