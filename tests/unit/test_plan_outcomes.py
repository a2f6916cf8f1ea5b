"""What a plan decides about the rest of the run: a plan that writes nothing ends it as
`nothing_to_do` (unless the deployment asks for a review anyway), and a request for changes
reaches the planner, which says so when it makes the same plan again."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentledger.errors import StaleContextError
from agentledger.models import RunOutcome, RunStatus, Stage, StageStatus
from agentledger.service import ReviewRequest
from agentledger.states import DecisionKind, NextAction
from agentledger.testing.agent import InstantAgent
from agentledger.testing.world import REVIEWER, TOKEN, UP_TO_REVIEW, World, build_world

if TYPE_CHECKING:
    from pathlib import Path

NOTHING_TO_TEST = '''"""Helpers its own tests already cover."""


def double(value):
    """Twice the value."""
    return value * 2
'''


def _without_examples(world: World, tmp_path: Path) -> None:
    """A repository in which every object is tested already: no writer has a target."""
    repo = tmp_path / "plain"
    (repo / "plain").mkdir(parents=True)
    (repo / "plain" / "__init__.py").write_text(NOTHING_TO_TEST)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_plain.py").write_text("from plain import double\n\n\ndef test_double():\n"
                                                  "    assert double(2) == 4\n")
    world.repo = repo


def test_a_plan_that_writes_nothing_completes_the_run_as_nothing_to_do_without_review(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    _without_examples(world, tmp_path)
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT)
    planned = world.workflow.run_stage(Stage.PLAN, run_id, execution)
    assert planned["outcome"] == RunOutcome.NOTHING_TO_DO  # what the state machine's Choice reads

    # A restart here goes straight to completion: nothing to execute, verify or approve.
    assessed = world.workflow.assess(run_id, execution)
    assert (assessed["next"], assessed["outcome"]) == (NextAction.COMPLETE, RunOutcome.NOTHING_TO_DO)
    world.workflow.run_stage(Stage.COMPLETE, run_id, execution)

    ledger = world.ledger.load(run_id)
    assert ledger.run.status == RunStatus.COMPLETE and ledger.run.outcome == RunOutcome.NOTHING_TO_DO
    assert ledger.review is None and not ledger.effects
    assert set(ledger.stages) == {"inspect", "plan", "complete"}
    assert ledger.evidence["summary"].depends_on == {"evidence:plan": ledger.evidence["plan"].fingerprint}
    summary = world.artifacts.get_json(next(r for r in ledger.artifacts if r.name == "summary.json"))
    assert summary["outcome"] == "nothing_to_do" and summary["tests"] is None and summary["approved_by_review"] is None
    assert world.workflow.assess(run_id, execution)["next"] == NextAction.DONE
    assert world.agent.calls["execute"] == 0 and world.builds.started == []


def test_a_run_with_nothing_to_do_plans_again_when_the_source_changes_before_it_completes(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    _without_examples(world, tmp_path)
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN)
    module = world.repo / "plain" / "__init__.py"
    module.write_text(module.read_text() + '\n\ndef triple(value):\n    return value * 3\n')  # untested

    assessed = world.workflow.assess(run_id, execution)
    assert assessed["next"] == NextAction.INSPECT
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN)
    assert world.ledger.get_run(run_id).outcome == RunOutcome.CHANGES_PROPOSED
    assert world.workflow.assess(run_id, execution)["next"] == NextAction.EXECUTE


def test_a_deployment_can_ask_for_a_review_of_an_empty_plan(tmp_path: Path) -> None:
    world = build_world(tmp_path, review_empty_plans=True)
    _without_examples(world, tmp_path)
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN)
    assert world.ledger.get_run(run_id).outcome == RunOutcome.EMPTY_PLAN_REVIEWED
    assert world.workflow.assess(run_id, execution)["next"] == NextAction.EXECUTE


def test_a_repository_can_ask_for_a_review_of_its_empty_plan_and_an_edit_of_that_ask_is_not_acted_on(
        tmp_path: Path) -> None:
    world = build_world(tmp_path)
    _without_examples(world, tmp_path)
    (world.repo / "agentledger.toml").write_text("review_empty_plans = true\n")
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN)
    assert world.ledger.get_run(run_id).outcome == RunOutcome.EMPTY_PLAN_REVIEWED
    assert world.workflow.assess(run_id, execution)["next"] == NextAction.EXECUTE

    ledger = world.ledger.load(run_id)
    files_read = next(world.artifacts.get_json(ref) for ref in ledger.artifacts if ref.name == "files-read.json")
    assert "agentledger.toml" in files_read  # the plan's evidence holds what asked for the review

    (world.repo / "agentledger.toml").write_text("review_empty_plans = false\n")
    assert world.workflow.assess(run_id, execution)["next"] != NextAction.EXECUTE


def test_the_reviewers_comment_reaches_the_planner_and_an_unchanged_plan_is_said_to_be_unchanged(
        tmp_path: Path) -> None:
    world = build_world(tmp_path)
    run_id, execution = world.to_review()
    rejected = world.ledger.get_run(run_id).plan_digest
    world.service.review(run_id, ReviewRequest(decision="request_changes", plan_digest=rejected,
                                               comment="also cover slugify's unicode handling"), REVIEWER)
    assert world.agent.briefs[-1].reviewer_comment is None  # the first plan had no comment to read

    assert world.workflow.assess(run_id, execution)["next"] == NextAction.PLAN
    world.run(run_id, execution, Stage.PLAN)
    brief = world.agent.briefs[-1]
    assert brief.request == "write tests"
    assert (brief.reviewer_comment, brief.rejected_plan_digest) == ("also cover slugify's unicode handling", rejected)
    ledger = world.ledger.load(run_id)
    unchanged = [d for d in ledger.decisions if d.kind == DecisionKind.REPLAN_UNCHANGED]
    assert len(unchanged) == 1 and "made the same plan again" in unchanged[0].summary

    world.run(run_id, execution, Stage.EXECUTE, Stage.VERIFY, Stage.AWAIT_REVIEW)
    review = world.ledger.load(run_id).review
    assert review is not None and review.decision is None and review.task_token == TOKEN
    assert review.unchanged_after is not None
    assert (review.unchanged_after.comment, review.unchanged_after.decided_by) == (
        "also cover slugify's unicode handling", REVIEWER)


def test_a_new_plan_after_a_request_for_changes_is_not_marked_unchanged(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    run_id, execution = world.to_review()
    world.service.review(run_id, ReviewRequest(decision="request_changes", plan_digest=world.ledger.get_run(
        run_id).plan_digest, comment="the docstrings changed"), REVIEWER)
    module = world.repo / "textkit" / "slug.py"
    shout = '\n\ndef shout(text):\n    """Upper.\n\n    >>> shout("a")\n    \'A\'\n    """\n    return text.upper()\n'
    module.write_text(module.read_text() + shout)
    assert world.workflow.assess(run_id, execution)["next"] == NextAction.INSPECT
    world.run(run_id, execution, *UP_TO_REVIEW, Stage.AWAIT_REVIEW)
    ledger = world.ledger.load(run_id)
    assert not [d for d in ledger.decisions if d.kind == DecisionKind.REPLAN_UNCHANGED]
    assert ledger.review is not None and ledger.review.unchanged_after is None
    assert ledger.stages["await_review"].status == StageStatus.RUNNING


class EditedWhilePlanning(InstantAgent):
    """A person saves a module after the tree was hashed and before the planner reads it."""

    def plan(self, inventory, snapshot, brief):
        module = next(module.path for module in inventory.modules if any(obj.examples for obj in module.objects))
        path = snapshot.root / module
        path.write_text(path.read_text() + "\n# saved while the plan was made\n")
        return super().plan(inventory, snapshot, brief)


def test_a_plan_made_from_files_that_changed_under_it_is_refused_as_stale(tmp_path: Path) -> None:
    world = build_world(tmp_path, agent=EditedWhilePlanning())
    (world.repo / "agentledger.toml").write_text('writer = "doctest"\n')  # a writer that reads the modules
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT)
    with pytest.raises(StaleContextError, match="files changed while the plan was made"):
        world.workflow.run_stage(Stage.PLAN, run_id, execution)
    assert world.ledger.load(run_id).run.plan_digest is None
