"""Points to Hilbert indices and back (seed 003's locality preserving map T).

A point (x, y) in a box [x0, x1] x [y0, y1] falls in the integer cell (floor((x - x0) / (x1 -
x0) 2^L), likewise y), clamped to [0, 2^L - 1]; the cell's index along the Hilbert curve of
order L is an integer h in [0, 4^L). The curve is numpy-hilbert-curve's (`hilbert.encode`,
vectorised; the board's integer version, firmware/zealfw/hilbert.py, is checked against it).
A prefix of the curve is the curve of a coarser grid: h >> 2(L - l) is the index at order l
of the cell holding the point, which the density comparison uses. Back: an index decodes to its
cell, and the cell to its centre.

Boxes: lat/lon points use x = longitude in [-180, 180] and y = latitude in [-90, 90]; x/y
points the box given (or the data's own, which is then not private: the caller says so).
"""
from dataclasses import dataclass

from ...errors import ZealError

ORDER = 16          # 2^16 cells a side: 0.0055 degrees of longitude (about 600 m at the equator)
ORDER_MAX = 31      # 4^31 < 2^63 fits the library's integers


def _lib():
    try:
        import hilbert
    except ImportError:
        raise ZealError("locations need numpy-hilbert-curve: pip install 'zeal-mcu[locate]'") \
            from None
    return hilbert


def need() -> None:
    """One line naming the extra when the location tools' libraries are missing: the curve
    here, scipy's isotonic regression for the reconstruction and the choice of k."""
    _lib()
    try:
        import scipy.optimize as opt
    except ImportError:
        opt = None
    if not hasattr(opt, "isotonic_regression"):
        raise ZealError("locations need scipy >= 1.12: pip install 'zeal-mcu[locate]'")


@dataclass(frozen=True)
class Box:
    """The publishing box and the grid's order."""
    x0: float
    x1: float
    y0: float
    y1: float
    order: int = ORDER

    def __post_init__(self):
        if not (self.x0 < self.x1 and self.y0 < self.y1):
            raise ZealError("the box must have x0 < x1 and y0 < y1")
        if not (isinstance(self.order, int) and 1 <= self.order <= ORDER_MAX):
            raise ZealError("the Hilbert order must be an integer in [1, %d]" % ORDER_MAX)

    @property
    def side(self) -> int:
        return 1 << self.order

    @property
    def cells(self) -> int:
        """4^L: the indices are 0 .. cells - 1."""
        return 1 << (2 * self.order)

    def cell(self, x, y):
        """The integer cells (numpy arrays) of points x, y (clamped into the box)."""
        import numpy as np
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        cx = np.floor((x - self.x0) / (self.x1 - self.x0) * self.side)
        cy = np.floor((y - self.y0) / (self.y1 - self.y0) * self.side)
        top = self.side - 1
        return (np.clip(cx, 0, top).astype(np.int64), np.clip(cy, 0, top).astype(np.int64))

    def index(self, x, y):
        """Hilbert indices (numpy uint64) of points x, y."""
        import numpy as np
        cx, cy = self.cell(x, y)
        return _lib().encode(np.stack([cx, cy], axis=1), 2, self.order).astype(np.uint64)

    def centre(self, h):
        """(x, y) arrays: the centres of the cells of Hilbert indices h."""
        import numpy as np
        h = np.asarray(h, dtype=np.uint64)
        locs = _lib().decode(h, 2, self.order)
        size_x = (self.x1 - self.x0) / self.side
        size_y = (self.y1 - self.y0) / self.side
        return (self.x0 + (locs[:, 0] + 0.5) * size_x, self.y0 + (locs[:, 1] + 0.5) * size_y)


LATLON = dict(x0=-180.0, x1=180.0, y0=-90.0, y1=90.0)
