"""Linked data over the store: which stored resource a request path names, what describes it,
and the documents that describe the whole service (SPARQL service description, VoID), apart from
any web framework."""

from ._site import Located, Site, alternates

__all__ = ["Located", "Site", "alternates"]
