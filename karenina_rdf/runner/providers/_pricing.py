"""What a call cost, from a price table: USD per million input and output tokens.

The table ships as ``prices.json`` beside this module (list prices read from the vendors'
pricing pages, with the date in ``as_of``); a user file named by ``$KARENINA_RDF_PRICES`` in
the same shape adds models or overrides them. Models match by exact name only, dated
snapshots listed one by one: snapshots of one family have had different prices (gpt-4o's
first snapshot cost twice its later ones), so an unknown name is ``None``, never a guess.
Prompt-caching and batch discounts are not modelled.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from karenina_rdf._errors import VerificationError

from ._base import Usage

PRICES_ENV = "KARENINA_RDF_PRICES"


class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class PriceTable(BaseModel):
    """A prices file: ``{"models": {name: {"input", "output"}}}`` plus notes on where from."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    source: str = Field(default="", alias="_source")
    as_of: str = ""
    unit: str = "USD per million tokens"
    models: dict[str, Price]


def _parse(text: str, where: str) -> PriceTable:
    try:
        return PriceTable.model_validate(json.loads(text))
    except (ValueError, ValidationError) as err:
        raise VerificationError(
            f"{where}: not a price table ({err}); expected "
            '{"models": {"MODEL": {"input": USD_PER_MTOK, "output": USD_PER_MTOK}}}'
        ) from None


@lru_cache(maxsize=1)
def shipped_prices() -> PriceTable:
    """The table that comes with karenina-rdf."""
    text = resources.files("karenina_rdf.runner.providers").joinpath("prices.json").read_text(encoding="utf-8")
    return _parse(text, "karenina_rdf/runner/providers/prices.json")


@lru_cache(maxsize=8)
def _user_prices(path: str, mtime_ns: int) -> PriceTable:  # mtime_ns: an edited file is read again
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise VerificationError(f"cannot read the price file {path} (from ${PRICES_ENV}): {err}") from None
    return _parse(text, path)


def prices() -> dict[str, Price]:
    """The shipped table with the user's file (``$KARENINA_RDF_PRICES``) laid over it."""
    table = dict(shipped_prices().models)
    user = os.environ.get(PRICES_ENV)
    if user:
        try:
            mtime = Path(user).stat().st_mtime_ns
        except OSError as err:
            raise VerificationError(f"cannot read the price file {user} (from ${PRICES_ENV}): {err}") from None
        table.update(_user_prices(user, mtime).models)
    return table


def cost_usd(model: str, usage: Usage) -> float | None:
    """Cost of ``usage`` on ``model`` in USD, or None when the model has no known price."""
    price = prices().get(model)
    if price is None:
        return None
    return (usage.input_tokens * price.input + usage.output_tokens * price.output) / 1_000_000
