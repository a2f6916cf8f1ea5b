"""Test builds on CodeBuild: start one with this test run's grants, ask how it is doing, and find
the build a crashed attempt started before it could record the build's id.

A build's variables are not secret: BatchGetBuilds returns them in plaintext, to the verify
function and to anyone else allowed to call it (ReadOnlyAccess is). The output grant could write
the build's results, so it is stored as an object next to the output key and the build gets a
presigned GET of it, which its post_build fetches for the driver's upload alone."""
from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from ..models import BuildRequest
from ..states import BuildStatus
from ..testrun.layout import (
    INPUT_URL_VARIABLE,
    OUTPUT_GRANT_FILE,
    OUTPUT_GRANT_URL_VARIABLE,
    TEST_RUN_VARIABLE,
    output_grant_seconds,
)
from .s3_artifacts import ArtifactStore

# How far back `find` looks: the builds a crashed attempt could have started are the newest ones.
FIND_LOOKBACK_BUILDS = 200
BATCH_SIZE = 100


class CodeBuildBuilds:
    def __init__(self, project_name: str, codebuild_client: Any, artifacts: ArtifactStore) -> None:
        self.project_name = project_name
        self._codebuild = codebuild_client
        self._artifacts = artifacts

    def start(self, request: BuildRequest) -> str:
        grant_key = PurePosixPath(request.output_grant["fields"]["key"]).with_name(OUTPUT_GRANT_FILE)
        grant_url = self._artifacts.hand_over(str(grant_key), json.dumps(request.output_grant).encode(),
                                              output_grant_seconds(request.timeout_minutes))
        variables = {
            INPUT_URL_VARIABLE: request.input_url,
            OUTPUT_GRANT_URL_VARIABLE: grant_url,
            TEST_RUN_VARIABLE: request.test_run,
        }
        response = self._codebuild.start_build(
            projectName=self.project_name,
            environmentVariablesOverride=[{"name": k, "value": v, "type": "PLAINTEXT"} for k, v in variables.items()],
            imageOverride=request.image,
            computeTypeOverride=request.compute,
            timeoutInMinutesOverride=request.timeout_minutes,
        )
        return response["build"]["id"]

    def status(self, build_id: str) -> BuildStatus | None:
        builds = self._codebuild.batch_get_builds(ids=[build_id])["builds"]
        return BuildStatus(builds[0]["buildStatus"]) if builds else None

    def find(self, test_run: str) -> str | None:
        ids: list[str] = []
        paginator = self._codebuild.get_paginator("list_builds_for_project")
        for page in paginator.paginate(projectName=self.project_name, sortOrder="DESCENDING"):
            ids.extend(page.get("ids", []))
            if len(ids) >= FIND_LOOKBACK_BUILDS:
                break
        for start in range(0, min(len(ids), FIND_LOOKBACK_BUILDS), BATCH_SIZE):
            for build in self._codebuild.batch_get_builds(ids=ids[start:start + BATCH_SIZE])["builds"]:
                if _variable(build, TEST_RUN_VARIABLE) == test_run:
                    return build["id"]
        return None


def _variable(build: dict[str, Any], name: str) -> str | None:
    for variable in build.get("environment", {}).get("environmentVariables", []):
        if variable.get("name") == name:
            return variable.get("value")
    return None
