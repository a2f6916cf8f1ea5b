"""Some annotations are read at run time: pydantic reads a model's when the class is made, and the
api function's resolver reads its routes' to validate a request. A name those annotations use must
stay imported at run time, not only for the type checker (ruff's TC rules move such imports under
TYPE_CHECKING): otherwise pydantic cannot use the model, and the resolver validates the parameter
as an unresolved forward reference, which checks nothing."""
from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, ForwardRef

import pytest
from pydantic import BaseModel

import agentledger
from agentledger import handlers

if TYPE_CHECKING:
    from types import ModuleType

# Run as scripts of their own: in a build (the kit's entry point and its site hooks).
NOT_IMPORTED = ("__main__", "agentledger.buildkit.site")


def shipped_modules() -> list[ModuleType]:
    names = [info.name for package in (agentledger, handlers)
             for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return [importlib.import_module(name) for name in names if not any(part in name for part in NOT_IMPORTED)]


def models() -> list[type[BaseModel]]:
    return [value for module in shipped_modules() for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == module.__name__]


@pytest.mark.parametrize("model", models(), ids=lambda model: f"{model.__module__}.{model.__qualname__}")
def test_every_model_s_annotations_resolve_at_run_time(model: type[BaseModel]) -> None:
    assert model.__pydantic_complete__ or model.model_rebuild(raise_errors=True)


def test_every_route_parameter_is_validated_as_its_type() -> None:
    from agentledger.handlers.api import app  # noqa: PLC0415 — its routes, as the resolver built them

    unresolved = [f"{route.method} {route.path}: {parameter.name}"
                  for route in [*app._static_routes, *app._dynamic_routes]
                  for parameter in [*route.dependant.path_params, *route.dependant.query_params,
                                    *route.dependant.header_params, *route.dependant.body_params]
                  if isinstance(parameter.field_info.annotation, ForwardRef)]
    assert unresolved == []
