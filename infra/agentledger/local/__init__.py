"""The local runtime: the synthesized stack deployed into moto, served over HTTP, driven by a CLI."""
