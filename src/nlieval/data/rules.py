"""Where a task's data is: :class:`FileRule` (one way to get a split: which file, and
how to parse its rows), :class:`HubSpec` (a Hugging Face hub copy) and
:class:`TaskSpec` (a benchmark or user task), and the template :data:`FAMILIES`.
"""

from __future__ import annotations

import logging
import re
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..ground import DataError, open_regular
from ..types import ALPHA, NLI2, NLI3, SCI4, Label
from .parsers import RowParser
from .readers import RowOrError, arrow_rows, format_of, text_rows, with_label_file

log = logging.getLogger("nlieval.data")  # one logger for the whole package, as before

#: Template family of each ordered label set (see ``nlieval.choice.prompts.TEMPLATES``).
FAMILIES: dict[tuple[Label, ...], str] = {
    NLI3: "nli3",
    NLI2: "nli2",
    ALPHA: "alphanli",
    SCI4: "sci4",
}


@dataclass(frozen=True)
class FileRule:
    """One way to get a split: which file, and how to parse its rows.

    ``names``: file names searched under the data dir (case-insensitive; ``.gz`` variants
    accepted); ``folder``: a regex that some folder on the way to the file (or the data dir
    itself) must match in full, case-insensitive (ANLI rounds share file names);
    ``members``: files inside a zip; ``companion``: a label file next to the data file;
    ``path``/``resource``: a fixed file (user tasks, the bundled smoke sample).
    """

    parser: RowParser
    names: tuple[str, ...] = ()
    folder: str | None = None
    members: tuple[str, ...] = ()
    companion: str | None = None
    path: Path | None = None
    resource: str | None = None

    def describe(self) -> str:
        what = " or ".join(f"{n}[.gz]" if not n.endswith(".zip") else n for n in self.names)
        if self.members:
            what += f" (containing {', '.join(self.members)})"
            if self.members[0].endswith(".arrow"):
                what += " with pyarrow installed"
        if self.folder:
            what += f" in a folder matching '{self.folder}'"
        if self.companion:
            what += f" next to {self.companion}"
        return what

    def locate(self, index: Mapping[str, list[Path]], root: Path) -> Path | None:
        """The first matching file under ``root`` (sorted paths), or None."""
        for name in self.names:
            for cand in (name, name + ".gz"):
                for p in index.get(cand.lower(), []):
                    if self._accepts(p, root):
                        return p
        return None

    def _accepts(self, p: Path, root: Path) -> bool:
        if self.folder is not None:
            folders = [root.name, *p.relative_to(root).parent.parts]
            if not any(re.fullmatch(self.folder, d, re.IGNORECASE) for d in folders):
                return False
        if self.companion is not None and self._companion_of(p) is None:
            return False
        if self.members:
            if any(m.endswith(".arrow") for m in self.members) and not _has_pyarrow():
                log.info("%s: skipped, reading it needs pyarrow", p)
                return False
            try:
                with open_regular(p) as raw, zipfile.ZipFile(raw) as zf:
                    return set(self.members) <= set(zf.namelist())
            except (OSError, zipfile.BadZipFile):
                return False
        return True

    def _companion_of(self, p: Path) -> Path | None:
        assert self.companion is not None
        for cand in (self.companion, self.companion + ".gz"):
            if (p.parent / cand).is_file():
                return p.parent / cand
        return None

    def rows(self, p: Path) -> tuple[Iterator[RowOrError], str]:
        """The rows of the located file, and a description of what was read."""
        if self.members:
            if self.members[0].endswith(".arrow"):
                return arrow_rows(p, self.members), f"{p}!{','.join(self.members)}"
            member = self.members[0]
            return text_rows(p, format_of(member), member), f"{p}!{member}"
        if self.companion is not None:
            lst = self._companion_of(p)
            assert lst is not None
            return with_label_file(text_rows(p, "jsonl"), lst, "__label__"), f"{p} + {lst}"
        try:
            fmt = format_of(p.name)
        except DataError as err:
            raise DataError(p, None, None, err.message) from None
        return text_rows(p, fmt), str(p)


def _has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class HubSpec:
    """A Hugging Face hub copy: dataset id, config, our split -> hub split, row parser."""

    path: str
    name: str | None
    splits: Mapping[str, str]
    parser: RowParser


@dataclass(frozen=True)
class TaskSpec:
    """A benchmark (or user task): its label set, template family and where its data is.

    ``splits`` maps a split name to the :class:`FileRule` alternatives, in order of
    preference; ``template`` is a user task's own Jinja template text (None: the
    family's), a :class:`~nlieval.data.templates.TemplateSource` naming where it came from.

    >>> from nlieval.data import get_task
    >>> get_task("hans").labels == NLI2, get_task("hans").default_split
    (True, 'eval')
    """

    name: str
    labels: tuple[Label, ...]
    family: str
    default_split: str
    description: str
    splits: Mapping[str, tuple[FileRule, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )
    hub: HubSpec | None = field(default=None, compare=False, repr=False)
    template: str | None = None
    path: str | None = None  # the YAML file (or the data file) of a user task
