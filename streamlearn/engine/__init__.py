"""Running passes: the ``Pass`` and ``Engine`` protocols, the engines, the built-in passes."""

from streamlearn.engine.accounting import PassLog, PassRecord, recording
from streamlearn.engine.dask_engine import DaskEngine
from streamlearn.engine.describe import DescribePass, Description, describe
from streamlearn.engine.evaluate import EvaluatePass, evaluate
from streamlearn.engine.local import LocalEngine, resolve_engine
from streamlearn.engine.local_cluster import local_cluster
from streamlearn.engine.passes import Engine, EngineBase, Pass, Reduction, run_chunks

__all__ = [
    "DaskEngine",
    "DescribePass",
    "Description",
    "Engine",
    "EngineBase",
    "EvaluatePass",
    "LocalEngine",
    "Pass",
    "PassLog",
    "PassRecord",
    "Reduction",
    "describe",
    "evaluate",
    "local_cluster",
    "recording",
    "resolve_engine",
    "run_chunks",
]
