"""What every stage of the SDK shares and nothing starts: the exception tree (``errors``), the expression
language (``expr``), the trace format's names (``trace_format``), the rule for cumulative hit rates
(``hitrates``) and the launchers' rank variables (``launchers``). Importing it installs no hook, loads no
library and never imports ``ma``, ``ma_runtime`` or MPI: the annotation API (``ma``), the runtime, the
analysis and the backends all stand on it."""
