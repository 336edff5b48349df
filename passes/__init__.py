"""Graph-to-graph passes and the pass manager (see docs/design.md).

Each pass is a function Module -> Module that returns a new module and leaves its input alone.
"""
from .canonicalize import canonicalize, eliminate_common_subexpressions, fold_constants, simplify
from .fusion import fuse
from .manager import DEFAULT_PIPELINE, PipelineResult, run_pipeline
from .match_libraries import match_libraries
from .rewrite import copy_module, eliminate_dead_code

__all__ = ["canonicalize", "simplify", "fold_constants", "eliminate_common_subexpressions", "eliminate_dead_code",
           "fuse", "run_pipeline", "PipelineResult", "DEFAULT_PIPELINE",
           "copy_module", "match_libraries"]
