"""Reads a deployment back from the AWS API with boto3, for tests/integration/deployed.rs.

    read_back.py NAME BUCKET < probes.json > deployed.json

NAME is the module's `name` input; probes.json is {"actions": [...], "keys": [...]}: object
keys to ask each principal's IAM policies about. Prints what was deployed, as the code's own
tables name things: API route keys with the function each reaches, each function's role and
environment, the bucket's notification filters, the log groups' subscription filters, for every role and managed policy the probe
(action, key) pairs its policies allow (a role's attached managed policies with its inline
ones) and each role's trust policy, the OpenID Connect providers, and the alarms and dashboards.

The policies are evaluated by moto's IAM evaluator (moto.iam.access_control.IAMPolicy, on
PyPI with moto; Apache-2.0). It matches actions and resources with wildcards, Deny over
Allow, and does not evaluate Conditions: only object actions are probed, whose statements
in infra/ carry none; the one conditioned action, s3:ListBucket, is reported as its
s3:prefix values, for the test to compare.
"""

import json
import sys

import boto3
from moto.iam.access_control import IAMPolicy, PermissionResult


def pages(client, operation, key, **kwargs):
    paginator = client.get_paginator(operation)
    for page in paginator.paginate(**kwargs):
        yield from page[key]


def api(name):
    client = boto3.client("apigatewayv2")
    found = [a for a in client.get_apis()["Items"] if a["Name"] == name]
    if not found:
        return None
    [api] = found
    integrations = {i["IntegrationId"]: i for i in client.get_integrations(ApiId=api["ApiId"])["Items"]}
    routes = []
    for route in client.get_routes(ApiId=api["ApiId"])["Items"]:
        integration = integrations[route["Target"].removeprefix("integrations/")]
        # arn:aws:apigateway:REGION:lambda:path/2015-03-31/functions/FUNCTION_ARN/invocations
        function_arn = integration["IntegrationUri"].split("/functions/")[1].removesuffix("/invocations")
        routes.append({
            "key": route["RouteKey"],
            "function": function_arn.split(":function:")[1],
            "integration_type": integration["IntegrationType"],
            "payload_format_version": integration["PayloadFormatVersion"],
            "authorization_type": route.get("AuthorizationType", "NONE"),
        })
    stages = client.get_stages(ApiId=api["ApiId"])["Items"]
    return {"endpoint": api["ApiEndpoint"], "routes": routes, "stages": [s["StageName"] for s in stages]}


def functions(name):
    client = boto3.client("lambda")
    found = {}
    for f in pages(client, "list_functions", "Functions"):
        if f["FunctionName"].startswith(f"{name}-"):
            found[f["FunctionName"].removeprefix(f"{name}-")] = {
                "role": f["Role"].split("/")[-1],
                "environment": f.get("Environment", {}).get("Variables", {}),
                "runtime": f.get("Runtime"),
                "architectures": f.get("Architectures"),
                "handler": f.get("Handler"),
            }
    return found


def log_subscriptions(name):
    """Each function's log group's subscription filters: pattern and destination function."""
    logs = boto3.client("logs")
    found = {}
    for group in pages(logs, "describe_log_groups", "logGroups", logGroupNamePrefix=f"/aws/lambda/{name}-"):
        filters = logs.describe_subscription_filters(logGroupName=group["logGroupName"])["subscriptionFilters"]
        if filters:
            function = group["logGroupName"].removeprefix(f"/aws/lambda/{name}-")
            found[function] = [
                {"pattern": f["filterPattern"], "destination": f["destinationArn"].split(":function:")[-1]}
                for f in filters
            ]
    return found


def notifications(bucket):
    s3 = boto3.client("s3")
    if bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        return []
    config = s3.get_bucket_notification_configuration(Bucket=bucket)
    found = []
    for n in config.get("LambdaFunctionConfigurations", []):
        rules = {r["Name"].lower(): r["Value"] for r in n["Filter"]["Key"]["FilterRules"]}
        found.append({
            "function": n["LambdaFunctionArn"].split(":function:")[1],
            "events": sorted(n["Events"]),
            "prefix": rules.get("prefix", ""),
            "suffix": rules.get("suffix", ""),
        })
    return found


