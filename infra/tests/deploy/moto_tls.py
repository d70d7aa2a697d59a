"""moto's server over TLS, for `make deploy-check` (tests/integration/deployed.rs).

    moto_tls.py PORT CERT KEY

One compensation, because moto is kinder *and* harsher than AWS in the same place: it
evaluates a bucket policy without its Conditions (its `put_bucket_policy` docstring says so),
so infra's `DenyInsecureTransport` statement (Deny s3:* when aws:SecureTransport is "false")
would deny every request, even over TLS. Here a bucket policy is evaluated as S3 evaluates it
for a request over TLS: a statement applies only when its Condition holds, with
aws:SecureTransport = "true" (this server only speaks TLS). Any other condition key or
operator stops the server with an error rather than being guessed at, so the compensation
can never make moto more permissive than AWS without saying so.
"""

import json
import sys

from moto.iam.access_control import IAMPolicy, PermissionResult
from moto.s3.models import FakeBucket
from moto.server import main

CONTEXT = {"aws:SecureTransport": "true"}


def condition_holds(condition):
    for operator, values in (condition or {}).items():
        if operator != "Bool":
            raise SystemExit(f"moto_tls.py: bucket policy condition operator {operator} is not evaluated here")
        for key, expected in values.items():
            if key not in CONTEXT:
                raise SystemExit(f"moto_tls.py: bucket policy condition key {key} is not evaluated here")
            expected = expected if isinstance(expected, list) else [expected]
            if CONTEXT[key] not in [str(v).lower() for v in expected]:
                return False
    return True


def get_permission(self, action, resource):
    if self.policy is None:
        return PermissionResult.NEUTRAL
    policy = json.loads(self.policy)
    statements = policy["Statement"] if isinstance(policy["Statement"], list) else [policy["Statement"]]
    applying = [{k: v for k, v in s.items() if k != "Condition"} for s in statements if condition_holds(s.get("Condition"))]
    if not applying:
        return PermissionResult.NEUTRAL
    return IAMPolicy(json.dumps({**policy, "Statement": applying})).is_action_permitted(action, resource)


FakeBucket.get_permission = get_permission

if __name__ == "__main__":
    port, cert, key = sys.argv[1:4]
    main(["-H", "127.0.0.1", "-p", port, "-c", cert, "-k", key])
