"""The Step Functions side of a run: starting executions under deterministic names and
answering the review task token."""
from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError


def execution_arn(state_machine_arn: str, name: str) -> str:
    return state_machine_arn.replace(":stateMachine:", ":execution:") + f":{name}"


class ExecutionControl:
    def __init__(self, state_machine_arn: str, sfn_client: Any) -> None:
        self.state_machine_arn = state_machine_arn
        self._sfn = sfn_client

    def start(self, name: str, run_id: str) -> str:
        """Start the named execution once: a repeated call (a double click, a retried request)
        gets the execution the first call started."""
        try:
            return self._sfn.start_execution(
                stateMachineArn=self.state_machine_arn, name=name, input=json.dumps({"run_id": run_id})
            )["executionArn"]
        except ClientError as error:
            if error.response["Error"]["Code"] == "ExecutionAlreadyExists":
                return execution_arn(self.state_machine_arn, name)
            raise

    def status(self, name: str) -> str | None:
        """RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED, or None when it never started."""
        try:
            return self._sfn.describe_execution(executionArn=execution_arn(self.state_machine_arn, name))["status"]
        except ClientError as error:
            if error.response["Error"]["Code"] == "ExecutionDoesNotExist":
                return None
            raise

    def succeed_task(self, task_token: str, output: dict[str, Any]) -> bool:
        return self._answer(lambda: self._sfn.send_task_success(taskToken=task_token, output=json.dumps(output)))

    def fail_task(self, task_token: str, error: str, cause: str) -> bool:
        return self._answer(lambda: self._sfn.send_task_failure(taskToken=task_token, error=error, cause=cause[:32000]))

    def heartbeat(self, task_token: str) -> bool:
        return self._answer(lambda: self._sfn.send_task_heartbeat(taskToken=task_token))

    def stop(self, name: str, cause: str) -> bool:
        try:
            self._sfn.stop_execution(executionArn=execution_arn(self.state_machine_arn, name),
                                     error="RunCancelled", cause=cause[:32000])
        except ClientError as error:
            if error.response["Error"]["Code"] == "ExecutionDoesNotExist":
                return False
            raise
        return True

    @staticmethod
    def _answer(call: Any) -> bool:
        """False when the task is already over (answered, timed out): the ledger is the record
        of what was decided, so a late answer is harmless."""
        try:
            call()
        except ClientError as error:
            if error.response["Error"]["Code"] in ("TaskTimedOut", "TaskDoesNotExist", "InvalidToken"):
                return False
            raise
        return True
