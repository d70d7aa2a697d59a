# The root `make deploy-check` applies against moto (tests/integration/deployed.rs): the module
# as infra/examples/minimal calls it, plus a publisher, a key admin, an upstream host and an
# upstream module registry, so
# that every role of the trust boundary exists and can be read back.
terraform {
  required_version = ">= 1.5.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.81, < 7.0"
    }
  }
}

# The endpoint, CA bundle and credentials come from the environment (AWS_ENDPOINT_URL,
# AWS_CA_BUNDLE, AWS_ACCESS_KEY_ID...), as they would for a real account.
provider "aws" {
  region = var.region
}

variable "region" {
  type    = string
  default = "eu-west-1"
}

variable "lambda_dir" {
  description = "Where NAME/bootstrap.zip are (dummy zips: moto stores them, never runs them)."
  type        = string
}

# Where the alarms notify (docs/OPERATIONS.md).
resource "aws_sns_topic" "alarms" {
  name              = "tf-registry-alarms"
  kms_master_key_id = "alias/aws/sns"
}

module "registry" {
  source          = "../.."
  name            = "tf-registry"
  lambda_dir      = var.lambda_dir
  alarm_topic_arn = aws_sns_topic.alarms.arn
  upstream_hosts  = ["registry.terraform.io"]
  # The modules pull-through on: the modules role may then write upstream-modules/.
  upstream_modules = ["registry.terraform.io"]
  publishers = {
    platform = {
      modules   = ["platform"]
      providers = ["registry.example.com/platform"]
      github    = ["acme/terraform-aws-platform", "acme-modules/vpc"]
      gitlab    = ["acme/platform/network"]
    }
  }
  key_admins = {
    # Also the Sigstore trust roots (signing-keys/sigstore/): the access matrix checks both.
    security = { providers = ["registry.example.com/platform"], trust_roots = true }
  }
}

output "alarm_topic_arn" {
  value = aws_sns_topic.alarms.arn
}

output "cli_config" {
  value = module.registry.cli_config
}

output "registry_hostname" {
  value = module.registry.registry_hostname
}

output "bucket_name" {
  value = module.registry.bucket_name
}

output "publisher_policy_arns" {
  value = module.registry.publisher_policy_arns
}

output "key_admin_policy_arns" {
  value = module.registry.key_admin_policy_arns
}

output "publisher_role_arns" {
  value = module.registry.publisher_role_arns
}