def allowed(documents, bucket, probes):
    """The probe (action, key) pairs the documents allow, and ListBucket's prefixes."""
    policies = [IAMPolicy(json.dumps(d)) for d in documents]
    pairs = []
    for action in probes["actions"]:
        for key in probes["keys"]:
            resource = f"arn:aws:s3:::{bucket}/{key}"
            verdicts = [p.is_action_permitted(action, resource) for p in policies]
            if PermissionResult.PERMITTED in verdicts and PermissionResult.DENIED not in verdicts:
                pairs.append([action, key])
    list_prefixes = []
    for d in documents:
        for s in d["Statement"] if isinstance(d["Statement"], list) else [d["Statement"]]:
            actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
            if s["Effect"] == "Allow" and "s3:ListBucket" in actions:
                values = s.get("Condition", {}).get("StringLike", {}).get("s3:prefix", ["(any prefix)"])
                list_prefixes.extend(values if isinstance(values, list) else [values])
    return {"allows": pairs, "list_prefixes": sorted(list_prefixes)}


def principals(name, bucket, probes):
    iam = boto3.client("iam")
    found = {}
    for role in pages(iam, "list_roles", "Roles"):
        if not role["RoleName"].startswith(f"{name}-"):
            continue
        documents = [iam.get_role_policy(RoleName=role["RoleName"], PolicyName=p)["PolicyDocument"]
                     for p in pages(iam, "list_role_policies", "PolicyNames", RoleName=role["RoleName"])]
        attached = list(pages(iam, "list_attached_role_policies", "AttachedPolicies", RoleName=role["RoleName"]))
        # An attached managed policy reaches as far as its inline ones: evaluated together.
        for a in attached:
            policy = iam.get_policy(PolicyArn=a["PolicyArn"])["Policy"]
            version = iam.get_policy_version(PolicyArn=a["PolicyArn"], VersionId=policy["DefaultVersionId"])
            documents.append(version["PolicyVersion"]["Document"])
        found[f"role/{role['RoleName']}"] = {
            **allowed(documents, bucket, probes),
            "attached": sorted(a["PolicyName"] for a in attached),
            "trust": role["AssumeRolePolicyDocument"],
        }
    for policy in pages(iam, "list_policies", "Policies", Scope="Local"):
        if policy["PolicyName"].startswith(f"{name}-"):
            version = iam.get_policy_version(PolicyArn=policy["Arn"], VersionId=policy["DefaultVersionId"])
            found[f"policy/{policy['PolicyName']}"] = allowed([version["PolicyVersion"]["Document"]], bucket, probes)
    return found


def oidc_providers():
    """Each IAM OpenID Connect provider: its ARN, URL and audiences."""
    iam = boto3.client("iam")
    found = []
    for p in iam.list_open_id_connect_providers()["OpenIDConnectProviderList"]:
        got = iam.get_open_id_connect_provider(OpenIDConnectProviderArn=p["Arn"])
        found.append({"arn": p["Arn"], "url": got["Url"], "audiences": got.get("ClientIDList", [])})
    return found


def alarms(name):
    client = boto3.client("cloudwatch")
    found = {}
    for a in pages(client, "describe_alarms", "MetricAlarms", AlarmNamePrefix=f"{name}-"):
        metrics = [a] if "MetricName" in a else [q["MetricStat"]["Metric"] for q in a.get("Metrics", []) if "MetricStat" in q]
        found[a["AlarmName"].removeprefix(f"{name}-")] = {
            "description": a.get("AlarmDescription", ""),
            "alarm_actions": a.get("AlarmActions", []),
            "ok_actions": a.get("OKActions", []),
            "metrics": sorted(f"{m['Namespace']} {m['MetricName']} " + " ".join(
                f"{d['Name']}={d['Value']}" for d in sorted(m.get("Dimensions", []), key=lambda d: d["Name"]))
                for m in metrics),
        }
    dashboards = {}
    for d in client.list_dashboards(DashboardNamePrefix=name)["DashboardEntries"]:
        dashboards[d["DashboardName"]] = json.loads(client.get_dashboard(DashboardName=d["DashboardName"])["DashboardBody"])
    return {"alarms": found, "dashboards": dashboards}


def main():
    name, bucket = sys.argv[1:3]
    probes = json.load(sys.stdin)
    json.dump({
        "api": api(name),
        "functions": functions(name),
        "notifications": notifications(bucket),
        "log_subscriptions": log_subscriptions(name),
        "principals": principals(name, bucket, probes),
        "oidc_providers": oidc_providers(),
        "monitoring": alarms(name),
    }, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
