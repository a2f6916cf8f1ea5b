"""How test generation is bounded: the settings a plan carries to the execute stage's build, and
the deployment's caps on them. A module of its own, with nothing but pydantic, because the
functions' settings (agentledger.config) read the caps on every cold start, where the agent
package they would otherwise come from is not needed."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_GENERATION_RUNS = 5  # TestGen-LLM's: a test that passes five runs in a row is not flaky there
DEFAULT_MUTATION_MODULE_SECONDS = 60
DEFAULT_MUTATION_RUN_SECONDS = 300
MAX_GENERATION_RUNS = 20


class GenerationSettings(BaseModel):
    """How the execute stage's build writes and checks candidates: part of what is approved."""

    model_config = ConfigDict(frozen=True)

    seed: int  # Pynguin's and the shuffled suite's, from the run: the same inputs give the same tests
    module_seconds: int  # Pynguin's search budget for one module
    run_seconds: int  # and for the whole run
    iterations: int  # Pynguin's bound that ends a search the same way every time
    random_order: bool  # the suite runs shuffled when candidates are checked with it
    # How many runs in a row a candidate must pass, alone and with the suite (plans recorded before
    # it was a setting asked for five).
    runs: int = DEFAULT_GENERATION_RUNS
    # Mutation analysis of one targeted module (in each of its two passes: the suite's, then the
    # candidates') and of the whole run; plans recorded before it ran get the defaults.
    mutation_module_seconds: int = DEFAULT_MUTATION_MODULE_SECONDS
    mutation_run_seconds: int = DEFAULT_MUTATION_RUN_SECONDS


class GenerationLimits(BaseModel):
    """The deployment's caps on what a repository may ask of test generation, and the defaults."""

    model_config = ConfigDict(frozen=True)

    module_seconds: int = Field(default=60, gt=0)
    run_seconds: int = Field(default=600, gt=0)
    iterations: int = Field(default=1000, gt=0)
    runs: int = Field(default=DEFAULT_GENERATION_RUNS, ge=1, le=MAX_GENERATION_RUNS)
    mutation_module_seconds: int = Field(default=DEFAULT_MUTATION_MODULE_SECONDS, gt=0)
    mutation_run_seconds: int = Field(default=DEFAULT_MUTATION_RUN_SECONDS, gt=0)

    def bound(self, settings: GenerationSettings) -> GenerationSettings:
        """An agent's settings within these caps. A plug-in agent plans with whatever limits it was
        built with; how many runs in a row a candidate must pass is the deployment's alone."""
        return settings.model_copy(update={
            "module_seconds": min(settings.module_seconds, self.module_seconds),
            "run_seconds": min(settings.run_seconds, self.run_seconds),
            "iterations": min(settings.iterations, self.iterations),
            "mutation_module_seconds": min(settings.mutation_module_seconds, self.mutation_module_seconds),
            "mutation_run_seconds": min(settings.mutation_run_seconds, self.mutation_run_seconds),
            "runs": self.runs,
        })
