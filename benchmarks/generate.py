"""Deterministic generator of realistic synthetic Karenina checkpoints (benchmark input data).

Output mimics Karenina's own writer byte for byte in form (canonical context C1, §3.9 key order,
indent=2, ensure_ascii=False, no trailing newline), so the files exercise exactly the code paths a
real checkpoint would. Same arguments -> byte-identical output: no clock, no global random state.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import string
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

JSON = dict[str, Any]

GENES = (
    "TP53|BRCA1|BRCA2|EGFR|KRAS|BRAF|PIK3CA|PTEN|MYC|ALK|ERBB2|CDKN2A|RB1|APC|VHL|NF1|IDH1|"
    "IDH2|JAK2|FLT3|NPM1|KIT|PDGFRA|MET|RET|ROS1|NTRK1|ATM|CHEK2|PALB2|MLH1|MSH2|SMAD4|"
    "CTNNB1|NOTCH1|FBXW7|ARID1A|KMT2D|TERT|NKX2-1"
).split("|")
DRUGS = (
    "imatinib|gefitinib|erlotinib|osimertinib|trastuzumab|pembrolizumab|nivolumab|olaparib|"
    "vemurafenib|dabrafenib|crizotinib|alectinib|lorlatinib|ruxolitinib|midostaurin|sotorasib|"
    "palbociclib|everolimus|bevacizumab|cetuximab|rituximab|ibrutinib|venetoclax|"
    "lenalidomide|bortezomib|tamoxifen|letrozole|metformin|sirolimus|tofacitinib"
).split("|")
# Non-ASCII names on purpose: they exercise ensure_ascii=False and Unicode lowering in the ids.
DISEASES = (
    "non-small cell lung cancer|chronic myeloid leukaemia|acute myeloid leukaemia|melanoma|"
    "glioblastoma|colorectal cancer|triple-negative breast cancer|ovarian cancer|"
    "pancreatic adenocarcinoma|hepatocellular carcinoma|multiple myeloma|Hodgkin lymphoma|"
    "diffuse large B-cell lymphoma|prostate cancer|neuroblastoma|medulloblastoma|"
    "gastrointestinal stromal tumour|renal cell carcinoma|thyroid carcinoma|Sjögren syndrome|"
    "Ménière disease|Crohn disease|rheumatoid arthritis|type 2 diabetes|Alzheimer disease|"
    "Parkinson disease|cystic fibrosis|Huntington disease|polycythaemia vera|"
    "myelofibrosis"
).split("|")
ORGANISMS = (
    "Homo sapiens|Mus musculus|Rattus norvegicus|Danio rerio|Drosophila melanogaster|"
    "Caenorhabditis elegans|Saccharomyces cerevisiae|Gallus gallus|Xenopus laevis|"
    "Sus scrofa|Macaca mulatta|Oryzias latipes"
).split("|")
TISSUES = ("liver|lung|bone marrow|kidney|brain|colon|skin|pancreas|breast|heart|spleen|retina").split("|")
PATHWAYS = (
    "MAPK/ERK|PI3K/AKT/mTOR|JAK/STAT|Wnt/β-catenin|Notch|Hedgehog|NF-κB|p53|TGF-β|"
    "Hippo|DNA mismatch repair|homologous recombination"
).split("|")
VERDICTS = ["yes", "no", "only at high doses", "only in combination therapy"]
VOCAB = {
    "gene": GENES,
    "drug": DRUGS,
    "disease": DISEASES,
    "organism": ORGANISMS,
    "tissue": TISSUES,
    "pathway": PATHWAYS,
    "effect": VERDICTS,
}
# (question format, answer kind). Every pattern spans >= 36k slot combinations, so 100k questions
# stay distinct; past ~200k texts start to repeat and then take Karenina's -1, -2 id suffixes.
PATTERNS = [
    ("Which gene is most often mutated in {organism} {tissue} xenografts of {disease} that relapse on {drug}?", "gene"),
    (
        "In {organism}, which drug most potently blocks {pathway} signalling downstream of mutant "
        "{gene} in the {tissue}?",
        "drug",
    ),
    (
        "Which disease is most strongly associated with germline {gene} variants that disrupt "
        "{pathway} signalling in the {organism} {tissue}?",
        "disease",
    ),
    ("Which pathway mediates acquired resistance to {drug} in {gene}-mutant {disease}?", "pathway"),
    ("Does {drug} reduce {gene} expression in {organism} {tissue} models of {disease}?", "effect"),
    ("Name the {organism} orthologue of human {gene} that acts in the {pathway} pathway in the {tissue}.", "gene"),
]
SLOTS = [[f for _, f, _, _ in string.Formatter().parse(fmt) if f] for fmt, _ in PATTERNS]
KIND_DESC = {
    "gene": "Official HGNC symbol of the gene named as the answer",
    "drug": "Generic (INN) name of the drug named as the answer",
    "disease": "Name of the disease given as the answer",
    "pathway": "Name of the signalling pathway given as the answer",
    "effect": "Direction of the effect stated in the response",
}
RATIONALES = [
    "reported in several independent cohorts",
    "supported by CRISPR knockout screens",
    "consistent with the ClinVar annotation",
    "per current ESMO guidelines",
    "shown in patient-derived xenografts",
    "based on a 2023 meta-analysis",
]
KEYWORDS = [
    "oncology",
    "pharmacology",
    "genetics",
    "model organisms",
    "signalling",
    "drug resistance",
    "clinical",
    "molecular biology",
    "rare disease",
    "biomarkers",
]
# JSON-encoded with Python defaults (ensure_ascii=True) exactly as Karenina writes `author` (§4).
AUTHORS = [
    json.dumps({"name": n, "email": f"{n.split()[0].lower()}@example.org"})
    for n in [
        "Ana Gómez",
        "Jürgen Weiß",
        "Chloé Dubois",
        "Søren Madsen",
        "Priya Raman",
        "Kenji Watanabe",
        "Olusegun Adeyemi",
        "María José Pérez",
    ]
]
LITERAL_CLASSES = [
    {"hedged": "Uses hedging words", "assertive": "States the answer plainly"},
    {"hedged": "Uses hedging words", "neutral": "Neither hedged nor emphatic", "emphatic": "Stresses certainty"},
    {
        "refuses": "Declines to answer",
        "hedged": "Uses hedging words",
        "plain": "States it plainly",
        "emphatic": "Stresses certainty",
    },
]
BASE_DATE = datetime(2026, 1, 15, 9, 30)


def _pv(name: str, value: Any = None) -> JSON:
    # Karenina encodes a null value by omitting the key, not as "value": null (§3.7).
    return (
        {"@type": "PropertyValue", "name": name}
        if value is None
        else {"@type": "PropertyValue", "name": name, "value": value}
    )


def _rating(name: str, desc: str, best: float, worst: float, atype: str, props: list[JSON]) -> JSON:
    return {
        "@type": "Rating",
        "name": name,
        "description": desc,
        "bestRating": best,
        "worstRating": worst,
        "additionalType": f"karenina:{atype}",
        "additionalProperty": props,
    }


def _global_traits() -> list[JSON]:
    # Pool in set_global_rubric order (llm, regex, callable, metric; §6.10) so subsets keep it.
    return [
        _rating(
            "clarity",
            "Is the response clear and unambiguous?",
            1.0,
            0.0,
            "GlobalRubricTrait",
            [_pv("higher_is_better", True), _pv("min_score", 1), _pv("max_score", 5)],
        ),
        _rating(
            "depth",
            "Depth of the mechanistic explanation",
            10.0,
            1.0,
            "GlobalRubricTrait",
            [_pv("higher_is_better", True), _pv("summary", "Depth"), _pv("min_score", 1), _pv("max_score", 10)],
        ),
        _rating(
            "cites_pmid",
            "Mentions a PubMed identifier",
            1.0,
            0.0,
            "GlobalRegexTrait",
            [
                _pv("pattern", r"PMID:?\s*\d+"),
                _pv("case_sensitive", False),
                _pv("invert_result", False),
                _pv("higher_is_better", True),
            ],
        ),
        _rating(
            "no_apology",
            "Does not apologise",
            1.0,
            0.0,
            "GlobalRegexTrait",
            [
                _pv("pattern", r"\b(sorry|apologi[sz]e)\b"),
                _pv("case_sensitive", False),
                _pv("invert_result", True),
                _pv("higher_is_better", True),
            ],
        ),
        _rating(
            "entity_recall",
            "Recall of the expected biomedical entities",
            1.0,
            0.0,
            "GlobalMetricRubricTrait",
            [
                _pv("metrics", ["precision", "recall", "f1"]),
                _pv("repeated_extraction", True),
                _pv("evaluation_mode", "tp_only"),
                _pv("higher_is_better"),
                _pv(
                    "tp_instructions",
                    ["Names the expected gene, drug or disease", "States the direction of the effect"],
                ),
            ],
        ),
    ]


def _literal_trait(classes: dict[str, str]) -> JSON:
    top = len(classes) - 1
    return _rating(
        "answer_certainty",
        "How certain does the answer sound?",
        float(top),
        0.0,
        "QuestionSpecificLLMRubricTrait",
        [
            _pv("higher_is_better", True),
            _pv("min_score", 0),
            _pv("max_score", top),
            _pv("kind", "literal"),
            _pv("classes", dict(classes)),
        ],
    )


def question_id(text: str, taken: set[str]) -> str:
    """Karenina's generate_question_id (§7.1) plus its -1, -2 suffix on collision."""
    slug = text.lower().replace(" ", "-").replace("?", "").replace(".", "").replace(",", "")
    base = f"urn:uuid:question-{slug[:50]}-{hashlib.md5(text.encode()).hexdigest()[:8]}"
    qid, k = base, 0
    while qid in taken:
        k += 1
        qid = f"{base}-{k}"
    taken.add(qid)
    return qid


