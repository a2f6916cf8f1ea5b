"""Where effects go: the FIFO notification topic (CMK, TLS only) and the GitHub token secret."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match, Template

pytestmark = pytest.mark.infra

REFUSE_PLAIN_HTTP = Match.object_like(
    {
        "Effect": "Deny",
        "Action": "sns:Publish",
        "Principal": "*",
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }
)


def test_notification_topic_is_fifo_without_content_based_deduplication(resources, logical_id) -> None:
    topic = resources("AWS::SNS::Topic")[logical_id("AWS::SNS::Topic", "NotificationTopic")]["Properties"]
    assert topic["FifoTopic"] is True
    # The effect's idempotency key is passed as the MessageDeduplicationId instead.
    assert topic["ContentBasedDeduplication"] is False
    assert topic["TopicName"].endswith(".fifo")


def test_notification_topic_is_encrypted_with_its_own_rotating_key(resources, logical_id) -> None:
    key = logical_id("AWS::KMS::Key", "NotificationTopicKey")
    topic = resources("AWS::SNS::Topic")[logical_id("AWS::SNS::Topic", "NotificationTopic")]["Properties"]
    assert topic["KmsMasterKeyId"] == {"Fn::GetAtt": [key, "Arn"]}
    assert resources("AWS::KMS::Key")[key]["Properties"]["EnableKeyRotation"] is True


def test_notification_topic_refuses_plain_http(template: Template, logical_id) -> None:
    topic = logical_id("AWS::SNS::Topic", "NotificationTopic")
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "Topics": [{"Ref": topic}],
            "PolicyDocument": {"Statement": Match.array_with([REFUSE_PLAIN_HTTP])},
        },
    )


def test_every_topic_is_encrypted_and_refuses_plain_http(resources) -> None:
    topics = resources("AWS::SNS::Topic")
    keys = resources("AWS::KMS::Key")
    for topic in topics.values():
        key = topic["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]
        assert keys[key]["Properties"]["EnableKeyRotation"] is True
    protected = {
        reference["Ref"]
        for policy in resources("AWS::SNS::TopicPolicy").values()
        if any(
            REFUSE_PLAIN_HTTP.test(statement).is_success
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        )
        for reference in policy["Properties"]["Topics"]
    }
    assert protected == set(topics)


def test_github_token_secret_says_how_to_fill_it(resources, logical_id) -> None:
    secret = resources("AWS::SecretsManager::Secret")[
        logical_id("AWS::SecretsManager::Secret", "GitHubTokenSecret")
    ]["Properties"]
    assert "token" in secret["Description"] and "after deploy" in secret["Description"]
    assert "RotationRules" not in secret  # a third-party token, rotated by its owner in GitHub
