"""Generates docs/queries.md from the headers of ``queries/*.rq`` (a test keeps it in sync).

python -m karenina_rdf.sparql._docs > docs/queries.md
"""

from __future__ import annotations

import sys

from karenina_rdf.rdf import PREFIXES

from ._named import TYPES, named_queries

_INTRO = """\
# Named queries

Generated from the headers of `queries/*.rq` by `python -m karenina_rdf.sparql._docs`; a test
fails when this page and the files disagree.

Run one with `karenina-rdf query NAME --param NAME=VALUE … [--format table|json|csv|tsv|xml]`
(CONSTRUCT and DESCRIBE queries: `--format turtle|ntriples|jsonld|rdfxml`), from Python with
`store.query("NAME", name=value, …)`, and list them with `karenina-rdf queries`. Any `.rq` file
with the same header runs the same way: `karenina-rdf query path/to/own.rq --param …`.

**Header.** The file's first comment lines: `# title:`, `# description:` (continued on indented
comment lines) and one `# param: NAME TYPE [= DEFAULT | optional] [-- description]` per
parameter, TYPE one of {types}. A parameter with neither a default nor `optional` is required.

**Binding.** A value becomes an RDF term (a typed literal, or an IRI for `iri`) made by
pyoxigraph, placed in a `VALUES` block that opens the query's WHERE group, so it is data and
never SPARQL text: `--param 'keyword=x" }} DROP ALL #'` looks for that odd keyword and finds
nothing. An optional parameter left out stays unbound (`BOUND(?name)` tells). Parameters must be
used in the WHERE group itself, not only inside a subquery, which does not see outer bindings.

**Full-text search.** A `search` parameter NAME is a full-text query (words, all of them;
`word*` a prefix; `"a phrase"`; `OR` between two; case and accents ignored): `?NAME` is bound to
its text, and a second `VALUES` block binds `?NAME_hit` and `?NAME_score` to each question the
store's full-text index finds (question text, reference answer, keywords, template code) and its
bm25 score, higher is better; join on `?NAME_hit` (see `search`). In any query,
`karenina:textScore(?q, "query")` is that score for the question `?q` (unbound when it does not
match) and `karenina:textMatch(?q, "query")` a boolean: they work everywhere, the endpoint's
worker processes included, but are called once per row (seconds over every question of a
100k-question store), where a `search` parameter joins only the hits.

Every query runs over the live benchmarks and verification runs (the union of their graphs, plus
the catalog and the failure vocabulary) with the prefixes {prefixes} declared.

**Verification results** (docs/data-model.md §9). The pass rate is Karenina's: passed / verified,
the mean of the non-null `verify_result` values (`karenina:verifyResult`); a result without a
verdict (failed before one, or rubric only) counts in `results` but not in the rate. The union
default graph yields a triple once per graph that holds it, so these queries take model labels
from a `SELECT DISTINCT` subquery: a model described in more than one graph still counts each
result once. A model parameter (`model`, `judge`) matches a model's label (`langchain:gpt-4o`),
its model name or its canonical key.
"""


def render() -> str:
    prefixes = ", ".join(f"`{p}:`" for p in PREFIXES)
    parts = [_INTRO.format(types=", ".join(f"`{t}`" for t in TYPES), prefixes=prefixes)]
    queries = named_queries()
    parts.append("| query | title | parameters |\n|---|---|---|")
    for name, q in queries.items():
        params = ", ".join(f"`{p.name}`" for p in q.params) or "—"
        parts.append(f"| [`{name}`](#{name}) | {q.title} | {params} |")
    for name, q in queries.items():
        parts.append(f"\n## {name}\n\n**{q.title}.** {q.description}\n")
        if q.params:
            parts.append("| parameter | type | required | default | description |\n|---|---|---|---|---|")
            for p in q.params:
                default = f"`{p.default}`" if p.default is not None else ""
                parts.append(
                    f"| `{p.name}` | {p.type} | {'yes' if p.required else 'no'} | {default} | {p.description} |"
                )
            parts.append("")
        example = " ".join(f"--param {p.name}=…" for p in q.params if p.required)
        parts.append(f"`karenina-rdf query {name}{' ' + example if example else ''}` · file `queries/{name}.rq`")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
