"""Python operators, array methods and numpy dispatch (__array_ufunc__, __array_function__) on Tracer."""
