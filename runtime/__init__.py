"""runtime: see DESIGN.md."""
