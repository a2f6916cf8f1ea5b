"""mkdocs-gen-files runs this as the site is built: it writes the reference pages (reference.py)
and the API's OpenAPI document into the site, never into docs/."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import mkdocs_gen_files

# mkdocs-gen-files runs this file by path, which puts nothing on the import path: the repository's
# root lets it import docs.gen.reference, the name the unit tests import it by.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from docs.gen import reference  # noqa: E402  (importable only once the root is on the path)

for page, write in reference.PAGES.items():
    with mkdocs_gen_files.open(page, "w") as file:
        file.write(write())
    mkdocs_gen_files.set_edit_path(page, "gen/reference.py")

with mkdocs_gen_files.open("reference/openapi.json", "w") as file:
    json.dump(reference.openapi_document(), file, indent=2)
