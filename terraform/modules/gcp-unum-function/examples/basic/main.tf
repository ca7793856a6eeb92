# One Unum function "Hello" of an app named "demo" with the app's datastore, as unumctl
# renders it. `function.zip` is the bundle `unumctl build --cloud gcp` writes; put one next
# to this file (and set source_sha256 to its SHA-256) before `terraform apply`.

terraform {
  required_version = ">= 1.5"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.12"
    }
    google-beta = {
      source  = "hashicorp/google-beta"
      version = ">= 6.12"
    }
    random = {
      source  = "hashicorp/random"
      version = ">= 3.5"
    }
    time = {
      source  = "hashicorp/time"
      version = ">= 0.9"
    }
  }
}

variable "project" {
  description = "GCP project id to deploy into."
  type        = string
}

provider "google" {
  project = var.project
  region  = "us-central1"
}

provider "google-beta" {
  project = var.project
  region  = "us-central1"
}

module "datastore" {
  source = "../../../gcp-unum-datastore"

  project           = var.project
  region            = "us-central1"
  app               = "demo"
  collection        = "unum-demo"
  database_id       = "unum-demo"
  database_location = "nam5"
  bucket_prefix     = "unum-demo"

  build_service_account_id = "demo-build"
}

module "hello" {
  source = "../.."

  project            = module.datastore.project # after the APIs are enabled
  project_number     = module.datastore.project_number
  pubsub_agent       = module.datastore.pubsub_service_agent
  region             = "us-central1"
  app                = "demo"
  function           = "Hello"
  function_name      = "demo-hello"
  topic              = "demo-Hello"
  service_account_id = "demo-hello-a1b2c3"
  bucket             = module.datastore.bucket
  source_bucket      = module.datastore.source_bucket
  database           = module.datastore.database
  source_path        = "${path.module}/function.zip"
  source_sha256      = "0000000000000000000000000000000000000000000000000000000000000000"
  memory             = 256
  timeout            = 60
  dead_letter_topic  = module.datastore.dead_letter_topic_id

  build_service_account = module.datastore.build_service_account

  environment = {
    UNUM_PROJECT           = var.project
    UNUM_DATABASE          = module.datastore.database
    UNUM_COLLECTION        = module.datastore.collection
    UNUM_BUCKET            = module.datastore.bucket
    UNUM_DEAD_LETTER_TOPIC = module.datastore.dead_letter_topic
  }
}

output "topic" {
  description = "Publishing to this topic invokes the function."
  value       = module.hello.topic
}
