"""passes: see DESIGN.md."""
