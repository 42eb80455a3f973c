"""Exporting a benchmark from its generation's files (``store._files``) instead of its graph.

Reading a quad back out of pyoxigraph's RocksDB costs about 6 µs of CPU (term decoding through
its string table); the export of a 20k benchmark spent 7 s of its 12-14 s there, against
Karenina's whole ``save`` at 3.5 s. The N-Triples files the import bulk-loaded hold the same
triples, and pyoxigraph's Rust parser reads them back at about 0.9 µs a triple, Python objects
included (docs/performance.md § Export from the generation's files). They are used only while
``_files.files`` trusts them: the catalog gives the graph's owner the content hash of the import
that wrote them, which every edit in place forgets. Otherwise the export reads the graph.

The mapper (``checkpoint._map``) writes a checkpoint's triples in its order: the benchmark's own
first, then each item's triples (the item, its question and every node under them) in one run,
then the benchmark's trailing ones (scenarios, properties, empty lists). So the items are read
in one streaming pass, one item held at a time, as the graph export holds them; the header,
which the checkpoint writes around the items, is read first from the lines before the first item
and after the last (read backwards from the end), picked by their subject's text. Anything that
breaks that layout (an item's triples in two runs, items out of position order, a header triple
between items, other items than the graph lists) raises :class:`OutOfStep`, and the caller
exports from the graph instead.

The result is the same bytes either way (tests/store/test_export_from_files.py compares both
paths for every corpus checkpoint): an export reads each node's values by predicate, takes single
values (``first``), orders lists by ``karenina:position`` or by a recorded order, and turns
literals into Python values, so neither the engine's order of a node's triples nor its canonical
lexical forms (``"1.0"^^xsd:double`` read back as ``"1"``) reach the output.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Self

import pyoxigraph as ox

from karenina_rdf._progress import QUIET_TASK, Task
from karenina_rdf.checkpoint import item_json
from karenina_rdf.rdf import DATA_FEED_ELEMENT, KAR, count_items

from . import _files

if TYPE_CHECKING:
    from ._store import GraphStore

Index = dict[str, dict[str, list[Any]]]

_ITEM_JSON = KAR.itemJson
_POSITION = KAR.position
_ITEM_KINDS = frozenset(("items", "questions", "shadowed"))


class OutOfStep(Exception):
    """The files are not laid out as the mapper writes them: export from the graph."""


def _add(index: Index, s: str, p: str, o: Any) -> None:
    preds = index.get(s)
    if preds is None:
        index[s] = {p: [o]}
        return
    objects = preds.get(p)
    if objects is None:
        preds[p] = [o]
    elif o not in objects:  # a graph is a set: a triple written twice is one triple
        objects.append(o)


class FileSource:
    """One benchmark's generation files, opened for an export (a context manager)."""

    def __init__(self, bench: str, parts: list[Path], items: int) -> None:
        self.bench = bench
        self.items = items  # the benchmark's items, as its graph counts them
        self._header_triples = -1  # how many header_index() found
        self._last = -1  # the position of the last item read
        # Opened now: a drop or re-import in another thread of this process removes the folder,
        # and open files stay readable (POSIX), so such a race cannot cut the export short.
        self._handles: list[IO[bytes]] = []
        try:
            for part in parts:
                self._handles.append(open(part, "rb"))  # noqa: SIM115 - closed by close()
        except BaseException:
            self.close()
            raise
        prefix = ("<" + bench).encode("utf-8")
        self._own, self._under = prefix + b"> ", prefix + b"/"
        self._links = (self._own + f"<{DATA_FEED_ELEMENT}> ".encode(), self._own + KAR.shadowedItem.nt.encode() + b" ")
        self._skip = tuple(self._under + kind.encode() + b"/" for kind in sorted(_ITEM_KINDS))

    @classmethod
    def open(cls, store: GraphStore, bench: str, graph: ox.NamedNode) -> FileSource | None:
        """The benchmark's files when they can be trusted to hold exactly its graph, else None."""
        parts = _files.files(store, graph)
        if parts is None:
            return None
        try:
            return cls(bench, parts, count_items(store.oxigraph, graph, bench))
        except OSError:  # removed meanwhile: the graph is still there
            return None

    def close(self) -> None:
        for fh in self._handles:
            fh.close()
        self._handles.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the header ------------------------------------------------------------------------
    def _kind(self, line: bytes) -> bool | None:
        """True: a triple of the header; False: an item's (or a link to one); None: neither."""
        if line.startswith(self._own):
            return not line.startswith(self._links)
        if line.startswith(self._under):
            return not line.startswith(self._skip)
        return None

    def header_index(self) -> Index:
        """Subject → predicate → objects of the benchmark node and the nodes under it that are
        not its items (what ``GraphStore._header_index`` reads from the graph), without the
        links to its items (an export gives the items apart).

        The mapper writes them before the first item and after the last, so only the lines
        around the items are read here; :meth:`item_documents` counts the header's triples it
        passes over and raises :class:`OutOfStep` when their number differs from what was found here."""
        kept: list[bytes] = []
        reached_items = False
        for fh in self._handles:
            fh.seek(0)
            for line in fh:
                kind = self._kind(line)
                if kind is False:
                    reached_items = True
                    break
                if kind:
                    kept.append(line)
            if reached_items:
                break
        if reached_items:  # and after the last item, read backwards from the end
            tail: list[bytes] = []
            for line in self._backwards():
                kind = self._kind(line)
                if kind is False:
                    break
                if kind:
                    tail.append(line)
            kept.extend(reversed(tail))
        index: Index = {}
        for s, p, o, _ in ox.parse(b"".join(kept), ox.RdfFormat.N_TRIPLES, lenient=True):
            _add(index, s.value, p.value, o)
        if self.bench not in index:  # the IRI is written otherwise than expected
            raise OutOfStep(f"no triple of {self.bench} found by its text")
        self._header_triples = len(kept)
        return index

    _BLOCK = 1 << 16

    def _backwards(self) -> Iterator[bytes]:
        """The lines of the files, last first (each with its newline)."""
        for fh in reversed(self._handles):
            end = fh.seek(0, 2)
            rest = b""  # the start of a line whose beginning is in the block before
            while end > 0:
                start = max(0, end - self._BLOCK)
                fh.seek(start)
                block = fh.read(end - start) + rest
                end = start
                lines = block.split(b"\n")
                # The last piece is empty (a line's end) or a line cut by the previous file.
                rest = lines[0]
                for line in reversed(lines[1:-1]):
                    yield line + b"\n"
                if lines[-1]:
                    raise OutOfStep("a file does not end with a line's end")
            if rest:
                yield rest + b"\n"

    # -- the items -------------------------------------------------------------------------
    def item_documents(self, task: Task = QUIET_TASK) -> Iterator[dict[str, Any]]:
        """Each item as the checkpoint writes it, in the checkpoint's order (items shadowed by a
        later one with the same question id where they were), one item in memory at a time.
        Call :meth:`header_index` first."""
        if self._header_triples < 0:
            raise OutOfStep("the header was not read")
        bench = self.bench
        under = bench + "/"
        cut = len(under)
        links = {DATA_FEED_ELEMENT, KAR.shadowedItem}
        task.set_total(self.items)
        seen: set[tuple[bool, str]] = set()
        current: tuple[bool, str] | None = None  # (shadowed?, id segment) of the run being read
        index: Index = {}
        preds: dict[str, list[Any]] | None = None  # the node being read; None: not an item's
        header = 0  # the header's triples passed over
        last = ""
        for quad in self._triples():
            # Attributes: a fifth faster than unpacking the quad. Our files hold no quoted triple.
            sv = quad.subject.value  # type: ignore[union-attr]
            if sv != last:  # a new node (a node's triples come one after another: this is rare)
                last = sv
                key: tuple[bool, str] | None = None
                in_header = sv == bench
                if sv.startswith(under):
                    kind, _, rest = sv[cut:].partition("/")
                    if rest and kind in _ITEM_KINDS:
                        key = (kind == "shadowed", rest.split("/", 1)[0])
                    else:
                        in_header = True
                if key is None:
                    preds = None
                else:
                    if key != current:
                        if current is not None:
                            yield self._document(current, index)
                            if not current[0]:
                                task.advance()
                        if key in seen:
                            raise OutOfStep(f"the triples of {sv} are not in one run")
                        seen.add(key)
                        current, index = key, {}
                    preds = index.get(sv)
                    if preds is None:
                        preds = index[sv] = {}
            if preds is None:
                if in_header and (sv != bench or quad.predicate.value not in links):
                    header += 1
                continue
            pv = quad.predicate.value
            objects = preds.get(pv)
            if objects is None:
                preds[pv] = [quad.object]
            elif (o := quad.object) not in objects:  # a graph is a set: a triple written twice is one
                objects.append(o)
        if current is not None:
            yield self._document(current, index)
            if not current[0]:
                task.advance()
        if header != self._header_triples:
            raise OutOfStep(f"{header} triples of the header, {self._header_triples} around the items")
        if sum(1 for shadowed, _ in seen if not shadowed) != self.items:
            raise OutOfStep("the items found are not the items the benchmark lists")
        task.done()

    def _triples(self) -> Iterator[ox.Quad]:
        for fh in self._handles:
            fh.seek(0)
            yield from ox.parse(fh, ox.RdfFormat.N_TRIPLES, lenient=True)

    def _document(self, key: tuple[bool, str], index: Index) -> dict[str, Any]:
        shadowed, segment = key
        node = f"{self.bench}/{'shadowed' if shadowed else 'items'}/{segment}"
        # The graph export orders items (and shadowed ones among them) by karenina:position;
        # the files must give them in that order already, or they are not what the mapper wrote.
        position = index.get(node, {}).get(_POSITION)
        at = int(position[0].value) if position else -1
        if at <= self._last:
            raise OutOfStep(f"{node} is out of the checkpoint's order")
        self._last = at
        if shadowed:
            # Kept whole as JSON by the mapper (checkpoint._map shadowed), written back as it was.
            text = index[node].get(_ITEM_JSON)
            if not text:
                raise OutOfStep(f"{node} has no JSON")
            loaded: dict[str, Any] = json.loads(text[0].value)
            return loaded
        return item_json(index, node)
