"""Tables and buckets: durable, private, encrypted, and shaped as the contract says."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match, Template

from agentledger.adapters.dynamodb_build_waits import TTL_ATTRIBUTE

pytestmark = pytest.mark.infra

PROTECTED_TABLE = {
    "BillingMode": "PAY_PER_REQUEST",
    "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
    "DeletionProtectionEnabled": True,
    "SSESpecification": {"SSEEnabled": True},
}


def _key_schema(partition: str, sort: str | None = None) -> list[dict[str, str]]:
    keys = [{"AttributeName": partition, "KeyType": "HASH"}]
    if sort:
        keys.append({"AttributeName": sort, "KeyType": "RANGE"})
    return keys


def test_three_tables_and_two_buckets(template: Template) -> None:
    template.resource_count_is("AWS::DynamoDB::Table", 3)
    template.resource_count_is("AWS::S3::Bucket", 2)


def test_ledger_table_keys_indexes_and_protection(template: Template) -> None:
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": {
                **PROTECTED_TABLE,
                "KeySchema": _key_schema("pk", "sk"),
                "GlobalSecondaryIndexes": [
                    {
                        "IndexName": "by_status",
                        "KeySchema": _key_schema("run_status", "created_key"),
                        "Projection": {"ProjectionType": "ALL"},
                    },
                    {
                        "IndexName": "by_time",
                        "KeySchema": _key_schema("entity", "created_key"),
                        "Projection": {"ProjectionType": "ALL"},
                    },
                ],
            },
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )


def test_idempotency_table_uses_the_powertools_schema(template: Template) -> None:
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": {
                **PROTECTED_TABLE,
                "KeySchema": _key_schema("id"),
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True},
            },
            "DeletionPolicy": "Retain",
        },
    )


def test_build_wait_table_expires_its_parkings(template: Template) -> None:
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": {
                **PROTECTED_TABLE,
                "KeySchema": _key_schema("pk", "sk"),
                "TimeToLiveSpecification": {"AttributeName": TTL_ATTRIBUTE, "Enabled": True},
            },
        },
    )


def test_every_bucket_is_private_and_encrypted(template: Template) -> None:
    buckets = template.find_resources("AWS::S3::Bucket")
    for bucket in buckets.values():
        properties = bucket["Properties"]
        assert properties["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }
        assert properties["BucketEncryption"] == {
            "ServerSideEncryptionConfiguration": [
                {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
            ]
        }


def test_every_bucket_refuses_plain_http(template: Template) -> None:
    policies = template.find_resources(
        "AWS::S3::BucketPolicy",
        {
            "Properties": {
                "PolicyDocument": {
                    "Statement": Match.array_with(
                        [
                            Match.object_like(
                                {
                                    "Effect": "Deny",
                                    "Action": "s3:*",
                                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                                }
                            )
                        ]
                    )
                }
            }
        },
    )
    protected = {policy["Properties"]["Bucket"]["Ref"] for policy in policies.values()}
    assert protected == set(template.find_resources("AWS::S3::Bucket"))


def test_artifact_bucket_is_versioned_expires_old_versions_and_logs_access(
    template: Template, logical_id
) -> None:
    log_bucket = logical_id("AWS::S3::Bucket", "AccessLogBucket")
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "VersioningConfiguration": {"Status": "Enabled"},
            "LifecycleConfiguration": {
                "Rules": Match.array_with(
                    [
                        Match.object_like(
                            {"AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}
                        ),
                        Match.object_like(
                            {"NoncurrentVersionExpiration": {"NoncurrentDays": 30}}
                        ),
                    ]
                )
            },
            "LoggingConfiguration": {
                "DestinationBucketName": {"Ref": log_bucket},
                "LogFilePrefix": Match.any_value(),
            },
        },
    )


def test_access_log_bucket_accepts_log_delivery_and_expires_logs(
    template: Template, logical_id
) -> None:
    log_bucket = logical_id("AWS::S3::Bucket", "AccessLogBucket")
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": log_bucket},
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Allow",
                                "Action": "s3:PutObject",
                                "Principal": {"Service": "logging.s3.amazonaws.com"},
                            }
                        )
                    ]
                )
            },
        },
    )
    template.has_resource(
        "AWS::S3::Bucket",
        {
            "Properties": Match.object_like(
                {
                    "LifecycleConfiguration": {
                        "Rules": [Match.object_like({"ExpirationInDays": 365})]
                    }
                }
            )
        },
    )
