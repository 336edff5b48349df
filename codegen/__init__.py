"""codegen: see DESIGN.md."""
