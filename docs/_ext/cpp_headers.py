"""Sphinx directive ``cpp-headers``: the C++ reference page, one section per public header under
the given directory, showing the header's leading ``//`` comment (which is where each header
documents itself) and the classes and structs it declares at namespace scope.

The headers document themselves in plain ``//`` comments, not Doxygen markup, so this page is
generated from them directly; no other tool is needed to build it."""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

_DECL = re.compile(r"^(?:template\s*<.*>\s*)?(?:class|struct)\s+(\w+)[^;]*$")


def leading_comment(text: str) -> list[str]:
    """The comment lines at the top of a header, without their ``//`` markers."""
    out = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        out.append(line[3:] if line.startswith("// ") else line[2:])
    return out


def declarations(text: str) -> list[str]:
    """Names of the classes and structs declared at column 0 (namespace scope), in file order."""
    names = []
    for line in text.splitlines():
        m = _DECL.match(line)
        if m and m.group(1) not in names:
            names.append(m.group(1))
    return names


class CppHeaders(SphinxDirective):
    required_arguments = 1  # the include directory, relative to this document

    def run(self):
        root = (Path(self.env.doc2path(self.env.docname)).parent / self.arguments[0]).resolve()
        headers = sorted(root.rglob("*.hpp"))
        if not headers:
            raise self.error(f"no headers under {root}")
        rst = []
        group = None
        for h in headers:
            rel = h.relative_to(root.parent).as_posix()  # dpsketch/counters/misra_gries.hpp
            sub = h.parent.relative_to(root).as_posix()
            if sub != group:
                group = sub
                rst += [sub, "-" * len(sub), ""]
            self.env.note_dependency(str(h))
            text = h.read_text(encoding="utf-8")
            title = f"``{rel}``"
            rst += [title, "~" * len(title), "", f"``#include <{rel}>``", ""]
            decl = declarations(text)
            if decl:
                rst += ["Declares: " + ", ".join(f"``{d}``" for d in decl) + ".", ""]
            rst += ["::", ""] + ["   " + line if line else "" for line in leading_comment(text)] + [""]
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(rst, source=str(root)), node)
        return node.children


def setup(app):
    app.add_directive("cpp-headers", CppHeaders)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
