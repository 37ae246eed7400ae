"""Sphinx configuration of the dpsketch documentation site: the Markdown reference pages (read by
myst-parser, unchanged, so their links keep working on GitHub too) and an API reference generated
by autodoc from the docstrings of the installed package. Build: tools/build_docs.sh (CI, -W)."""

import inspect
import sys
from pathlib import Path

import dpsketch

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "dpsketch"
author = "dpsketch contributors"
copyright = "dpsketch contributors, Apache-2.0"
release = version = dpsketch.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "cpp_headers"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# docs/results/ holds experiment outputs (claims tables, CSVs) that docs/results.md links to;
# they are data, not pages of the site.
exclude_patterns = ["results/**", "_ext"]

# Markdown: GitHub-style anchors for headings (the pages link to each other by them).
myst_heading_anchors = 4

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_class_signature = "mixed"

html_theme = "alabaster"
html_title = f"dpsketch {release}"


def _init_signature(app, what, name, obj, options, signature, return_annotation):
    """The sketch classes share a ``__new__(cls, *args, **kwargs)`` (dpsketch.sketches._base.Summary, which
    sets up the object lock), which autodoc would show as the class signature; show the
    parameters of ``__init__`` instead."""
    if what == "class" and signature == "(*args, **kwargs)" and "__init__" in dir(obj):
        sig = inspect.signature(obj.__init__)
        params = [p.replace(annotation=p.empty) for p in list(sig.parameters.values())[1:]]
        return str(sig.replace(parameters=params, return_annotation=sig.empty)), return_annotation
    return None


def setup(app):
    app.connect("autodoc-process-signature", _init_signature)
