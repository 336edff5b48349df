"""`cdnajit.experimental`, as jax.experimental's functions that cdnajit has: io_callback."""
from .frontend.transforms.api import io_callback

__all__ = ["io_callback"]
