"""Workers on a Ray cluster: `RayWorkers` starts `WorkerServer`s as Ray actors, places them
(placement groups), tells them about each other and restarts them; the data path stays TCP.

Ray is optional (`pip install 'autograd-async[ray]'`): this package imports without it, and
`RayWorkers.start` says how to install it when it is missing.
"""

from .cluster import STRATEGIES, RayWorkerError, RayWorkers
from .session import RAY_MISSING, import_ray
from .spec import TlsFiles

__all__ = ["RAY_MISSING", "STRATEGIES", "RayWorkerError", "RayWorkers", "TlsFiles", "import_ray"]
