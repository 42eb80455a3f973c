"""Verification: answering and judge models behind one provider interface, template and callable
code in a sandbox, and the pipeline that turns (question, answerer, judge, replicate) tasks into
results written to the store as they complete. See docs/verification.md."""
