"""Run in its own process by test_wiring_mistakes: deploy a copy of the synthesized stack with
one deliberate wiring mistake, start a run, and print what happened as JSON."""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from agentledger.local.deploy import STACK_NAME
from agentledger.local.principals import principal_arn
from agentledger.local.runtime import LocalRuntime
from agentledger.local.synth import synthesize
from tests.samples import write_sample_repository


def broken_assembly(mistake: str) -> Path:
    copy = Path(tempfile.mkdtemp()) / "assembly"
    shutil.copytree(synthesize(progress=False), copy)
    template_path = copy / f"{STACK_NAME}.template.json"
    template = json.loads(template_path.read_text())
    plan = template["Resources"]["PlanFunction"]["Properties"]
    if mistake == "handler":
        plan["Handler"] = "handlers.stagez.plan"
    else:
        del plan["Environment"]["Variables"]["LEDGER_TABLE_NAME"]
    template_path.write_text(json.dumps(template))
    return copy


def main(mistake: str) -> None:
    runtime = LocalRuntime(assembly=broken_assembly(mistake), repository_roots=(Path(tempfile.gettempdir()),)).start()
    try:
        repo = write_sample_repository(Path(tempfile.mkdtemp()) / "repo", packaged=False)
        created = runtime.call_api("POST", "/runs", body={"repository": str(repo), "request": "tests"},
                                   caller=principal_arn("requester")).json()
        status = runtime.wait_for_execution(f"{created['run_id']}-start", timeout_s=60)
        view = runtime.call_api("GET", f"/runs/{created['run_id']}").json()
        print(json.dumps({"execution": status, "run_status": view["run"]["status"],
                          "handoff": view["handoff"]}))
    finally:
        runtime.stop()


if __name__ == "__main__":
    main(sys.argv[1])
