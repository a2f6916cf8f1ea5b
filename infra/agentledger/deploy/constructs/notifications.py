"""Where the run's external writes go: the notification topic, and GitHub for tickets."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_kms as kms
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from constructs import Construct

# SNS keeps a message only until it is delivered, so nothing durable is encrypted under a topic's
# key: the key goes with the stack (after KMS's waiting period) instead of being retained.
TOPIC_KEY_PENDING_WINDOW = Duration.days(7)


def encrypted_topic(
    scope: Construct, construct_id: str, *, description: str, fifo: bool = False
) -> tuple[sns.Topic, kms.Key]:
    """A topic encrypted with its own rotating customer managed key that refuses plain HTTP."""
    key = kms.Key(
        scope,
        f"{construct_id}Key",
        description=f"Encrypts the {description}",
        enable_key_rotation=True,
        pending_window=TOPIC_KEY_PENDING_WINDOW,
        removal_policy=RemovalPolicy.DESTROY,
    )
    topic = sns.Topic(
        scope,
        construct_id,
        display_name=f"agentledger {description}",
        fifo=fifo or None,
        # A FIFO topic deduplicates by the MessageDeduplicationId the publisher passes.
        content_based_deduplication=False if fifo else None,
        master_key=key,
        enforce_ssl=True,
    )
    return topic, key


class Notifications(Construct):
    """The FIFO notification topic, the GitHub token secret, and the GitHub API and repository.

    An effect's idempotency key travels as the topic's MessageDeduplicationId (hence FIFO without
    content-based deduplication) and as a marker in the GitHub issue it opens.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        github_api_url: str,
        github_repository: str,
        github_base_branch: str = "main",
    ) -> None:
        super().__init__(scope, construct_id)
        self.github_api_url = github_api_url
        self.github_repository = github_repository  # "" turns tickets and pull requests off
        self.github_base_branch = github_base_branch

        self.topic, self.topic_key = encrypted_topic(
            self, "NotificationTopic", description="run notifications", fifo=True
        )

        self.github_token_secret = secretsmanager.Secret(
            self,
            "GitHubTokenSecret",
            description=(
                "GitHub token agentledger opens tickets (issues) and pull requests with. Deployed "
                "with a random placeholder: after deploy, put a token with issues, contents and "
                "pull-requests write access to the githubRepository repository in this secret."
            ),
        )
        Validations.of(self.github_token_secret).acknowledge(
            Acknowledgment(
                id="AwsSolutions-SMG4",
                reason="The secret holds a third-party GitHub token, issued and rotated by its "
                "owner in GitHub; a Secrets Manager rotation function cannot mint one.",
            )
        )
