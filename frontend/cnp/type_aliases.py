"""jax.numpy's other names of scalar types (numpy's aliases), and the numpy types it re-exports."""
import numpy as np

from .dtypes_api import bool_, complex64, complex128, float32, float64

__all__ = ["bool", "single", "double", "csingle", "cdouble", "float_", "complex_", "character", "flexible",
           "object_", "ComplexWarning"]

bool = bool_  # noqa: A001 - jnp.bool, as numpy 2 names it
single, double = float32, float64
csingle, cdouble = complex64, complex128
float_, complex_ = float64, complex128  # the defaults with 64-bit types enabled

# Abstract types and the warning class, numpy's own as in jax.numpy.
character, flexible, object_ = np.character, np.flexible, np.object_
ComplexWarning = np.exceptions.ComplexWarning