def _template(text: str, kind: str, answer: str, slot: str, slot_value: str) -> str:
    m = f"mentions_{slot}"
    return (
        f'class Answer(BaseAnswer):\n    """Answer template for: {text[:50]}..."""\n\n'
        f'    {kind}: str = Field(description="{KIND_DESC[kind]}")\n'
        f'    rationale: str = Field(description="One-sentence mechanistic rationale given")\n'
        f'    {m}: bool = Field(description="Whether the response names {slot_value}")\n\n'
        f"    def model_post_init(self, __context):\n"
        f'        self.correct = {{"{kind}": "{answer}", "{m}": True}}\n\n'
        f"    def verify(self) -> bool:\n"
        f'        answer_ok = self.{kind}.strip().lower() == self.correct["{kind}"].lower()\n'
        f'        return answer_ok and self.{m} == self.correct["{m}"]\n'
    )


def generate_checkpoint(n_questions: int, *, seed: int = 0, name: str | None = None) -> JSON:
    """Build a checkpoint dict in Karenina canonical form; deterministic in (n, seed, name)."""
    name = name or f"Synthetic biomedical benchmark ({n_questions} questions, seed {seed})"
    rng = random.Random(seed)
    # Per pattern, a multiplicative permutation of its slot space turns a running counter into
    # distinct, scattered combinations without remembering which ones were already used.
    spaces = [math.prod(len(VOCAB[s]) for s in slots) for slots in SLOTS]
    perms = []
    for size in spaces:
        a = rng.randrange(size // 3, size) | 1
        while math.gcd(a, size) != 1:
            a += 2
        perms.append((a, rng.randrange(size)))
    counters = [0] * len(PATTERNS)
    globals_ = _global_traits()
    ratings = [globals_[i] for i in sorted(rng.sample(range(len(globals_)), rng.randint(2, 4)))]
    classes = rng.choice(LITERAL_CLASSES)
    taken: set[str] = set()
    items: list[JSON] = []
    for i in range(n_questions):
        p = rng.randrange(len(PATTERNS))
        a, c = perms[p]
        code = (a * counters[p] + c) % spaces[p]
        counters[p] += 1
        values: dict[str, str] = {}
        for slot in SLOTS[p]:
            code, r = divmod(code, len(VOCAB[slot]))
            values[slot] = VOCAB[slot][r]
        text = PATTERNS[p][0].format(**values)
        kind = PATTERNS[p][1]
        answer = rng.choice(VOCAB[kind])
        slot = SLOTS[p][0]
        created = BASE_DATE + timedelta(seconds=3 * i, microseconds=(i * 7919) % 1_000_000)
        has_trait = i % 10 == 0
        # Adding a question trait is an edit made after creation, so those items get a later date.
        modified = created + timedelta(days=2, seconds=i) if has_trait else created
        props = [_pv("finished", rng.random() < 0.9)]
        if rng.random() < 0.3:
            props.append(_pv("author", rng.choice(AUTHORS)))
        props.append(_pv("custom_difficulty", rng.choice(("easy", "medium", "hard"))))
        question: JSON = {
            "@type": "Question",
            "text": text,
            "acceptedAnswer": {"@type": "Answer", "text": f"{answer} ({rng.choice(RATIONALES)})"},
            "hasPart": {
                "@type": "SoftwareSourceCode",
                "name": f"{text[:30]}... Answer Template",
                "text": _template(text, kind, answer, slot, values[slot]),
                "programmingLanguage": "Python",
            },
        }
        if has_trait:
            question["rating"] = [_literal_trait(classes)]
        question["additionalProperty"] = props
        question["keywords"] = rng.sample(KEYWORDS, rng.randint(1, 3))
        items.append(
            {
                "@type": "DataFeedItem",
                "@id": question_id(text, taken),
                "dateCreated": created.isoformat(),
                "dateModified": modified.isoformat(),
                "item": question,
            }
        )
    digest = int(hashlib.md5(f"{name}\x00{seed}".encode()).hexdigest(), 16)
    # Same shape as Karenina's default id (a float POSIX timestamp), but derived, not clocked.
    stamp = 1_767_225_600 + digest % 31_536_000 + (digest >> 64) % 1_000_000 / 1e6
    last = BASE_DATE + timedelta(seconds=3 * n_questions, days=3)
    return {
        "@context": {
            "@version": 1.1,
            "@vocab": "https://schema.org/",
            "karenina": "urn:karenina:vocab:",
            "dataFeedElement": {"@id": "dataFeedElement", "@container": "@set"},
            "item": {"@id": "item", "@type": "@id"},
            "acceptedAnswer": {"@id": "acceptedAnswer", "@type": "@id"},
            "rating": {"@id": "contentRating", "@container": "@set"},
            "additionalProperty": {"@id": "additionalProperty", "@container": "@set"},
            "hasPart": {"@id": "hasPart", "@container": "@set"},
            "keywords": {"@id": "keywords", "@container": "@set"},
        },
        "@type": "DataFeed",
        "@id": f"urn:uuid:karenina-checkpoint-{stamp}",
        "name": name,
        "description": "Synthetic biomedical questions generated for karenina_rdf benchmarks",
        "version": "1.0.0",
        "creator": "karenina_rdf benchmark generator",
        "dateCreated": BASE_DATE.isoformat(),
        "dateModified": last.isoformat(),
        "rating": ratings,
        "dataFeedElement": items,
        "additionalProperty": [
            _pv("benchmark_format_version", "3.0.0-jsonld"),
            _pv("domain", "biomedicine"),
            _pv("generator", {"tool": "benchmarks/generate.py", "seed": seed, "n_questions": n_questions}),
        ],
    }


def write_checkpoint(path: str | Path, n_questions: int, seed: int = 0, name: str | None = None) -> Path:
    """Write the checkpoint exactly as Karenina's save() serialises (§10 step 6)."""
    out = Path(path)
    text = json.dumps(generate_checkpoint(n_questions, seed=seed, name=name), indent=2, ensure_ascii=False)
    out.write_text(text, encoding="utf-8", newline="")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("n_questions", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default=None)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    out = write_checkpoint(args.out, args.n_questions, seed=args.seed, name=args.name)
    took = time.perf_counter() - start
    print(f"{out}: {args.n_questions} questions, {out.stat().st_size:,} bytes, {took:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
