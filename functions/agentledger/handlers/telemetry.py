"""The one logger and metrics every handler and the assembly write to: a module of their own, so
that the assembly, which the decorators load at an invocation, and the decorators need not import
each other."""
from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics

from agentledger import metric_names

logger = Logger()
# Named here as well as in the environment: locally one process hosts every function, and this module
# may be imported outside any invocation's environment (the CDK app reads the api's routes from it).
metrics = Metrics(namespace=metric_names.NAMESPACE)
