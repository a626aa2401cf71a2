"""What an estimator of the mean hands back (the grid's `Estimator`, a table's
`TableEstimator`): one summary of n reports."""
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Summary:
    n: int
    mean_calibrated: float
    avg_star: Optional[float]         # None for table profiles (a window-grid notion)
    avg_star_naive: Optional[float]
    ci99: tuple           # Bernstein, holds for every n
    ci99_clt: tuple       # normal approximation with the sample variance

    def as_dict(self) -> dict:
        return {"n": self.n, "mean_calibrated": self.mean_calibrated,
                "avg_star": self.avg_star, "avg_star_naive_float64": self.avg_star_naive,
                "ci99": list(self.ci99), "ci99_clt": list(self.ci99_clt)}
