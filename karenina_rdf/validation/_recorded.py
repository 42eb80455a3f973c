"""Recorded validations: the findings of a stored benchmark's last full validation, kept so that
``validate --stored`` checks again only a benchmark that changed since (docs/performance.md).

A record is a JSON file under ``{store}/cache/validation/``, named by the benchmark's generation
graph and the :func:`fingerprint` of the code and shapes that made it; the catalog says which one
is current with the SHA-256 of its bytes (``Catalog.finish_validation``), published with the graph
by an import or set by a full validation that no edit interrupted. Every in-place edit forgets
that fact in the same request as the edit (``GraphStore.edit``, ``update_graph``), a new
generation starts without one, and a file whose bytes do not match the digest is ignored; so a
record is either exactly what a full validation of the stored triples would find, or unused. The
graph stays the one source of truth: deleting the cache folder costs a validation, nothing more.

Only stores on disk keep records: a server's graphs may be written by other clients, and a store
in memory lives too briefly to gain from them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from karenina_rdf.store import VALIDATED, GraphStore

Record = list[dict[str, Any]]  # the findings, as Finding.model_dump(mode="json") gives them
_PACKAGE = Path(__file__).resolve().parent.parent  # karenina_rdf/
FOLDER = ("cache", "validation")


@functools.cache
def fingerprint() -> str:
    """What findings depend on besides the triples: every module and shape of the package (a
    message, a check or a shape that changes makes old records useless) and the Python version
    (its grammar decides which templates parse). About 100 small files, read once a process."""
    digest = hashlib.sha256(f"{sys.version_info[:3]}".encode())
    files = sorted(p for ext in ("*.py", "*.ttl") for p in _PACKAGE.rglob(ext) if "__pycache__" not in p.parts)
    shapes = Path(__file__).resolve().parent / "shapes"
    if shapes.is_dir():
        files += sorted(shapes.rglob("*.ttl"))
    for path in files:
        digest.update(str(path.relative_to(path.anchor)).encode("utf-8", "surrogateescape"))
        digest.update(path.read_bytes())
    return digest.hexdigest()[:32]


def _file(store: GraphStore, graph: str) -> Path | None:
    if store.path is None or store.remote is not None:
        return None
    name = hashlib.sha256(f"{graph}\n{fingerprint()}".encode()).hexdigest()[:32]
    return store.path.joinpath(*FOLDER, name + ".json")


def recorded(store: GraphStore, bench: str, graph: str) -> Record | None:
    """The findings recorded for ``bench`` in ``graph``, if the catalog vouches for them."""
    path = _file(store, graph)
    if path is None:
        return None
    digest = store.catalog.value(bench, VALIDATED)
    if digest is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != digest:
        return None  # another generation's, another code's, or cut off by a crash
    return cast(Record, json.loads(data))


def write_record(store: GraphStore, graph: str, findings: Record) -> str | None:
    """Write ``findings`` as the record of ``graph`` (atomically); its digest, for the catalog.
    None where records are not kept."""
    path = _file(store, graph)
    if path is None:
        return None
    data = json.dumps(findings, ensure_ascii=False).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return hashlib.sha256(data).hexdigest()


def validate_recorded(store: GraphStore, bench: str, graph: str, validate_all: Callable[[], Record]) -> Record:
    """``bench``'s findings: the record if it is current, else ``validate_all()``, recorded when
    no edit happened while it ran."""
    found = recorded(store, bench, graph)
    if found is not None:
        return found
    if _file(store, graph) is None:
        return validate_all()
    nonce = uuid.uuid4().hex
    store.catalog.start_validation(bench, nonce)
    findings = validate_all()
    digest = write_record(store, graph, findings)
    if digest is not None:
        store.catalog.finish_validation(bench, nonce, digest)
    return findings


def prune(store: GraphStore, keep: str | None = None) -> None:
    """Remove the records of graphs no longer live (replaced or deleted generations) or made by
    other code; ``keep``: a graph about to be published."""
    if store.path is None or store.remote is not None:
        return
    folder = store.path.joinpath(*FOLDER)
    if not folder.is_dir():
        return
    graphs = [g.value for g in store.catalog.benchmarks().values()]
    kept = {_file(store, g) for g in [*graphs, keep] if g is not None}
    for path in folder.iterdir():
        if path not in kept:
            path.unlink(missing_ok=True)
