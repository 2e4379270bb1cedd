"""Prompt template files: :func:`read_template_file` reads one under the file rules
(a regular file, at most :data:`MAX_TEMPLATE_BYTES`, UTF-8) into a
:class:`TemplateSource`, template text that remembers where it came from, so that an
error in it names the file.

The rules, for ``--template FILE`` and a task YAML's ``template_file:`` alike: a
template file is named explicitly (a task YAML's ``template:`` is always the template
text itself), and it must be a regular file, not ``/proc/self/environ``, a FIFO or a
device, whose contents would otherwise land in every prompt.
"""

from __future__ import annotations

from pathlib import Path

from ..ground import read_small_text

#: Largest template file, in bytes.
MAX_TEMPLATE_BYTES = 65_536


class TemplateSource(str):
    """Template text and, in ``origin``, where it came from (``template_file prompt.j2 of
    task.yaml``), for error messages.

    >>> t = TemplateSource("{{ premise }} Answer:", "template of t.yaml")
    >>> t == "{{ premise }} Answer:", t.origin
    (True, 'template of t.yaml')
    """

    origin: str

    def __new__(cls, text: str, origin: str = "template") -> TemplateSource:
        self = super().__new__(cls, text)
        self.origin = origin
        return self


def read_template_file(path: str | Path, origin: str | None = None) -> TemplateSource:
    """The text of a template file under the file rules (module docstring); errors are
    one :class:`~nlieval.data.DataError` line naming the file.

    >>> from pathlib import Path
    >>> p = Path(run_dir) / "block.j2"
    >>> _ = p.write_text("P: {{ premise }}\\nAnswer:", encoding="utf-8")
    >>> read_template_file(p).origin.endswith("block.j2")
    True
    """
    text = read_small_text(path, MAX_TEMPLATE_BYTES)
    return TemplateSource(text, origin or f"template {path}")
