
output "vpc_id" {
  description = "The VPC's id."
  value       = aws_vpc.this.id
}

output "secret" {
  value     = var.password
  sensitive = true
}
