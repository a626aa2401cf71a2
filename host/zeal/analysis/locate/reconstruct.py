"""Reconstruction from a location release (seed 003, step B1): post-processing, no privacy
cost. Our choices where the seed is silent: the isotonic regression is scipy's least squares
(pool adjacent violators) on the noisy means s_i / (size_i 4^L), weighted by the group sizes
(the last group may be short); fitted values are clipped to [0, 1) and mapped to the index
floor(y 4^L), each repeated size_i times; points are the cells' centres."""
from ...errors import ZealError


def fitted(release):
    """The isotonic fit of the noisy group means, in [0, 1) (numpy array, one per group)."""
    import numpy as np
    try:
        from scipy.optimize import isotonic_regression
    except ImportError:
        raise ZealError("reconstruction needs scipy >= 1.12: pip install 'zeal-mcu[locate]'") \
            from None
    sizes = np.array(release.sizes, dtype=float)
    cells = float(release.box.cells)
    means = np.array([float(s) for s in release.sums]) / sizes / cells
    fit = isotonic_regression(means, weights=sizes, increasing=True).x
    return np.clip(fit, 0.0, 1.0 - 1.0 / cells)


def indices(release):
    """The n reconstructed Hilbert indices (numpy uint64, sorted)."""
    import numpy as np
    fit = fitted(release)
    h = np.floor(fit * float(release.box.cells)).astype(np.uint64)
    return np.repeat(h, release.sizes)


def points(release):
    """(x, y): the reconstructed points, the centres of the cells of `indices`."""
    return release.box.centre(indices(release))


def normalised_error(true_indices, got_indices, cells) -> float:
    """The seed's normalised error: the 1-D earth mover's distance between the two sorted
    sequences over n, in units of the unit interval (index / 4^L)."""
    import numpy as np
    a = np.sort(np.asarray(true_indices, dtype=np.float64))
    b = np.sort(np.asarray(got_indices, dtype=np.float64))
    if a.size != b.size:
        raise ZealError("the two point sets differ in size")
    return float(np.mean(np.abs(a - b)) / cells)
