"""libs: see DESIGN.md."""
