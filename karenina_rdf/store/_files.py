"""Generation files: the N-Triples an import loaded into a generation graph, kept in the store
folder (``{store}/generations/{key}/``) so that the graph can be loaded again without reading
it back out of RocksDB (docs/performance.md § Delete and replace, second pass).

Reading a quad back from pyoxigraph costs about 6 µs of CPU; the import wrote these very lines
moments before. They serve two things:

* **a rebuild** (``GraphStore._rebuild_without``) reloads a graph that stays from its files
  instead of dumping it, and a graph dropped quad by quad is removed by the lines of its files
  instead of by iterating it;
* **a kept version** (``store._versions``) of a replaced generation is its files: nothing is
  copied into the version archive when a re-import replaces it, and the archive loads them the
  first time the version is read (``materialise``).

The files say what a graph holds only while nothing has changed it since its import, and the
catalog already says when that is: an edit in place forgets the benchmark's content hash
(``Catalog.forget_hashes``). So a folder records the content hash of the import that wrote it,
and it is used only while the catalog gives the graph's owner (the live benchmark, or the kept
version whose graph it is) that same hash; every other folder is stale and goes when the store
opens (:func:`tidy`). The files are fsynced before the import publishes, like RocksDB's own
writes: a machine crash cannot leave a published graph whose files are cut short (their sizes
are recorded and checked too).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pyoxigraph as ox

from karenina_rdf.rdf import CATALOG_GRAPH, KAR

from ._catalog import CONTENT_HASH, GRAPH

if TYPE_CHECKING:
    from ._store import GraphStore

FOLDER = "generations"  # in the store folder
_META = "meta.json"
_VERSION_GRAPH = KAR.versionGraph  # store._versions.VERSION_GRAPH (that module imports this one)


def _root(store: GraphStore) -> Path | None:
    return None if store.path is None or store.remote is not None else store.path / FOLDER


def _key(graph: ox.NamedNode) -> str:
    return hashlib.sha256(graph.value.encode("utf-8")).hexdigest()[:32]


def keep(store: GraphStore, graph: ox.NamedNode, paths: Iterable[Path], content_hash: str) -> None:
    """Keep ``paths`` (the files loaded into ``graph``, moved, not copied) as the graph's files,
    fsynced, before the graph is published. Nothing for a store in memory or on a server."""
    root = _root(store)
    if root is None:
        return
    files = list(paths)
    root.mkdir(exist_ok=True)
    key = _key(graph)
    tmp = root / f".tmp-{key}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    sizes = []
    for i, path in enumerate(files):
        moved = tmp / f"part-{i:05d}.nt"
        os.replace(path, moved)  # the import's folder is in the store folder: same file system
        with open(moved, "rb") as fh:
            os.fsync(fh.fileno())
        sizes.append(moved.stat().st_size)
    meta = {"graph": graph.value, "content_hash": content_hash, "sizes": sizes}
    with open(tmp / _META, "w", encoding="utf-8") as fh:
        json.dump(meta, fh)
        fh.flush()
        os.fsync(fh.fileno())
    target = root / key
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    fsync_dir(root)


def fsync_dir(path: Path) -> None:
    """Make a rename into ``path`` durable: the new name is on disk once this returns."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _owner_hash(store: GraphStore, graph: ox.NamedNode) -> str | None:
    """The content hash the catalog gives the owner of ``graph``: the live benchmark whose
    generation it is, or the kept version whose graph it is (None: no owner, or edited)."""
    o = store.oxigraph
    for link in (GRAPH, _VERSION_GRAPH):
        for q in o.quads_for_pattern(None, ox.NamedNode(link), graph, CATALOG_GRAPH):
            found = store.catalog.value(q.subject.value, CONTENT_HASH) if isinstance(q.subject, ox.NamedNode) else None
            if found is not None:
                return found
    return None


def files(store: GraphStore, graph: ox.NamedNode | ox.BlankNode | ox.DefaultGraph) -> list[Path] | None:
    """The files holding exactly what ``graph`` holds, or None when there are none that can be
    trusted (none kept, cut short, or the graph changed since: its owner's hash differs)."""
    root = _root(store)
    if root is None or not isinstance(graph, ox.NamedNode):
        return None
    folder = root / _key(graph)
    meta = _meta(folder)
    if meta is None or meta.get("graph") != graph.value:
        return None
    parts = [folder / f"part-{i:05d}.nt" for i in range(len(meta["sizes"]))]
    for part, size in zip(parts, meta["sizes"], strict=True):
        if not part.is_file() or part.stat().st_size != size:
            return None
    if _owner_hash(store, graph) != meta.get("content_hash"):
        return None
    return parts


def _meta(folder: Path) -> dict | None:  # type: ignore[type-arg]
    try:
        found = json.loads((folder / _META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and isinstance(found.get("sizes"), list) else None


def forget(store: GraphStore, graph: ox.NamedNode) -> None:
    """Remove ``graph``'s files (the graph was dropped, or loaded into the version archive)."""
    root = _root(store)
    if root is not None:
        shutil.rmtree(root / _key(graph), ignore_errors=True)


def forget_unowned(store: GraphStore, graph: ox.NamedNode) -> None:
    """Remove ``graph``'s files unless the catalog still names the graph (a kept version's files
    stay when its generation leaves the store)."""
    if _owner_hash(store, graph) is None:
        forget(store, graph)


def forget_all(store: GraphStore) -> None:
    """Remove every generation's files (a rebase rewrites every IRI: they would be stale)."""
    root = _root(store)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


def tidy(store: GraphStore) -> None:
    """On open: remove folders a crash left half-written, and those no graph owns any more
    (dropped, replaced without keeping a version, or edited since their import)."""
    root = _root(store)
    if root is None or not root.is_dir():
        return
    for folder in root.iterdir():
        meta = _meta(folder) if not folder.name.startswith(".tmp-") else None
        if meta is None or files(store, ox.NamedNode(meta["graph"])) is None:
            shutil.rmtree(folder, ignore_errors=True)


def load(target: ox.Store, graph: ox.NamedNode, parts: Iterable[Path]) -> None:
    """Bulk-load a graph's files into ``target`` (the store being rebuilt, or the archive)."""
    for part in parts:
        # Our own N-Triples, loaded once already: lenient skips validating them again.
        target.bulk_load(path=str(part), format=ox.RdfFormat.N_TRIPLES, to_graph=graph, lenient=True)
