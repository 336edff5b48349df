"""cdnajit.lax: jax.lax's names and semantics."""
__all__ = []
