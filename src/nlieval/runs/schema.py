"""The typed, versioned form of ``results.json`` and of a run folder's provenance.

:class:`Results` is what every command that writes a run folder returns and what
``results.json`` holds; :data:`RESULTS_VERSION` is written into it, and a file of a newer
version is refused instead of being half understood. A file without a version is version
1 (before this schema): its ``environment`` is read as the provenance of one unknown
invocation.

:class:`Provenance` says what produced or re-reported a folder: the command, the time,
the package versions, Python, the platform, the git commit of nlieval and the fingerprints
of what the records depend on (data, pool, prompts, model weights). One is appended
per invocation (``provenance.jsonl``, owned by :class:`~nlieval.runs.folder.RunFolder`)
and none is ever rewritten, so re-reporting after an upgrade keeps what made the records.

>>> p = Provenance.now("run")
>>> Provenance.from_dict(p.to_dict()) == p
True
>>> Results.from_dict({"version": RESULTS_VERSION + 1}, "results.json")  # doctest: +ELLIPSIS
Traceback (most recent call last):
nlieval.ground.errors.FolderError: results.json: written by a newer nlieval (results version 3; ...
"""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from .folder import RunError

#: The version of ``results.json`` this code writes (1: files without a version).
RESULTS_VERSION = 2

#: Packages whose versions a provenance entry records.
PACKAGES = (
    "nlieval",
    "torch",
    "transformers",
    "numpy",
    "scipy",
    "scikit-learn",
    "gguf",
    "accelerate",
)

MetricRow = Mapping[str, Any]
"""One row of metrics: model, task, k, n, accuracy, ... (see :func:`nlieval.metrics.summarize`)."""


@dataclass(frozen=True)
class Provenance:
    """What one invocation was run with (see the module docstring).

    >>> Provenance("report", "2026-01-01T00:00:00+00:00", {"nlieval": "0.1.0"}).command
    'report'
    """

    command: str
    time: str
    versions: Mapping[str, str | None] = field(default_factory=dict)
    python: str | None = None
    platform: str | None = None
    git_commit: str | None = None
    fingerprints: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def now(cls, command: str, fingerprints: Mapping[str, str] | None = None) -> Provenance:
        """This process, now; ``fingerprints`` of what this invocation's records depend on."""
        versions: dict[str, str | None] = {}
        for pkg in PACKAGES:
            try:
                versions[pkg] = metadata.version(pkg)
            except metadata.PackageNotFoundError:
                versions[pkg] = None
        return cls(
            command=command,
            time=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            versions=versions,
            python=platform.python_version(),
            platform=platform.platform(),
            git_commit=git_commit(),
            fingerprints=dict(fingerprints or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "time": self.time,
            "versions": dict(self.versions),
            "python": self.python,
            "platform": self.platform,
            "git_commit": self.git_commit,
            "fingerprints": dict(self.fingerprints),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Provenance:
        """Read one entry back; a field of the wrong type is a ValueError."""
        versions = d.get("versions") or {}
        if not isinstance(versions, Mapping):
            raise ValueError("provenance: 'versions' is not an object")
        prints = d.get("fingerprints") or {}
        if not isinstance(prints, Mapping):
            raise ValueError("provenance: 'fingerprints' is not an object")
        return cls(
            command=str(d.get("command", "unknown")),
            time=str(d.get("time", "")),
            versions={str(k): (None if v is None else str(v)) for k, v in versions.items()},
            python=d.get("python"),
            platform=d.get("platform"),
            git_commit=d.get("git_commit"),
            fingerprints={str(k): str(v) for k, v in prints.items()},
        )


@dataclass(frozen=True)
class Results:
    """``results.json``: the configuration, the provenance of every invocation, the data
    report per task, the few-shot draws, timing and the metrics recomputed from records.

    >>> r = Results(config={"model": "m"}, metrics=({"model": "m", "accuracy": 0.5},))
    >>> Results.from_dict(r.to_dict(), "results.json") == r
    True
    """

    config: Mapping[str, Any] | None = None
    metrics: tuple[MetricRow, ...] = ()
    provenance: tuple[Provenance, ...] = ()
    data: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    draws: Mapping[str, Mapping[str, Mapping[str, list[str]]]] = field(default_factory=dict)
    timing: Mapping[str, Any] = field(default_factory=dict)
    version: int = RESULTS_VERSION

    @property
    def made_by(self) -> Provenance | None:
        """The latest invocation that wrote records (not a re-report), if any."""
        for p in reversed(self.provenance):
            if p.command != "report":
                return p
        return self.provenance[-1] if self.provenance else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "config": None if self.config is None else dict(self.config),
            "provenance": [p.to_dict() for p in self.provenance],
            "data": {k: dict(v) for k, v in self.data.items()},
            "draws": self.draws,
            "timing": dict(self.timing),
            "metrics": [dict(m) for m in self.metrics],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str | Path) -> Results:
        """Read ``results.json`` (any version up to :data:`RESULTS_VERSION`); ``where``
        names the file in errors."""
        version = d.get("version", 1)
        if not isinstance(version, int) or isinstance(version, bool):
            raise RunError(f"{where}: 'version' is not an integer: {version!r}")
        if version > RESULTS_VERSION:
            raise RunError(
                f"{where}: written by a newer nlieval (results version {version}; this one "
                f"reads up to {RESULTS_VERSION}): upgrade nlieval"
            )
        try:
            prov: tuple[Provenance, ...] = ()
            if version == 1:
                env = d.get("environment")
                if isinstance(env, Mapping):
                    prov = (_from_environment(env),)
            else:
                prov = tuple(Provenance.from_dict(p) for p in d.get("provenance") or ())
            config = d.get("config")
            return cls(
                config=dict(config) if isinstance(config, Mapping) else None,
                metrics=tuple(dict(m) for m in d.get("metrics") or ()),
                provenance=prov,
                data=dict(d.get("data") or {}),
                draws=dict(d.get("draws") or {}),
                timing=dict(d.get("timing") or {}),
                version=RESULTS_VERSION,
            )
        except (TypeError, ValueError, AttributeError) as err:
            raise RunError(f"{where}: not a results file of nlieval ({err})") from None


def _from_environment(env: Mapping[str, Any]) -> Provenance:
    # Version 1 kept one "environment", rewritten by every invocation: its command is not
    # known.
    return Provenance.from_dict({**env, "command": "unknown (results version 1)"})


def git_commit() -> str | None:
    """The git commit of nlieval's source (``-dirty`` with uncommitted changes), or None
    outside a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        if out.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() + ("-dirty" if dirty else "")
