"""Helpers the tests share: servers they start, a fake LLM server, Karenina databases, the W3C protocol replayer."""
