"""Failure kinds of defects known and being fixed elsewhere, which the pytest tiers skip so that a
new defect stands out. TEMPORARY: delete each entry when its fix is merged (see
/work/notes/fuzz_findings.md for the repros)."""
EXCLUDED = (
)
