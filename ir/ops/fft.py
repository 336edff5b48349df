"""fft: complex and real fast Fourier transforms over the trailing dimensions, as lax.fft and XLA."""
import numpy as np

from ..opdef import define, require, require_dtype, set_rules
from .rules import batch_elementwise, linear
from ..types import COMPLEX_OF, COMPLEX_PART, COMPLEXES, NUMPY_DTYPES, type_of_array

FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")


def fft_infer(types, attrs, regions):
    (x,) = types
    fft_type, lengths = attrs["fft_type"], tuple(attrs["fft_length"])
    require(fft_type in FFT_TYPES, f"fft: fft_type {fft_type!r} is not one of {', '.join(FFT_TYPES)}")
    require(1 <= len(lengths) <= min(3, x.ndim) and all(n >= 1 for n in lengths),
            f"fft: fft_length {list(lengths)} must hold 1 to 3 positive sizes, at most the rank of {x}")
    trailing = x.shape[x.ndim - len(lengths):]
    if fft_type == "RFFT":
        require_dtype("fft RFFT", x, tuple(COMPLEX_OF))
        expected = lengths
        result = (COMPLEX_OF[x.dtype], lengths[-1] // 2 + 1)
    else:
        require_dtype(f"fft {fft_type}", x, COMPLEXES)
        if fft_type == "IRFFT":
            expected = lengths[:-1] + (lengths[-1] // 2 + 1,)
            result = (COMPLEX_PART[x.dtype], lengths[-1])
        else:
            expected = lengths
            result = (x.dtype, lengths[-1])
    require(trailing == expected,
            f"fft {fft_type}: operand {x} must end in dimensions {list(expected)} for fft_length {list(lengths)}")
    dtype, last = result
    return [x.with_dtype(dtype).with_shape(x.shape[:-1] + (last,))]


NUMPY_FFTS = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn, "IRFFT": np.fft.irfftn}


def fft(x, *, fft_type, fft_length):
    """Computed in double precision, then rounded once to the result dtype."""
    axes = tuple(range(x.ndim - len(fft_length), x.ndim))
    wide = x.astype(np.float64 if fft_type == "RFFT" else np.complex128)
    result = NUMPY_FFTS[fft_type](wide, s=fft_length, axes=axes)
    (result_type,) = fft_infer([type_of_array(x)], {"fft_type": fft_type, "fft_length": fft_length}, [])
    return result.astype(NUMPY_DTYPES[result_type.dtype])


define("fft", infer=fft_infer, reference=fft, attrs={"fft_type": "str", "fft_length": "ints"}, num_operands=1,
       doc="FFT and IFFT (normalized by 1/n) of complex data; RFFT real -> complex, last dimension n//2+1; "
           "IRFFT complex -> real, last dimension fft_length[-1]; over the trailing len(fft_length) dimensions")


def fft_transpose(b, op, primals, ct):
    """FFT and IFFT are symmetric matrices: their own transposes (no conjugation, as JAX's). RFFT is
    the FFT of the real operand made complex, cut to n//2+1: its transpose pads the cotangent back
    to n, transforms it and keeps the real part. IRFFT's is RFFT's transform of the cotangent, the
    bins that stand for two (all but the first and, for even n, the last) doubled, scaled by 1/n and
    conjugated (JAX's convention)."""
    fft_type, lengths = op.attrs["fft_type"], tuple(op.attrs["fft_length"])
    if fft_type in ("FFT", "IFFT"):
        return [b.op("fft", ct, **op.attrs)]
    if fft_type == "RFFT":
        n, kept = lengths[-1], ct.type.shape[-1]
        zero = b.full((), 0, ct.type.dtype)
        full = b.op("pad", ct, zero, low=(0,) * ct.type.ndim, high=(0,) * (ct.type.ndim - 1) + (n - kept,),
                    interior=(0,) * ct.type.ndim)
        return [b.op("real", b.op("fft", full, fft_type="FFT", fft_length=lengths))]
    transformed = b.op("fft", ct, fft_type="RFFT", fft_length=lengths)
    bins = transformed.type.shape[-1]
    doubled = np.full(bins, 2.0)
    doubled[0] = 1.0
    if lengths[-1] % 2 == 0:
        doubled[-1] = 1.0
    weights = b.op("constant", value=(doubled / np.prod(lengths)).astype(NUMPY_DTYPES[transformed.type.dtype]))
    scaled = b.mul(transformed, b.broadcast(weights, transformed.type.shape, (transformed.type.ndim - 1,)))
    return [b.op("conj", scaled)]


linear("fft", fft_transpose)
set_rules("fft", batch=batch_elementwise)
