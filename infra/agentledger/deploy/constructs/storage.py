"""Durable state: the run ledger, the Powertools idempotency records, the parked build waits and
the artifact store."""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, Duration, Validations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from agentledger.adapters.dynamodb_build_waits import TTL_ATTRIBUTE as BUILD_WAIT_TTL_ATTRIBUTE
from agentledger.adapters.dynamodb_write_budget import TTL_ATTRIBUTE as IDEMPOTENCY_TTL_ATTRIBUTE

# Sparse indexes over the ledger: only run items carry these attributes.
LEDGER_INDEXES = {
    "by_status": ("run_status", "created_key"),
    "by_time": ("entity", "created_key"),
}
NONCURRENT_ARTIFACT_RETENTION = Duration.days(30)
ACCESS_LOG_RETENTION = Duration.days(365)
INCOMPLETE_UPLOAD_TIMEOUT = Duration.days(1)


def _string(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


def _protected_table_props() -> dict[str, Any]:
    """What every table here shares: it holds facts a restart depends on, so it must survive."""
    return {
        "billing_mode": dynamodb.BillingMode.PAY_PER_REQUEST,
        "point_in_time_recovery_specification": dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        "deletion_protection": True,
        "encryption": dynamodb.TableEncryption.AWS_MANAGED,
    }


def _private_bucket_props() -> dict[str, Any]:
    return {
        "block_public_access": s3.BlockPublicAccess.BLOCK_ALL,
        "enforce_ssl": True,
        # Server access logging can only deliver to SSE-S3 buckets, so both buckets use it.
        "encryption": s3.BucketEncryption.S3_MANAGED,
    }


class Storage(Construct):
    """The ledger and idempotency tables, the artifact bucket and its access-log bucket, and the
    key that seals list cursors."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)

        # dynamodb.Table rather than TableV2: the local runtime deploys this template into moto,
        # whose CloudFormation creates AWS::DynamoDB::Table but not AWS::DynamoDB::GlobalTable.
        self.ledger_table = dynamodb.Table(
            self,
            "LedgerTable",
            partition_key=_string("pk"),
            sort_key=_string("sk"),
            **_protected_table_props(),
        )
        for index_name, (partition_key, sort_key) in LEDGER_INDEXES.items():
            self.ledger_table.add_global_secondary_index(
                index_name=index_name,
                partition_key=_string(partition_key),
                sort_key=_string(sort_key),
                projection_type=dynamodb.ProjectionType.ALL,
            )

        self.idempotency_table = dynamodb.Table(
            self,
            "IdempotencyTable",
            partition_key=_string("id"),
            time_to_live_attribute=IDEMPOTENCY_TTL_ATTRIBUTE,
            **_protected_table_props(),
        )

        # Stages parked until their test build ends, or until room frees to start it.
        self.build_wait_table = dynamodb.Table(
            self,
            "BuildWaitTable",
            partition_key=_string("pk"),
            sort_key=_string("sk"),
            time_to_live_attribute=BUILD_WAIT_TTL_ATTRIBUTE,
            **_protected_table_props(),
        )

        access_log_bucket = s3.Bucket(
            self,
            "AccessLogBucket",
            lifecycle_rules=[
                s3.LifecycleRule(id="ExpireAccessLogs", expiration=ACCESS_LOG_RETENTION),
            ],
            **_private_bucket_props(),
        )

        self.artifact_bucket = s3.Bucket(
            self,
            "ArtifactBucket",
            versioned=True,
            server_access_logs_bucket=access_log_bucket,
            server_access_logs_prefix="artifact-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="AbortIncompleteUploads",
                    abort_incomplete_multipart_upload_after=INCOMPLETE_UPLOAD_TIMEOUT,
                ),
                s3.LifecycleRule(
                    id="ExpireNoncurrentVersions",
                    noncurrent_version_expiration=NONCURRENT_ARTIFACT_RETENTION,
                ),
            ],
            **_private_bucket_props(),
        )

        # Seals the list cursors the API hands out (an HMAC key), so a forged cursor is refused.
        self.cursor_signing_key = secretsmanager.Secret(
            self,
            "CursorSigningKey",
            description="HMAC key the agentledger API seals its list cursors with",
            generate_secret_string=secretsmanager.SecretStringGenerator(password_length=64, exclude_punctuation=True),
        )
        Validations.of(self.cursor_signing_key).acknowledge(
            Acknowledgment(
                id="AwsSolutions-SMG4",
                reason="Rotating the key only makes outstanding list cursors stale (a client lists again); "
                "rotate it by replacing the secret's value, no rotation function needed.",
            )
        )
