"""What kevo's Python tools share: JSON-safe values (installed next to them).

jsonable(x): NaN -> null, infinities -> "inf"/"-inf" (JSON has neither),
numpy scalars -> Python numbers, dict keys -> strings, recursively.
"""
import math


def jsonable(x):
    if isinstance(x, float):
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    # numpy scalars, without importing numpy here
    if type(x).__module__ == "numpy":
        if hasattr(x, "dtype") and x.dtype.kind == "f":
            return jsonable(float(x))
        if hasattr(x, "dtype") and x.dtype.kind in "iu":
            return int(x)
        if hasattr(x, "dtype") and x.dtype.kind == "b":
            return bool(x)
    return x
